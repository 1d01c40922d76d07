#include "selftest/builtin_matrix.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "spec/canonical.h"
#include "spec/spec_parser.h"

namespace mfagen::selftest {
namespace {

using spec::Causal;
using spec::DType;
using spec::Kind;
using spec::MaskKind;

std::string_view short_name(DType t) {
  switch (t) {
    case DType::float16: return "fp16";
    case DType::bfloat16: return "bf16";
    case DType::float32: return "fp32";
  }
  return "?";
}

// "forward/fp16/d64/bottom_right[/suffix]"; the kernel with gqa and lse on,
// every feature off, the planner's tiles.
SelftestCase make_case(Kind kind, DType dtype, uint32_t head_dim, Causal causal, AttentionShape shape,
                       std::string_view suffix = {}) {
  SelftestCase c;
  c.name = fmt::format("{}/{}/d{}", spec::to_string(kind), short_name(dtype), head_dim);
  if (kind != Kind::cache_append) c.name += fmt::format("/{}", spec::to_string(causal));  // writes have no causal mode
  if (!suffix.empty()) c.name += fmt::format("/{}", suffix);
  c.kernel.kind = kind;
  c.kernel.dtype = dtype;
  c.kernel.head_dim = c.kernel.head_dim_v = head_dim;
  c.kernel.causal = causal;
  c.kernel.origin = {"mfagen selftest", c.name};
  c.shape = shape;
  return c;
}

// Inputs depend on the case's name only, so adding a case changes no other.
uint64_t seed_of(std::string_view name) {
  uint64_t h = 14695981039346656037ull;  // 64-bit FNV-1a
  for (char ch : name) h = (h ^ uint8_t(ch)) * 1099511628211ull;
  return h;
}

// score_mod / mask_mod expressions compiled into the case's kernel (parsed as
// a spec gives them), with the reference's plain functions of the same math.
void add_score_functions(SelftestCase& c, std::string_view score_mod, std::string_view mask_mod) {
  std::string json = fmt::format(R"({{"dtype": "{}", "head_dim": {})", spec::to_string(c.kernel.dtype),
                                 c.kernel.head_dim);
  if (!score_mod.empty()) json += fmt::format(R"(, "score_mod": "{}")", score_mod);
  if (!mask_mod.empty()) json += fmt::format(R"(, "mask_mod": "{}")", mask_mod);
  c.kernel.mods = spec::parse_spec_text(json + "}", "mfagen selftest").at(0).mods;
}

// Every feature at once, as DESIGN.md section 13 orders the score terms.
void add_every_feature(SelftestCase& c) {
  c.kernel.mask = MaskKind::additive;
  c.kernel.window = c.kernel.softcap = c.kernel.alibi = true;
  c.window_left = 20;
  c.window_right = 2;
  c.softcap = 3;
  c.scale = 0.2;
}

std::vector<SelftestCase> every_case() {
  std::vector<SelftestCase> all;
  // (B, Hq, Hkv, Sq, Sk): GQA 2, ragged lengths. Causal bottom_right gets
  // more queries than keys, so its first rows see no key (out 0, lse -inf).
  const AttentionShape wide{1, 4, 2, 40, 72}, tall{1, 4, 2, 72, 40};
  for (DType t : spec::kAllDTypes)
    for (Causal causal : spec::kAllCausals) {
      all.push_back(make_case(Kind::forward, t, 64, causal, causal == Causal::bottom_right ? tall : wide));
      all.back().quick = t == DType::float16 && causal == Causal::bottom_right;  // the Llama-style call
    }

  // Head dims: 128 (the widest of the first tile row), 80 (not a power of two).
  all.push_back(make_case(Kind::forward, DType::float16, 128, Causal::bottom_right, {1, 4, 1, 33, 65}));
  all.push_back(make_case(Kind::forward, DType::bfloat16, 128, Causal::none, {2, 2, 1, 24, 40}));
  all.push_back(make_case(Kind::forward, DType::float32, 128, Causal::top_left, {1, 2, 1, 40, 24}));
  all.push_back(make_case(Kind::forward, DType::float16, 80, Causal::bottom_right, {1, 3, 1, 30, 50}));

  // Head sharing: a kernel without GQA (Hq = Hkv), and MQA (one kv head).
  SelftestCase c = make_case(Kind::forward, DType::float16, 64, Causal::none, {1, 2, 2, 40, 40}, "no_gqa");
  c.kernel.gqa = false;
  all.push_back(c);
  all.push_back(make_case(Kind::forward, DType::bfloat16, 64, Causal::bottom_right, {2, 8, 1, 20, 36}, "mqa"));

  // Each feature alone, then all of them together.
  c = make_case(Kind::forward, DType::float16, 64, Causal::none, {2, 4, 2, 40, 72}, "bool_mask");
  c.kernel.mask = MaskKind::boolean;  // (B, 1, Sq, Sk): broadcast over heads
  c.quick = true;
  all.push_back(c);
  c = make_case(Kind::forward, DType::bfloat16, 64, Causal::bottom_right, {1, 4, 2, 40, 72}, "additive_mask");
  c.kernel.mask = MaskKind::additive;
  c.mask_per_head = true;
  all.push_back(c);
  c = make_case(Kind::forward, DType::float16, 64, Causal::none, {1, 4, 2, 40, 72}, "window");
  c.kernel.window = true;
  c.window_left = 12;
  c.window_right = 4;
  all.push_back(c);
  c = make_case(Kind::forward, DType::float32, 64, Causal::none, {1, 4, 2, 40, 72}, "softcap");
  c.kernel.softcap = true;
  c.softcap = 5;
  c.scale = 0.35;  // logits of about +-3, where the cap bends them
  all.push_back(c);
  c = make_case(Kind::forward, DType::float16, 64, Causal::bottom_right, {2, 4, 2, 40, 72}, "alibi");
  c.kernel.alibi = true;
  c.alibi_per_batch = true;
  all.push_back(c);
  c = make_case(Kind::forward, DType::float16, 64, Causal::bottom_right, {2, 4, 2, 40, 72}, "sinks");
  c.kernel.sinks = true;
  all.push_back(c);
  c = make_case(Kind::forward, DType::float16, 64, Causal::none, {1, 4, 2, 40, 72}, "no_lse");
  c.kernel.lse = false;
  all.push_back(c);
  c = make_case(Kind::forward, DType::bfloat16, 64, Causal::top_left, {2, 4, 2, 37, 53}, "every_feature");
  add_every_feature(c);
  all.push_back(c);

  // Split-K decode: partial results per key split, merged by a second launch.
  c = make_case(Kind::decode, DType::float16, 64, Causal::none, {1, 8, 2, 1, 300}, "splits3");
  c.splits = 3;
  c.quick = true;
  all.push_back(c);
  all.push_back(make_case(Kind::decode, DType::bfloat16, 128, Causal::bottom_right, {1, 4, 1, 4, 520}));
  c = make_case(Kind::decode, DType::float32, 64, Causal::none, {2, 4, 2, 16, 400}, "splits2");
  c.splits = 2;
  all.push_back(c);
  c = make_case(Kind::decode, DType::bfloat16, 64, Causal::bottom_right, {1, 8, 1, 1, 700}, "sinks");
  c.kernel.sinks = true;  // folded once, in the combine of the 3 splits
  c.splits = 3;
  all.push_back(c);

  // Quantized KV caches, dequantized inside the kernel.
  c = make_case(Kind::decode, DType::float16, 128, Causal::bottom_right, {1, 8, 2, 2, 600}, "q4_0");
  c.kernel.kv_dtype = spec::KvDType::q4_0;
  all.push_back(c);
  c = make_case(Kind::forward, DType::bfloat16, 64, Causal::bottom_right, {2, 4, 2, 40, 72}, "fp8_e4m3");
  c.kernel.kv_dtype = spec::KvDType::fp8_e4m3;
  all.push_back(c);

  // score_mod and mask_mod: a distance penalty with block-local attention
  // plus global keys (forward), and a tanh cap differentiated (backward).
  c = make_case(Kind::forward, DType::float16, 64, Causal::none, {1, 4, 2, 40, 72}, "score_mask_mod");
  add_score_functions(c, "score - 0.0625 * abs(q_idx - kv_idx)", "q_idx // 16 == kv_idx // 16 || kv_idx < 8");
  c.reference_score_mod = [](double s, uint64_t, uint64_t, uint64_t i, uint64_t j) {
    return s - 0.0625 * std::fabs(double(i) - double(j));
  };
  c.reference_mask_mod = [](uint64_t, uint64_t, uint64_t i, uint64_t j) { return i / 16 == j / 16 || j < 8; };
  all.push_back(c);
  c = make_case(Kind::backward, DType::float32, 64, Causal::bottom_right, {1, 2, 1, 30, 45}, "score_mod");
  add_score_functions(c, "tanh(score / 4.0) * 4.0", "");
  c.reference_score_mod = [](double s, uint64_t, uint64_t, uint64_t, uint64_t) { return std::tanh(s / 4.0) * 4.0; };
  all.push_back(c);

  // Serving layouts: packed sequences, a paged cache, and both (a step's
  // prefill chunks on the cache), each sequence of the case's lengths.
  c = make_case(Kind::forward, DType::float16, 64, Causal::bottom_right, {3, 4, 2, 20, 40}, "varlen");
  c.kernel.layout = spec::Layout::varlen;
  all.push_back(c);
  c = make_case(Kind::decode, DType::bfloat16, 64, Causal::bottom_right, {2, 8, 2, 2, 300}, "paged");
  c.kernel.kv_cache = spec::KvCache::paged;
  all.push_back(c);
  c = make_case(Kind::forward, DType::float16, 64, Causal::bottom_right, {2, 4, 2, 17, 50}, "varlen_paged_q8_0");
  c.kernel.layout = spec::Layout::varlen;
  c.kernel.kv_cache = spec::KvCache::paged;
  c.kernel.kv_dtype = spec::KvDType::q8_0;
  c.kernel.sinks = true;
  all.push_back(c);

  // Cache writes (kind cache_append): a step's new rows into paged and dense
  // caches, quantized on write; judged byte for byte.
  c = make_case(Kind::cache_append, DType::float16, 64, Causal::none, {3, 2, 2, 5, 0}, "paged_q8_0");
  c.kernel.kv_cache = spec::KvCache::paged;
  c.kernel.layout = spec::Layout::varlen;
  c.kernel.kv_dtype = spec::KvDType::q8_0;
  c.quick = true;
  all.push_back(c);
  c = make_case(Kind::cache_append, DType::bfloat16, 64, Causal::none, {3, 2, 2, 5, 0}, "paged_q4_0");
  c.kernel.kv_cache = spec::KvCache::paged;
  c.kernel.layout = spec::Layout::varlen;
  c.kernel.kv_dtype = spec::KvDType::q4_0;
  all.push_back(c);
  c = make_case(Kind::cache_append, DType::float16, 80, Causal::none, {3, 1, 1, 5, 0}, "dense_fp8_e4m3");
  c.kernel.kv_dtype = spec::KvDType::fp8_e4m3;
  all.push_back(c);
  all.push_back(make_case(Kind::cache_append, DType::float32, 48, Causal::none, {3, 2, 2, 5, 0}, "paged"));
  all.back().kernel.kv_cache = spec::KvCache::paged;

  // Backward: preprocess, dK/dV and dQ after the forward of the same features.
  c = make_case(Kind::backward, DType::float16, 64, Causal::none, {1, 4, 2, 40, 40});
  c.quick = true;
  all.push_back(c);
  all.push_back(make_case(Kind::backward, DType::bfloat16, 64, Causal::bottom_right, {1, 2, 2, 23, 57}));
  all.push_back(make_case(Kind::backward, DType::float32, 64, Causal::top_left, {1, 2, 1, 57, 23}));
  c = make_case(Kind::backward, DType::float16, 64, Causal::top_left, {1, 2, 1, 26, 31}, "every_feature");
  add_every_feature(c);
  c.window_left = 7;
  c.window_right = 3;
  all.push_back(c);
  c = make_case(Kind::backward, DType::float32, 64, Causal::bottom_right, {2, 4, 2, 30, 45}, "sinks");
  c.kernel.sinks = true;
  all.push_back(c);

  for (SelftestCase& each : all) {
    each.kernel.name = spec::derived_name(each.kernel);
    each.seed = seed_of(each.name);
  }
  return all;
}

}  // namespace

std::vector<SelftestCase> builtin_matrix(MatrixSize size) {
  std::vector<SelftestCase> all = every_case();
  if (size == MatrixSize::full) return all;
  std::vector<SelftestCase> quick;
  for (SelftestCase& c : all)
    if (c.quick) quick.push_back(std::move(c));
  return quick;
}

std::vector<SelftestCase> filter_cases(std::vector<SelftestCase> cases, std::string_view substring) {
  std::erase_if(cases, [&](const SelftestCase& c) { return c.name.find(substring) == std::string::npos; });
  return cases;
}

}  // namespace mfagen::selftest
