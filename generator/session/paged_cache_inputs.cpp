#include "session/paged_cache_inputs.h"

#include <fmt/format.h>

#include <algorithm>

#include "io/npy.h"
#include "mfagen/forward_dispatch.h"
#include "session/call_error.h"

namespace mfagen::session {
namespace {

io::NpyArray read_int32(const std::string& option, const std::string& file, const char* needed) {
  if (file.empty()) throw CallError(fmt::format("a paged call needs {} (int32 {})", option, needed));
  io::NpyArray array = io::read_npy(file);
  if (array.dtype != "<i4")
    throw CallError(fmt::format("{} {}: expected dtype <i4, found {}", option, file, array.dtype));
  return array;
}

}  // namespace

PagedCacheInputs read_paged_cache(const std::string& table_file, const std::string& lengths_file, uint64_t batch,
                                  uint64_t num_pages, uint64_t page_size) {
  const io::NpyArray table = read_int32("--block-table", table_file, "(B, max_pages)");
  const io::NpyArray lengths = read_int32("--cache-seqlens", lengths_file, "(B,)");
  if (table.shape.size() != 2 || table.shape[0] != batch || table.shape[1] == 0)
    throw CallError(fmt::format("--block-table {}: expected shape ({}, max_pages >= 1), found {}", table_file, batch,
                                io::shape_repr(table.shape)));
  if (lengths.shape != std::vector<uint64_t>{batch})
    throw CallError(fmt::format("--cache-seqlens {}: expected shape ({},), found {}", lengths_file, batch,
                                io::shape_repr(lengths.shape)));
  PagedCacheInputs in;
  in.block_table = table.values<int32_t>();
  in.cache_seqlens = lengths.values<int32_t>();
  in.max_pages = table.shape[1];
  for (int32_t n : in.cache_seqlens) in.longest = std::max<uint64_t>(in.longest, uint64_t(std::max(n, 0)));
  try {
    check_paged_cache(in.block_table.data(), in.cache_seqlens.data(), batch, in.max_pages, num_pages, page_size,
                      in.longest);
  } catch (const DispatchError& e) {
    throw CallError(fmt::format("--block-table {} / --cache-seqlens {}: {}", table_file, lengths_file, e.what()));
  }
  return in;
}

}  // namespace mfagen::session
