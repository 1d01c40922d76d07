// One cache write over tensors in host memory (spec kind cache_append,
// DESIGN.md section 13): the orchestration the Python bindings (and any
// front end) share. The tensors' shapes give the call's sizes, the inputs
// are checked before anything runs (a write that would land outside a
// sequence's pages leaves the cache untouched), and the kernel writes the
// caches in place.
#pragma once

#include <cstdint>
#include <vector>

#include "mfagen/backend.h"
#include "session/host_tensor.h"
#include "session/spec_library.h"

namespace mfagen::session {

struct CacheAppendInputs {
  // New rows in the kernel's dtype, the last dimension contiguous: dense
  // (B, Hkv, S, D) at any strides (a (B, S, Hkv, D) tensor transposed), or
  // packed (T, Hkv, D) with cu_seqlens.
  HostTensor k_new, v_new;
  // The caches, C-contiguous, written in place: paged (num_pages, page_size,
  // Hkv, C) or dense (B, Hkv, cache_rows, C), where C is D (Dv) values in
  // the kernel's dtype or, quantized, a row's bytes (uint8).
  HostTensor k_cache, v_cache;
  std::vector<int32_t> cache_seqlens;  // (B,): each sequence's length before the write
  std::vector<int32_t> block_table;    // paged: (B, max_pages)
  uint64_t max_pages = 0;
  std::vector<int32_t> cu_seqlens;     // packed: B + 1 offsets into the new rows
  double k_scale = 1, v_scale = 1;     // fp8_e4m3 caches
};

// Runs the first kernel of `set` (a cache_append kernel). Throws CallError
// naming the input and what was expected before any kernel runs.
RunStats run_cache_append(const SpecLibrary& set, const CacheAppendInputs& inputs, Backend& backend);

}  // namespace mfagen::session
