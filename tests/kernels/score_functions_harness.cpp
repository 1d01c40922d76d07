#include "score_functions_harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "expr/environment.h"

namespace mfagen::test {

namespace {

expr::CaptureDecl capture(std::string name, expr::CaptureType type, std::vector<std::string> extents) {
  expr::CaptureDecl c;
  c.name = std::move(name);
  c.type = type;
  for (const std::string& e : extents) {
    c.extents.push_back(expr::parse_extent(e));
    c.extent_text.push_back(c.extents.back().text());
  }
  return c;
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// Values a float32 tensor holds exactly, so the reference sees what the kernel reads.
std::vector<float> random_floats(size_t n, uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<float> out(n);
  for (float& x : out) x = float(normal(rng));
  return out;
}

// Sorted document ids of `tokens` tokens split into `documents` runs of random lengths.
std::vector<int32_t> document_ids(uint64_t tokens, int documents, std::mt19937_64& rng) {
  std::vector<uint64_t> cuts{0, tokens};
  for (int d = 1; d < documents; ++d) cuts.push_back(rng() % (tokens + 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<int32_t> ids(tokens);
  for (size_t d = 0; d + 1 < cuts.size(); ++d)
    for (uint64_t t = cuts[d]; t < cuts[d + 1]; ++t) ids[t] = int32_t(d);
  return ids;
}

int64_t bottom_right_offset(const RecipeShape& s) { return int64_t(s.seq_k) - int64_t(s.seq_q); }

}  // namespace

std::shared_ptr<const ScoreFunctionCase> relative_bias_case(const RecipeShape& shape, uint64_t seed) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "relative_bias";
  c->functions.score_mod = "score + bias[clamp(kv_idx - q_idx, -63, 63) + 63]";
  c->functions.captures = {capture("bias", expr::CaptureType::float32, {"127"})};
  auto bias = std::make_shared<std::vector<float>>(random_floats(127, seed, 0.7));
  c->captures = {bytes_of(*bias)};
  c->float_tables = {bias};
  c->score_mod = [bias](double z, uint64_t, uint64_t, uint64_t i, uint64_t j) {
    const int64_t d = std::clamp<int64_t>(int64_t(j) - int64_t(i), -63, 63);
    return z + double((*bias)[size_t(d + 63)]);
  };
  (void)shape;
  return c;
}

std::shared_ptr<const ScoreFunctionCase> document_mask_case(const RecipeShape& shape, uint64_t seed, int documents) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "document_mask";
  c->functions.mask_mod = "q_doc[b, q_idx] == kv_doc[b, kv_idx]";
  c->functions.captures = {capture("q_doc", expr::CaptureType::int32, {"B", "Sq"}),
                           capture("kv_doc", expr::CaptureType::int32, {"B", "Sk"})};
  // Self-attention over packed documents: queries are the last Sq tokens of
  // the Sk keys (bottom-right aligned), so both id tensors come from one run.
  std::mt19937_64 rng(seed);
  std::vector<int32_t> q_doc, kv_doc;
  for (uint64_t b = 0; b < shape.batch; ++b) {
    const std::vector<int32_t> ids = document_ids(shape.seq_k, documents, rng);
    kv_doc.insert(kv_doc.end(), ids.begin(), ids.end());
    for (uint64_t i = 0; i < shape.seq_q; ++i) {
      const int64_t token = int64_t(i) + bottom_right_offset(shape);
      q_doc.push_back(token >= 0 ? ids[size_t(token)] : -1);  // a query before every key: no document
    }
  }
  c->captures = {bytes_of(q_doc), bytes_of(kv_doc)};
  const uint64_t sq = shape.seq_q, sk = shape.seq_k;
  c->mask_mod = [q_doc, kv_doc, sq, sk](uint64_t b, uint64_t, uint64_t i, uint64_t j) {
    return q_doc[b * sq + i] == kv_doc[b * sk + j];
  };
  return c;
}

std::shared_ptr<const ScoreFunctionCase> aligned_documents_case(const RecipeShape& shape, uint64_t length) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "aligned_documents";
  c->functions.mask_mod = "doc[clamp(q_idx, 0, Sk - 1)] == doc[kv_idx]";  // q and k share one tensor (Sq = Sk)
  c->functions.captures = {capture("doc", expr::CaptureType::int32, {"Sk"})};
  std::vector<int32_t> doc(shape.seq_k);
  for (uint64_t t = 0; t < shape.seq_k; ++t) doc[t] = int32_t(t / length);
  c->captures = {bytes_of(doc)};
  c->mask_mod = [doc](uint64_t, uint64_t, uint64_t i, uint64_t j) { return doc[i] == doc[j]; };
  return c;
}

std::shared_ptr<const ScoreFunctionCase> prefix_lm_case(const RecipeShape& shape, uint64_t seed) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "prefix_lm";
  c->functions.mask_mod = "kv_idx < prefix[b] || q_idx >= kv_idx";
  c->functions.captures = {capture("prefix", expr::CaptureType::int32, {"B"})};
  std::mt19937_64 rng(seed);
  std::vector<int32_t> prefix(shape.batch);
  for (int32_t& p : prefix) p = int32_t(rng() % (shape.seq_k + 1));
  c->captures = {bytes_of(prefix)};
  c->mask_mod = [prefix](uint64_t b, uint64_t, uint64_t i, uint64_t j) {
    return int64_t(j) < prefix[b] || i >= j;
  };
  return c;
}

std::shared_ptr<const ScoreFunctionCase> t5_bucket_case(const RecipeShape& shape, uint64_t seed) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "t5_buckets";
  // T5's bidirectional buckets: 16 per direction, exact below distance 8,
  // logarithmic up to distance 128.
  c->functions.score_mod =
      "score + t5_bias[h, select(kv_idx > q_idx, 16, 0) + clamp(select(abs(kv_idx - q_idx) < 8, "
      "abs(kv_idx - q_idx), 8 + int(log(float(abs(kv_idx - q_idx)) / 8.0) / log(16.0) * 8.0)), 0, 15)]";
  c->functions.captures = {capture("t5_bias", expr::CaptureType::float32, {"Hq", "32"})};
  auto table = std::make_shared<std::vector<float>>(random_floats(shape.heads_q * 32, seed, 0.7));
  c->captures = {bytes_of(*table)};
  c->float_tables = {table};
  c->score_mod = [table](double z, uint64_t, uint64_t h, uint64_t i, uint64_t j) {
    const int64_t rel = int64_t(j) - int64_t(i);
    const int64_t distance = rel < 0 ? -rel : rel;
    int64_t bucket = distance;
    if (distance >= 8) {
      const float log_ratio = std::log(float(distance) / 8.0f) / std::log(16.0f);
      bucket = std::min<int64_t>(8 + int64_t(log_ratio * 8.0f), 15);
    }
    return z + double((*table)[size_t(h * 32 + (rel > 0 ? 16 : 0) + bucket)]);
  };
  return c;
}

std::shared_ptr<const ScoreFunctionCase> everything_case(const RecipeShape& shape, uint64_t seed) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "everything";
  c->functions.score_mod =
      "temperature * tanh(score / temperature) * head_scale[h] + rel[q_idx - kv_idx + Sk - 1] - "
      "0.25 * float((q_idx + 2 * kv_idx) % 3)";
  c->functions.mask_mod = "doc[b, kv_idx] == 0 || q_idx % 2 == 0 && kv_idx != 1";
  c->functions.captures = {capture("rel", expr::CaptureType::float32, {"Sq + Sk - 1"}),
                           capture("head_scale", expr::CaptureType::float32, {"Hq"}),
                           capture("doc", expr::CaptureType::int32, {"B", "Sk"})};
  c->functions.scalars = {"temperature"};
  auto rel = std::make_shared<std::vector<float>>(random_floats(shape.seq_q + shape.seq_k - 1, seed, 0.5));
  auto head_scale = std::make_shared<std::vector<float>>(random_floats(shape.heads_q, seed + 1, 0.3));
  for (float& x : *head_scale) x += 1.0f;
  std::mt19937_64 rng(seed + 2);
  std::vector<int32_t> doc(shape.batch * shape.seq_k);
  for (int32_t& d : doc) d = int32_t(rng() % 3 == 0);
  c->captures = {bytes_of(*rel), bytes_of(*head_scale), bytes_of(doc)};
  c->float_tables = {rel, head_scale, nullptr};
  c->scalars = {2.5f};
  const uint64_t sk = shape.seq_k;
  c->score_mod = [rel, head_scale, sk](double z, uint64_t, uint64_t h, uint64_t i, uint64_t j) {
    const double t = 2.5;
    return t * std::tanh(z / t) * double((*head_scale)[h]) +
           double((*rel)[size_t(int64_t(i) - int64_t(j) + int64_t(sk) - 1)]) -
           0.25 * double((i + 2 * j) % 3);
  };
  c->mask_mod = [doc, sk](uint64_t b, uint64_t, uint64_t i, uint64_t j) {
    return doc[b * sk + j] == 0 || (i % 2 == 0 && j != 1);
  };
  return c;
}

std::shared_ptr<const ScoreFunctionCase> causal_expression_case(const RecipeShape& shape) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "causal_as_mask_mod";
  c->functions.mask_mod = "kv_idx <= q_idx + Sk - Sq";
  (void)shape;
  return c;
}

std::shared_ptr<const ScoreFunctionCase> window_expression_case(const RecipeShape& shape, int left, int right) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "window_as_mask_mod";
  c->functions.mask_mod = "q_idx + Sk - Sq - kv_idx <= " + std::to_string(left) + " && kv_idx - (q_idx + Sk - Sq) <= " +
                          std::to_string(right);
  (void)shape;
  return c;
}

std::shared_ptr<const ScoreFunctionCase> softcap_expression_case(double cap) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "softcap_as_score_mod";
  c->functions.score_mod = "cap * tanh(score / cap)";
  c->functions.scalars = {"cap"};
  c->scalars = {float(cap)};
  return c;
}

std::shared_ptr<const ScoreFunctionCase> alibi_expression_case(const RecipeShape& shape,
                                                               const std::vector<double>& slopes) {
  auto c = std::make_shared<ScoreFunctionCase>();
  c->recipe = "alibi_as_score_mod";
  c->functions.score_mod = "score - slopes[h] * float(abs(q_idx + Sk - Sq - kv_idx))";
  c->functions.captures = {capture("slopes", expr::CaptureType::float32, {"Hq"})};
  c->captures = {bytes_of(std::vector<float>(slopes.begin(), slopes.end()))};
  c->float_tables = {std::make_shared<std::vector<float>>(slopes.begin(), slopes.end())};
  (void)shape;
  return c;
}

}  // namespace mfagen::test
