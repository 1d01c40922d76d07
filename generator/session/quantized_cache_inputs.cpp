#include "session/quantized_cache_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "session/call_error.h"

namespace mfagen::session {
namespace {

constexpr std::array kQuantizedFormats{KvFormat::q8_0, KvFormat::q4_0, KvFormat::fp8_e4m3};

std::string row_rule(KvFormat format) {
  switch (format) {
    case KvFormat::q8_0: return "34 bytes per block of 32 values";
    case KvFormat::q4_0: return "18 bytes per block of 32 values";
    default: return "one byte per value";
  }
}

}  // namespace

QuantizedCache read_quantized_cache(const io::NpyArray& array, KvFormat format, const std::string& what) {
  const char* name = to_string(format);
  if (array.dtype != "|u1")
    throw CallError(fmt::format("{}: a {} cache is its raw stored rows as uint8 (|u1), the last axis a row's bytes "
                                "({}); found dtype {}",
                                what, name, row_rule(format), array.dtype));
  if (array.shape.empty())
    throw CallError(fmt::format("{}: a {} cache needs axes, found a 0-d array", what, name));
  for (uint64_t extent : array.shape)
    if (extent == 0)
      throw CallError(fmt::format("{}: shape {} has an empty dimension", what, io::shape_repr(array.shape)));
  const uint64_t row_bytes = array.shape.back();
  const uint64_t unit = kv_unit_bytes(format, 1);
  const uint64_t values_per_unit = format == KvFormat::fp8_e4m3 ? 1 : 32;
  if (row_bytes % unit != 0)
    throw CallError(fmt::format("{}: shape {}: the last axis, {} bytes, is not whole {} rows ({})", what,
                                io::shape_repr(array.shape), row_bytes, name, row_rule(format)));
  QuantizedCache cache;
  cache.shape.shape = array.shape;
  cache.shape.shape.back() = row_bytes / unit * values_per_unit;
  cache.shape.what = fmt::format("{} ({} rows of {} bytes = {} values)", what, name, row_bytes, cache.shape.shape.back());
  cache.bytes = array.data;
  return cache;
}

std::optional<KvFormat> choose_kv_format(const std::optional<std::string>& given, const io::NpyArray& k,
                                         const io::NpyArray& v, const std::vector<KvFormat>& available) {
  const bool raw = k.dtype == "|u1" || v.dtype == "|u1";
  if (given) {
    for (KvFormat f : kQuantizedFormats)
      if (*given == to_string(f)) return f;
    throw CallError(fmt::format("--kv-dtype {}: expected one of q8_0, q4_0, fp8_e4m3", *given));
  }
  if (!raw) return std::nullopt;
  std::vector<KvFormat> formats;
  for (KvFormat f : available)
    if (f != KvFormat::elements && std::find(formats.begin(), formats.end(), f) == formats.end()) formats.push_back(f);
  if (formats.size() == 1) return formats.front();
  throw CallError(formats.empty()
                      ? std::string("k or v holds raw bytes (uint8) but the spec set has no quantized kernel "
                                    "(kv_dtype q8_0, q4_0 or fp8_e4m3)")
                      : std::string("k or v holds raw bytes (uint8) and the spec set has kernels for several "
                                    "quantized formats: say which with --kv-dtype"));
}

}  // namespace mfagen::session
