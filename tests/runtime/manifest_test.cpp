// Library::load: manifests that are missing, of another format version, not
// JSON, or with corrupted entries give errors naming the file, the kernel,
// the field and what was expected; a valid manifest's facts are loaded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "generated_manifest.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

const Json& valid() {
  static const Json m = Json::parse(test::manifest_for(R"({"kernels": [
    {"dtype": "float16", "head_dim": 128, "causal": "bottom_right"},
    {"kind": "decode", "dtype": "float16", "head_dim": 128, "causal": "bottom_right"},
    {"kind": "backward", "dtype": "bfloat16", "head_dim": 64, "mask": "bool"}]})"));
  return m;
}

std::string load_error(const std::string& text) {
  try {
    Library::load_from_memory(text);
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "loaded";
}

std::string corrupted(const std::function<void(Json&)>& edit) {
  Json m = valid();
  edit(m);
  return load_error(m.dump());
}

TEST(Manifest, LoadsTheFactsOfEveryKernel) {
  const Library library = Library::load_from_memory(valid().dump(), "/kernels");
  ASSERT_EQ(library.kernels().size(), 3u);
  const KernelEntry& decode = library.kernels()[1];
  EXPECT_EQ(decode.kind, KernelKind::decode);
  EXPECT_EQ(decode.entries, (std::vector<std::string>{decode.name, decode.name + "_combine"}));
  EXPECT_EQ(decode.info.combine_entry, decode.name + "_combine");
  EXPECT_EQ(decode.info.head_dim, 128u);
  EXPECT_EQ(decode.info.element_bytes, 2u);
  const KernelEntry& backward = library.kernels()[2];
  EXPECT_EQ(backward.dtype, ElementType::bfloat16);
  EXPECT_EQ(backward.info.mask, MaskInput::boolean);
  EXPECT_EQ(backward.entries.size(), 3u);
  EXPECT_TRUE(backward.function_constants.empty());
  EXPECT_EQ(library.directory(), "/kernels");
}

TEST(Manifest, MissingFileWrongVersionAndNotJsonAreClearErrors) {
  try {
    Library::load("/nonexistent/dir/manifest.json");
    FAIL();
  } catch (const ManifestError& e) {
    EXPECT_STREQ(e.what(), "cannot read /nonexistent/dir/manifest.json: no such file");
  }
  EXPECT_EQ(corrupted([](Json& m) { m["format"] = 2; }),
            "manifest: format 2 is not supported (this runtime reads format 1; regenerate the kernels with a matching "
            "mfagen)");
  EXPECT_EQ(corrupted([](Json& m) { m.erase("format"); }), "manifest: no \"format\" field: not an mfagen manifest");
  EXPECT_THAT(load_error("{\"format\": 1, \"kernels\": ["), HasSubstr("manifest is not valid JSON: "));
  EXPECT_EQ(load_error("[1, 2]"), "manifest: expected an object (an mfagen manifest.json), got [1,2]");
  EXPECT_EQ(corrupted([](Json& m) { m.erase("kernels"); }), "manifest: missing field \"kernels\"");
  EXPECT_EQ(corrupted([](Json& m) { m["kernels"] = 3; }), "manifest.kernels: expected an array, got 3");
}

TEST(Manifest, LoadErrorsFromAFileNameIt) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mfagen_manifest_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Json m = valid();
  m["kernels"][0]["dispatch"]["block_q"] = 0;
  std::ofstream(dir / "manifest.json") << m.dump();
  try {
    Library::load(dir / "manifest.json");
    FAIL();
  } catch (const ManifestError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "manifest.json").string() +
                  ": manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].dispatch.block_q: expected an "
                  "integer in 1..1024, got 0");
  }
  std::filesystem::remove_all(dir);
}

TEST(Manifest, FunctionConstantsAndTheirValuesReachThePlan) {
  Json m = valid();
  m["kernels"][0]["function_constants"] = Json::array({
      {{"index", 0}, {"name", "use_fast_path"}, {"type", "bool"}, {"value", true}},
      {{"index", 1}, {"name", "tile"}, {"type", "ushort"}, {"value", 48}},
      {{"index", 2}, {"name", "bias"}, {"type", "half"}, {"value", -1.5}},
      {{"index", 3}, {"name", "optional"}, {"type", "int"}}});
  const Library library = Library::load_from_memory(m.dump());
  const std::vector<FunctionConstant>& c = library.kernels()[0].function_constants;
  ASSERT_EQ(c.size(), 4u);
  EXPECT_TRUE(c[0].has_value);
  EXPECT_EQ(c[0].value_bytes, 1u);
  EXPECT_EQ(c[0].value[0], std::byte{1});
  uint16_t tile = 0, bias = 0;
  std::memcpy(&tile, c[1].value.data(), 2);
  std::memcpy(&bias, c[2].value.data(), 2);
  EXPECT_EQ(tile, 48u);
  EXPECT_EQ(bias, 0xBE00u);  // -1.5 in IEEE half
  EXPECT_FALSE(c[3].has_value);
  ForwardCall call;
  call.strides = contiguous_bhsd(call.shape, 128, 128);
  const LaunchPlan plan = Library::launch_plan(library.kernels()[0], call);
  EXPECT_EQ(plan.constants.data(), c.data());
  EXPECT_EQ(plan.constants.size(), 4u);

  m["kernels"][0]["function_constants"][1]["value"] = 70000;
  EXPECT_EQ(load_error(m.dump()),
            "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].function_constants[1].value: expected "
            "an integer in 0..65535 (ushort), got 70000");
  m["kernels"][0]["function_constants"][1]["type"] = "float4";
  EXPECT_EQ(load_error(m.dump()),
            "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].function_constants[1].type: expected a "
            "scalar MSL type (bool, char, uchar, short, ushort, int, uint, half, float), got \"float4\"");
}

struct Corruption {
  const char* what;
  std::function<void(Json&)> edit;
  const char* message;
};

TEST(Manifest, CorruptedEntriesNameTheKernelAndField) {
  const std::vector<Corruption> rows = {
      {"missing field", [](Json& m) { m["kernels"][1]["spec"].erase("head_dim"); },
       "manifest: kernel 1 (attn_decode_f16_d128_causal_br_gqa): kernels[1].spec: missing field \"head_dim\""},
      {"wrong type", [](Json& m) { m["kernels"][0]["spec"]["gqa"] = "yes"; },
       "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].spec.gqa: expected true or false, got \"yes\""},
      {"unknown dtype", [](Json& m) { m["kernels"][0]["spec"]["dtype"] = "float8"; },
       "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].spec.dtype: expected one of \"float16\", "
       "\"bfloat16\", \"float32\", got \"float8\""},
      {"negative head dim", [](Json& m) { m["kernels"][0]["spec"]["head_dim"] = -128; },
       "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].spec.head_dim: expected an integer in "
       "1..1048575, got -128"},
      {"too many threads", [](Json& m) { m["kernels"][0]["dispatch"]["threads_per_threadgroup"] = 2048; },
       "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].dispatch.threads_per_threadgroup: expected "
       "an integer in 1..1024, got 2048"},
      {"threadgroup memory over 32 KB", [](Json& m) { m["kernels"][0]["dispatch"]["threadgroup_memory_bytes"] = 40000; },
       "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].dispatch.threadgroup_memory_bytes: expected "
       "an integer in 0..32768, got 40000"},
      {"kernel not an object", [](Json& m) { m["kernels"][2] = "attn"; },
       "manifest: kernel 2: kernels[2]: expected an object, got \"attn\""},
      {"entries out of order",
       [](Json& m) { std::swap(m["kernels"][1]["entries"][0], m["kernels"][1]["entries"][1]); },
       "manifest: kernel 1 (attn_decode_f16_d128_causal_br_gqa): kernels[1].entries: expected "
       "[\"attn_decode_f16_d128_causal_br_gqa\",\"attn_decode_f16_d128_causal_br_gqa_combine\"] (the kernel "
       "functions a decode kernel launches, in order), got "
       "[\"attn_decode_f16_d128_causal_br_gqa_combine\",\"attn_decode_f16_d128_causal_br_gqa\"]"},
      {"params size of another ABI", [](Json& m) { m["kernels"][0]["params"]["bytes"] = 144; },
       "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].params.bytes: expected 136 (the "
       "AttentionParams this runtime writes for a forward kernel with these features; generator and runtime "
       "differ), got 144"},
      {"a buffer this runtime does not bind",
       [](Json& m) { m["kernels"][0]["buffers"].push_back({{"index", 6}, {"name", "mask"}, {"type", "x"}, {"access", "read"}}); },
       "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].buffers: [0 q read, 1 k read, 2 v read, "
       "3 out write, 4 lse write, 5 params read, 6 mask read] differs from the buffers this runtime binds [0 q read, "
       "1 k read, 2 v read, 3 out write, 4 lse write, 5 params read] (generator and runtime differ)"},
      {"backward without lse", [](Json& m) { m["kernels"][2]["spec"]["lse"] = false; },
       "manifest: kernel 2 (attn_bwd_bf16_d64_gqa_mask_bool): kernels[2].spec.lse: expected true (backward kernels "
       "read the forward's lse), got false"},
      {"absolute kernel file", [](Json& m) { m["kernels"][0]["file"] = "/etc/passwd"; },
       "manifest: kernel 0 (attn_fwd_f16_d128_causal_br_gqa): kernels[0].file: expected a file name relative to the "
       "manifest's folder, got \"/etc/passwd\""},
      {"duplicate names", [](Json& m) { m["kernels"].push_back(m["kernels"][0]); },
       "manifest: kernel 3 (attn_fwd_f16_d128_causal_br_gqa): a second kernel named attn_fwd_f16_d128_causal_br_gqa"},
  };
  for (const Corruption& row : rows) EXPECT_EQ(corrupted(row.edit), row.message) << row.what;
}

}  // namespace
}  // namespace mfagen
