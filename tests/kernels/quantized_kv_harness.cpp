#include "quantized_kv_harness.h"

#include <cstring>
#include <stdexcept>

#include "device_tensor.h"
#include "plan/dispatch_info.h"
#include "quantized_kv.h"
#include "random_inputs.h"
#include "selftest/case_inputs.h"

namespace mfagen::test {

KvFormat case_kv_format(const ForwardCase& c) { return plan::kv_format(make_spec(c)); }

// fp8 codes of normal values at these scales use most of E4M3's range
// (|x| / scale up to about 4 * 24 = 96 of 448) and its subnormals.
double case_k_scale(const ForwardCase& c) { return c.kv_dtype == spec::KvDType::fp8_e4m3 ? c.kv_scale / 16 : 1; }
double case_v_scale(const ForwardCase& c) { return c.kv_dtype == spec::KvDType::fp8_e4m3 ? c.kv_scale / 24 : 1; }

CaseKv case_kv(const ForwardCase& c, uint64_t rows, uint32_t columns, uint64_t seed, double scale) {
  if (!spec::kv_quantized(c.kv_dtype))
    return {reference::random_tensor(rows * columns, seed, selftest::reference_type(c.dtype), c.kv_scale), {}};
  reference::StoredRows r =
      reference::random_stored_rows(selftest::reference_quant(c.kv_dtype), rows, columns, seed, c.kv_scale, scale);
  return {std::move(r.values), std::move(r.stored)};
}

std::vector<std::byte> case_kv_buffer(const ForwardCase& c, const CaseKv& kv, uint64_t b, uint64_t h, uint64_t s,
                                      uint32_t columns, const Strides3& st, uint64_t bytes) {
  if (kv.stored.empty()) return device_tensor(kv.values, b, h, s, columns, st, selftest::reference_type(c.dtype), bytes);
  const KvFormat format = case_kv_format(c);
  const uint64_t unit = kv_unit_bytes(format, spec::dtype_bytes(c.dtype));
  const uint64_t row_bytes = kv_row_units(format, columns) * unit;
  std::vector<std::byte> buffer(bytes, std::byte{0x5a});  // bytes no row covers stay garbage
  uint64_t row = 0;
  for (uint64_t ib = 0; ib < b; ++ib)
    for (uint64_t ih = 0; ih < h; ++ih)
      for (uint64_t is = 0; is < s; ++is, ++row) {
        const uint64_t at = (ib * st.batch + ih * st.head + is * st.row) * unit;
        if (at + row_bytes > buffer.size()) throw std::logic_error("case_kv_buffer: row past the buffer");
        std::memcpy(buffer.data() + at, kv.stored.data() + row * row_bytes, row_bytes);
      }
  return buffer;
}

reference::AttentionProblem with_kv_in(const reference::AttentionProblem& p, reference::ElementType type) {
  reference::AttentionProblem r = p;
  r.k = reference::rounded_to(std::move(r.k), type);
  r.v = reference::rounded_to(std::move(r.v), type);
  return r;
}

}  // namespace mfagen::test
