#include "quantized_kv_harness.h"

#include <cstring>
#include <stdexcept>

#include "plan/dispatch_info.h"
#include "random_inputs.h"

namespace mfagen::test {

bool case_quantized(const ForwardCase& c) { return spec::kv_quantized(c.kv_dtype); }

KvFormat case_kv_format(const ForwardCase& c) { return plan::kv_format(make_spec(c)); }

reference::KvQuant case_kv_quant(const ForwardCase& c) {
  switch (c.kv_dtype) {
    case spec::KvDType::q8_0: return reference::KvQuant::q8_0;
    case spec::KvDType::q4_0: return reference::KvQuant::q4_0;
    case spec::KvDType::fp8_e4m3: return reference::KvQuant::fp8_e4m3;
    default: throw std::logic_error("case_kv_quant: the case's k and v are not quantized");
  }
}

// fp8 codes of normal values at these scales use most of E4M3's range
// (|x| / scale up to about 4 * 24 = 96 of 448) and its subnormals.
double case_k_scale(const ForwardCase& c) { return c.kv_dtype == spec::KvDType::fp8_e4m3 ? c.kv_scale / 16 : 1; }
double case_v_scale(const ForwardCase& c) { return c.kv_dtype == spec::KvDType::fp8_e4m3 ? c.kv_scale / 24 : 1; }

QuantizedRows quantized_rows(const ForwardCase& c, uint64_t rows, uint32_t columns, uint64_t seed, double scale) {
  const reference::KvQuant format = case_kv_quant(c);
  const std::vector<double> normal =
      reference::random_tensor(rows * columns, seed, reference::ElementType::float32, c.kv_scale);
  QuantizedRows q;
  q.stored = reference::quantize_rows(format, normal, rows, columns, scale);
  q.values = reference::dequantize_rows(format, q.stored, rows, columns, scale);
  return q;
}

std::vector<std::byte> quantized_device_tensor(const ForwardCase& c, const std::vector<uint8_t>& stored, uint64_t b,
                                               uint64_t h, uint64_t s, uint32_t columns, const Strides3& st,
                                               uint64_t bytes) {
  const KvFormat format = case_kv_format(c);
  const uint64_t unit = kv_unit_bytes(format, spec::dtype_bytes(c.dtype));
  const uint64_t row_bytes = kv_row_units(format, columns) * unit;
  std::vector<std::byte> buffer(bytes, std::byte{0x5a});  // bytes no row covers stay garbage
  uint64_t row = 0;
  for (uint64_t ib = 0; ib < b; ++ib)
    for (uint64_t ih = 0; ih < h; ++ih)
      for (uint64_t is = 0; is < s; ++is, ++row) {
        const uint64_t at = (ib * st.batch + ih * st.head + is * st.row) * unit;
        if (at + row_bytes > buffer.size()) throw std::logic_error("quantized_device_tensor: row past the buffer");
        std::memcpy(buffer.data() + at, stored.data() + row * row_bytes, row_bytes);
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
