// Every way a spec file can be wrong, with the exact message a user sees:
// the file, the full JSON path and what was expected and found.
#include <gtest/gtest.h>

#include <string>

#include "spec/spec_parser.h"

namespace mfagen::spec {
namespace {

struct BadSpec {
  std::string json;
  std::string error;  // the full what() of the SpecError
};

void PrintTo(const BadSpec& spec, std::ostream* os) { *os << spec.json; }

// Wraps one kernel object into a set so the paths below have a "kernels[0]".
std::string in_set(const std::string& kernel) { return R"({"kernels": [)" + kernel + "]}"; }

std::string error_of(const std::string& json) {
  try {
    parse_spec_text(json, "bad.json");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string k97(97, 'k');

const BadSpec kBadSpecs[] = {
    // File structure
    {R"({"dtype": "float16", "head_dim": 12a})",
     "bad.json: invalid JSON at line 1, column 36: invalid literal; last read: '12a'; expected '}'"},
    {"{\n  \"dtype\": \"float16\",\n  \"head_dim\": ,\n}",
     "bad.json: invalid JSON at line 3, column 15: unexpected ','; expected '[', '{', or a literal"},
    {"", "bad.json: invalid JSON at line 1, column 1: unexpected end of input; expected '[', '{', "
         "or a literal"},
    {R"([{"dtype": "float16", "head_dim": 64}])",
     R"(bad.json: expected a JSON object (one kernel, or {"kernels": [...]}), found a list)"},
    {R"({"kernels": {"dtype": "float16", "head_dim": 64}})",
     "bad.json: kernels: expected a non-empty list of kernel objects, found an object"},
    {R"({"kernels": []})",
     "bad.json: kernels: expected a non-empty list of kernel objects, found an empty list"},
    {R"({"kernels": [{"dtype": "float16", "head_dim": 64}, "attn"]})",
     "bad.json: kernels[1]: expected a kernel object, found a string"},
    {R"({"kernels": [{"dtype": "float16", "head_dim": 64}], "version": 2})",
     R"(bad.json: unknown field "version"; the accepted fields are kernels, comment)"},
    {R"({"kernels": [{"dtype": "float16", "head_dim": 64, "headdim": 64}]})",
     R"(bad.json: kernels[0]: unknown field "headdim"; the accepted fields are kind, dtype, )"
     "head_dim, head_dim_v, causal, gqa, mask, window, softcap, alibi, sinks, layout, kv_cache, kv_dtype, dropout, score_mod, mask_mod, lse, accumulate, tiles, "
     "target, captures, scalars, name, comment"},
    // score_mod and mask_mod: the JSON path, then the column in the expression.
    {R"({"dtype": "float16", "head_dim": 64, "score_mod": "score + bias[q_idx]",
         "captures": {"bias": {"dtype": "float32", "shape": [16]}}})",
     "bad.json: score_mod: column 14: index 0 of bias may be out of range: it spans [0, Sq - 1] but must stay in "
     "[0, 15] for every call (bias has extent 16); clamp it, e.g. clamp(..., 0, 15)"},
    {R"({"dtype": "float16", "head_dim": 64, "score_mod": ["score", "score +"]})",
     "bad.json: score_mod[1]: column 8: expected a value, found the end of the expression"},
    {R"({"dtype": "float16", "head_dim": 64, "mask_mod": "score > 0"})",
     "bad.json: mask_mod: column 1: mask_mod cannot read score (it decides visibility before scores exist); use "
     "score_mod"},
    {R"({"dtype": "float16", "head_dim": 64, "mask_mod": "doc[q_idx] == 1"})",
     R"(bad.json: mask_mod: column 1: 'doc' is not a captured tensor of the spec ("captures"))"},
    {R"({"dtype": "float16", "head_dim": 64, "score_mod": "score && true"})",
     "bad.json: score_mod: column 1: '&&' takes bools (comparisons), found a float"},
    {R"({"dtype": "float16", "head_dim": 64, "mask_mod": "q_idx + 1"})",
     "bad.json: mask_mod: column 1: mask_mod must be a bool (a comparison), found an int"},
    {R"({"dtype": "float16", "head_dim": 64, "score_mod": ""})",
     "bad.json: score_mod: expected an expression, found an empty string"},
    {R"({"dtype": "float16", "head_dim": 64, "scalars": ["t"]})",
     R"(bad.json: "captures" and "scalars" are read by score_mod or mask_mod; this kernel has neither)"},
    {R"({"dtype": "float16", "head_dim": 64, "score_mod": "score", "captures": {"t": {"dtype": "float16", "shape": [2]}}})",
     R"(bad.json: captures.t.dtype: expected "float32" or "int32", found "float16")"},
    {R"({"dtype": "float16", "head_dim": 64, "score_mod": "score", "captures": {"t": {"dtype": "int32", "shape": ["Sq - 1"]}}})",
     R"(bad.json: captures.t.shape[0]: column 1: an extent must be at least 1 for every call; Sq - 1 may be less (in "Sq - 1"))"},
    {R"({"dtype": "float16", "head_dim": 64, "score_mod": "score", "captures": {"t": {"dtype": "int32", "shape": []}}})",
     "bad.json: captures.t.shape: expected a list of 1 to 4 extents, found an empty list"},
    {R"({"dtype": "float16", "head_dim": 64, "score_mod": "score", "captures": {"score": {"dtype": "int32", "shape": [1]}}})",
     R"(bad.json: captures.score: "score" is a name of the expression language (score, b, h, q_idx, kv_idx, B, Hq, )"
     R"(Hkv, Sq, Sk, its functions, true, false); choose another)"},
    {R"({"dtype": "float16", "head_dim": 64, "score_mod": "score", "captures": {"t": {"dtype": "int32", "shape": [1]}},
         "scalars": ["t"]})",
     R"(bad.json: scalars[0]: "t" is declared twice (captures and scalars share one namespace))"},
    {R"({"dtype": "float16", "head_dim": 64, "dtype": "float32"})",
     R"(bad.json: expected each field once, found "dtype" twice)"},
    {R"({"kernels": [{"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 32, "block_q": 64}}]})",
     R"(bad.json: kernels[0].tiles: expected each field once, found "block_q" twice)"},
    {R"({"kernels": [{"dtype": "float16", "head_dim": 64}], "comment": 1})",
     "bad.json: comment: expected a string, found a number"},
    // Required fields
    {in_set(R"({"head_dim": 64})"), R"(bad.json: kernels[0]: missing required field "dtype")"},
    {R"({"dtype": "float16"})", R"(bad.json: missing required field "head_dim")"},
    // Enums
    {in_set(R"({"kind": 1, "dtype": "float16", "head_dim": 64})"),
     "bad.json: kernels[0].kind: expected a string, found a number"},
    {in_set(R"({"kind": "fwd", "dtype": "float16", "head_dim": 64})"),
     R"(bad.json: kernels[0].kind: expected one of "forward", "decode", "backward", "cache_append", found "fwd")"},
    {in_set(R"({"dtype": "fp8", "head_dim": 64})"),
     R"(bad.json: kernels[0].dtype: expected one of "float16", "bfloat16", "float32", found "fp8")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "causal": true})"),
     "bad.json: kernels[0].causal: expected a string, found a boolean"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "causal": "bottom-right"})"),
     R"(bad.json: kernels[0].causal: expected one of "none", "top_left", "bottom_right", found "bottom-right")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "mask": "boolean"})"),
     R"(bad.json: kernels[0].mask: expected one of "none", "bool", "additive", found "boolean")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "kv_dtype": "q4_K"})"),
     R"(bad.json: kernels[0].kv_dtype: expected one of "float16", "bfloat16", "float32", "q8_0", "q4_0", "fp8_e4m3", found "q4_K")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "target": "m3"})"),
     R"(bad.json: kernels[0].target: expected one of "apple7", "apple8", "apple9", "apple10", found "m3")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "target": null})"),
     "bad.json: kernels[0].target: expected a string, found null"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "accumulate": "float16"})"),
     R"(bad.json: kernels[0].accumulate: expected "float32" (softmax statistics and O always accumulate in float32), found "float16")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "accumulate": 32})"),
     "bad.json: kernels[0].accumulate: expected a string, found a number"},
    // Integers
    {in_set(R"({"dtype": "float16", "head_dim": 0})"),
     "bad.json: kernels[0].head_dim: expected an integer in 1..576, found 0"},
    {in_set(R"({"dtype": "float16", "head_dim": 600})"),
     "bad.json: kernels[0].head_dim: expected an integer in 1..576, found 600"},
    {in_set(R"({"dtype": "float16", "head_dim": -1})"),
     "bad.json: kernels[0].head_dim: expected an integer in 1..576, found -1"},
    {in_set(R"({"dtype": "float16", "head_dim": 128.5})"),
     "bad.json: kernels[0].head_dim: expected an integer in 1..576, found 128.5"},
    {in_set(R"({"dtype": "float16", "head_dim": 128.0})"),
     "bad.json: kernels[0].head_dim: expected an integer in 1..576, found 128.0"},
    {in_set(R"({"dtype": "float16", "head_dim": "128"})"),
     "bad.json: kernels[0].head_dim: expected an integer in 1..576, found a string"},
    {in_set(R"({"dtype": "float16", "head_dim": true})"),
     "bad.json: kernels[0].head_dim: expected an integer in 1..576, found a boolean"},
    {in_set(R"({"dtype": "float16", "head_dim": 18446744073709551615})"),
     "bad.json: kernels[0].head_dim: expected an integer in 1..576, found 18446744073709551615"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "head_dim_v": 0})"),
     "bad.json: kernels[0].head_dim_v: expected an integer in 1..512, found 0"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "head_dim_v": 513})"),
     "bad.json: kernels[0].head_dim_v: expected an integer in 1..512, found 513"},
    {in_set(R"({"dtype": "float16", "head_dim": 576})"),
     "bad.json: kernels[0].head_dim_v: missing; required when head_dim > 512 (head_dim is 576, "
     "head_dim_v must be in 1..512)"},
    // Booleans
    {in_set(R"({"dtype": "float16", "head_dim": 64, "gqa": "true"})"),
     "bad.json: kernels[0].gqa: expected true or false, found a string"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "window": 1})"),
     "bad.json: kernels[0].window: expected true or false, found a number"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "softcap": null})"),
     "bad.json: kernels[0].softcap: expected true or false, found null"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "alibi": {}})"),
     "bad.json: kernels[0].alibi: expected true or false, found an object"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "lse": "no"})"),
     "bad.json: kernels[0].lse: expected true or false, found a string"},
    // Lists
    {in_set(R"({"dtype": [], "head_dim": 64})"),
     "bad.json: kernels[0].dtype: expected a value or a non-empty list of values, found an empty list"},
    {in_set(R"({"dtype": ["float16", ["float32"]], "head_dim": 64})"),
     "bad.json: kernels[0].dtype[1]: expected a single value (lists do not nest), found a list"},
    {R"({"kernels": [{"dtype": "float16", "head_dim": 64}, {"dtype": ["float16", "float32", "float32", "fp8"], "head_dim": 64}]})",
     R"(bad.json: kernels[1].dtype[3]: expected one of "float16", "bfloat16", "float32", found "fp8")"},
    // Tiles
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": "big"})"),
     R"(bad.json: kernels[0].tiles: expected an object {"block_q": n, "block_k": n, "simdgroups": n}, found a string)"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 32, "block_k": 32}})"),
     R"(bad.json: kernels[0].tiles: missing field "simdgroups"; tiles need block_q, block_k and simdgroups)"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 32, "block_k": 32, "simdgroups": 4, "block_d": 64}})"),
     R"(bad.json: kernels[0].tiles: unknown field "block_d"; the accepted fields are block_q, block_k, simdgroups, key_groups)"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 12, "block_k": 32, "simdgroups": 1}})"),
     "bad.json: kernels[0].tiles.block_q: expected a multiple of 8 in 8..1024, found 12"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 2048, "block_k": 32, "simdgroups": 1}})"),
     "bad.json: kernels[0].tiles.block_q: expected a multiple of 8 in 8..1024, found 2048"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 32, "block_k": 0, "simdgroups": 1}})"),
     "bad.json: kernels[0].tiles.block_k: expected a multiple of 8 in 8..1024, found 0"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 32, "block_k": 32.0, "simdgroups": 1}})"),
     "bad.json: kernels[0].tiles.block_k: expected a multiple of 8 in 8..1024, found 32.0"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 32, "block_k": 32, "simdgroups": 0}})"),
     "bad.json: kernels[0].tiles.simdgroups: expected an integer in 1..1024, found 0"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 32, "block_k": 32, "simdgroups": 33}})"),
     "bad.json: kernels[0].tiles.simdgroups: expected at most 32 simdgroups, found 33: 1056 threads per threadgroup "
     "exceed Metal's limit of 1024"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 16, "block_k": 32, "simdgroups": 4}})"),
     "bad.json: kernels[0].tiles.block_q: expected a multiple of 32 (8 rows for each of the 4 "
     "simdgroups), found 16"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 64, "block_k": 32, "simdgroups": 8, "key_groups": 0}})"),
     "bad.json: kernels[0].tiles.key_groups: expected an integer in 1..32, found 0"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 64, "block_k": 32, "simdgroups": 8, "key_groups": 3}})"),
     "bad.json: kernels[0].tiles.key_groups: expected a divisor of simdgroups (8), found 3"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": {"block_q": 8, "block_k": 32, "simdgroups": 8, "key_groups": 2}})"),
     "bad.json: kernels[0].tiles.block_q: expected a multiple of 32 (8 rows for each of the 4 simdgroups of a key "
     "group), found 8"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "tiles": [null, {"block_q": 32, "block_k": 32, "simdgroups": "4"}]})"),
     "bad.json: kernels[0].tiles[1].simdgroups: expected an integer in 1..1024, found a string"},
    // Names
    {in_set(R"({"dtype": "float16", "head_dim": 64, "name": "kernel"})"),
     R"(bad.json: kernels[0].name: expected a name that is not a C++ or Metal keyword or type, found "kernel")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "name": "float4"})"),
     R"(bad.json: kernels[0].name: expected a name that is not a C++ or Metal keyword or type, found "float4")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "name": "1attn"})"),
     R"(bad.json: kernels[0].name: expected a Metal identifier ([A-Za-z_][A-Za-z0-9_]*), found "1attn")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "name": "attn-64"})"),
     R"(bad.json: kernels[0].name: expected a Metal identifier ([A-Za-z_][A-Za-z0-9_]*), found "attn-64")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "name": ")" + k97 + R"("})"),
     R"(bad.json: kernels[0].name: expected a name of at most 96 characters, found "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk..." (97 characters))"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "name": "__x"})"),
     R"(bad.json: kernels[0].name: expected a name not starting with "__" (reserved), found "__x")"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "name": 7})"),
     "bad.json: kernels[0].name: expected a string, found a number"},
    {in_set(R"({"dtype": "float16", "head_dim": 64, "name": ["a", "b"]})"),
     "bad.json: kernels[0].name: expected a string (one name, not a list), found a list"},
    {in_set(R"({"dtype": ["float16", "bfloat16"], "head_dim": [64, 128], "name": "attn_mine"})"),
     "bad.json: kernels[0].name: a fixed name cannot be used with lists that expand to 4 kernels"},
    // Duplicate names
    {R"({"kernels": [{"dtype": "float16", "head_dim": 64}, {"dtype": "float16", "head_dim": 64, "head_dim_v": 64}]})",
     R"(bad.json: kernels[1]: duplicate kernel "attn_fwd_f16_d64_gqa": the same kernel is already specified at bad.json: kernels[0])"},
    {R"({"kernels": [{"dtype": "float16", "head_dim": 64, "name": "attn"}, {"dtype": "float32", "head_dim": 64, "name": "attn"}]})",
     R"(bad.json: kernels[1]: duplicate kernel name "attn": already used by a different kernel at bad.json: kernels[0])"},
    {R"({"dtype": ["float16", "float16"], "head_dim": 64})",
     R"(bad.json: duplicate kernel "attn_fwd_f16_d64_gqa": the same kernel is already specified at bad.json)"},
};

class BadSpecTest : public testing::TestWithParam<BadSpec> {};

TEST_P(BadSpecTest, FailsWithExactMessage) {
  EXPECT_EQ(error_of(GetParam().json), GetParam().error) << "spec: " << GetParam().json;
}

INSTANTIATE_TEST_SUITE_P(Spec, BadSpecTest, testing::ValuesIn(kBadSpecs));

// Hostile nesting (found by fuzz/): refused at the limit, with the limit,
// instead of growing memory with the depth.
TEST(SpecError, DeepNestingIsRefusedAtTheLimit) {
  const std::string deep = "{\"kernels\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const std::string error = error_of(deep);
  EXPECT_NE(error.find("bad.json: kernels[0]"), std::string::npos) << error.substr(0, 200);
  EXPECT_NE(error.find("expected JSON nested at most 32 levels deep"), std::string::npos) << error.substr(0, 200);
}

TEST(SpecError, PartsAndMessage) {
  SpecError with_path("a.json", "kernels[2].head_dim", "expected an integer in 1..576, found 600");
  EXPECT_STREQ(with_path.what(), "a.json: kernels[2].head_dim: expected an integer in 1..576, found 600");
  EXPECT_EQ(with_path.file(), "a.json");
  EXPECT_EQ(with_path.json_path(), "kernels[2].head_dim");
  EXPECT_EQ(with_path.message(), "expected an integer in 1..576, found 600");
  SpecError without_path("a.json", "", "cannot read the file: No such file or directory");
  EXPECT_STREQ(without_path.what(), "a.json: cannot read the file: No such file or directory");
}

}  // namespace
}  // namespace mfagen::spec
