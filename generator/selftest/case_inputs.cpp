#include "selftest/case_inputs.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "quantized_kv.h"
#include "random_inputs.h"
#include "session/tensor_encoding.h"

namespace mfagen::selftest {
namespace {

uint64_t product(const std::array<uint64_t, 4>& extents) {
  return extents[0] * extents[1] * extents[2] * extents[3];
}

// Which mask elements let their key through: seeded noise hides about 30%,
// and whole rows i % 7 == 3 are hidden.
std::vector<uint8_t> visible_keys(const std::array<uint64_t, 4>& extents, uint64_t seed) {
  const std::vector<double> noise =
      reference::random_tensor(product(extents), seed, reference::ElementType::float32);
  std::vector<uint8_t> visible(noise.size());
  for (uint64_t i = 0; i < visible.size(); ++i) {
    const uint64_t row = (i / extents[3]) % extents[2];
    visible[i] = noise[i] > -0.5 && row % 7 != 3;
  }
  return visible;
}

void add_mask(const SelftestCase& c, CaseInputs& in) {
  const std::array<uint64_t, 4> extents = mask_extents(c);
  const std::vector<uint8_t> visible = visible_keys(extents, c.seed + 5);
  in.problem.mask_shape = extents;
  if (c.kernel.mask == spec::MaskKind::boolean) {
    in.problem.bool_mask = visible;
    in.mask.resize(visible.size());
    std::memcpy(in.mask.data(), visible.data(), visible.size());
    return;
  }
  std::vector<double> additive =
      reference::random_tensor(visible.size(), c.seed + 6, reference_type(c.kernel.dtype), 2.0);
  for (size_t i = 0; i < additive.size(); ++i)
    if (!visible[i]) additive[i] = -INFINITY;
  in.problem.additive_mask = additive;
  in.mask = session::encode_elements(additive, c.kernel.dtype);
}

void add_alibi_slopes(const SelftestCase& c, CaseInputs& in) {
  const uint64_t heads = c.shape.heads_q, batches = c.alibi_per_batch ? c.shape.batch : 1;
  std::vector<float> slopes;
  for (uint64_t b = 0; b < batches; ++b)
    for (uint64_t h = 0; h < heads; ++h)
      slopes.push_back(float(std::exp2(-8.0 * double(h + 1) / double(heads)) * double(b + 1)));
  in.problem.alibi_slopes.assign(slopes.begin(), slopes.end());
  in.alibi_slopes.resize(slopes.size() * sizeof(float));
  std::memcpy(in.alibi_slopes.data(), slopes.data(), in.alibi_slopes.size());
}

void add_sinks(const SelftestCase& c, CaseInputs& in) {
  const uint64_t heads = c.shape.heads_q;
  std::vector<float> sinks;
  for (uint64_t h = 0; h < heads; ++h)
    sinks.push_back(h + 1 == heads && heads > 1 ? -INFINITY : float(-1.0 + 5.0 * double(h) / double(heads)));
  in.problem.sinks.assign(sinks.begin(), sinks.end());
  in.sinks.resize(sinks.size() * sizeof(float));
  std::memcpy(in.sinks.data(), sinks.data(), in.sinks.size());
}

// A quantized cache: normal values stored in the format (the reference's
// quantizers), the kernel reading the stored rows and the reference the
// values they hold.
void add_quantized_kv(const SelftestCase& c, CaseInputs& in) {
  const reference::KvQuant format = reference_quant(c.kernel.kv_dtype);
  const bool fp8 = format == reference::KvQuant::fp8_e4m3;
  const uint64_t rows = c.shape.batch * c.shape.heads_kv * c.shape.seq_k;
  auto store = [&](uint32_t columns, uint64_t seed, double scale, std::vector<double>& values,
                   std::vector<std::byte>& bytes) {
    reference::StoredRows rows_of = reference::random_stored_rows(format, rows, columns, seed, 1.0, scale);
    values = std::move(rows_of.values);
    bytes.resize(rows_of.stored.size());
    std::memcpy(bytes.data(), rows_of.stored.data(), rows_of.stored.size());
  };
  store(c.kernel.head_dim, c.seed + 1, fp8 ? kFp8KScale : 1.0, in.problem.k, in.k);
  store(c.kernel.head_dim_v, c.seed + 2, fp8 ? kFp8VScale : 1.0, in.problem.v, in.v);
}

}  // namespace

reference::KvQuant reference_quant(spec::KvDType t) {
  switch (t) {
    case spec::KvDType::q8_0: return reference::KvQuant::q8_0;
    case spec::KvDType::q4_0: return reference::KvQuant::q4_0;
    case spec::KvDType::fp8_e4m3: return reference::KvQuant::fp8_e4m3;
    default: throw std::logic_error("reference_quant: k and v of this spec are not quantized");
  }
}

reference::ElementType reference_type(spec::DType type) {
  switch (type) {
    case spec::DType::float16: return reference::ElementType::float16;
    case spec::DType::bfloat16: return reference::ElementType::bfloat16;
    case spec::DType::float32: return reference::ElementType::float32;
  }
  return reference::ElementType::float32;
}

reference::CausalMode reference_causal(spec::Causal causal) {
  switch (causal) {
    case spec::Causal::none: return reference::CausalMode::none;
    case spec::Causal::top_left: return reference::CausalMode::top_left;
    case spec::Causal::bottom_right: return reference::CausalMode::bottom_right;
  }
  return reference::CausalMode::none;
}

CaseInputs make_inputs(const SelftestCase& c) {
  const reference::ElementType type = reference_type(c.kernel.dtype);
  const AttentionShape& s = c.shape;
  const uint32_t d = c.kernel.head_dim, dv = c.kernel.head_dim_v;
  CaseInputs in;
  reference::AttentionProblem& p = in.problem;
  p.batch = s.batch;
  p.heads_q = s.heads_q;
  p.heads_kv = s.heads_kv;
  p.seq_q = s.seq_q;
  p.seq_k = s.seq_k;
  p.head_dim = d;
  p.head_dim_v = dv;
  p.causal = reference_causal(c.kernel.causal);
  p.scale = c.scale;
  if (c.kernel.window) p.window = {{c.window_left, c.window_right}};
  if (c.kernel.softcap) p.softcap = c.softcap;
  p.score_mod = c.reference_score_mod;
  p.mask_mod = c.reference_mask_mod;
  p.q = reference::random_tensor(s.batch * s.heads_q * s.seq_q * d, c.seed, type);
  in.q = session::encode_elements(p.q, c.kernel.dtype);
  if (spec::kv_quantized(c.kernel.kv_dtype)) {
    add_quantized_kv(c, in);
  } else {
    p.k = reference::random_tensor(s.batch * s.heads_kv * s.seq_k * d, c.seed + 1, type);
    p.v = reference::random_tensor(s.batch * s.heads_kv * s.seq_k * dv, c.seed + 2, type);
    in.k = session::encode_elements(p.k, c.kernel.dtype);
    in.v = session::encode_elements(p.v, c.kernel.dtype);
  }
  if (c.kernel.mask != spec::MaskKind::none) add_mask(c, in);
  if (c.kernel.alibi) add_alibi_slopes(c, in);
  if (c.kernel.sinks) add_sinks(c, in);
  if (c.kernel.kind == spec::Kind::backward) {
    in.d_out = reference::random_tensor(s.batch * s.heads_q * s.seq_q * dv, c.seed + 3, type);
    in.d_out_bytes = session::encode_elements(in.d_out, c.kernel.dtype);
  }
  return in;
}

}  // namespace mfagen::selftest
