// Every kernel of specs/ (and a backward kernel) rendered and checked: clean,
// matching the manifest `mfagen generate` writes; tampered manifests fail
// with messages naming both sides. Prints the check time per kernel and for
// the whole set. Also the formatting of generated code.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "check/check.h"
#include "check/manifest_check.h"
#include "check/rules.h"
#include "emit/manifest.h"
#include "plan/kernel_plan.h"
#include "render/render_forward.h"
#include "result_text.h"
#include "spec/spec_parser.h"

namespace mfagen::check {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct Rendered {
  std::vector<plan::KernelPlan> plans;
  std::vector<SourceFile> sources;
};

Rendered render_all(const std::vector<spec::KernelSpec>& specs) {
  Rendered out;
  for (const spec::KernelSpec& s : specs) {
    out.plans.push_back(plan::plan_kernel(s));
    out.sources.push_back({emit::kernel_file_name(out.plans.back()), render::render_forward(out.plans.back())});
  }
  return out;
}

std::vector<fs::path> spec_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(MFAGEN_SOURCE_DIR) / "specs"))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Rendered once for the whole suite: every kernel of specs/.
const Rendered& specs_kernels() {
  static const Rendered rendered = render_all(spec::load_spec_files(spec_files()));
  return rendered;
}

std::string dump(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += d.to_string() + "\n";
  return out;
}

std::vector<std::string> sources_of(const Rendered& r) {
  std::vector<std::string> out;
  for (const SourceFile& f : r.sources) out.push_back(f.text);
  return out;
}

TEST(CheckSpecs, EveryKernelOfSpecsIsCleanAndMatchesItsManifest) {
  const Rendered& r = specs_kernels();
  ASSERT_FALSE(r.sources.empty());
  // Serially first, for the per-kernel figure.
  std::vector<CheckResult> results;
  double slowest = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const SourceFile& f : r.sources) {
    results.push_back(check_msl(f.text, f.name));
    slowest = std::max(slowest, results.back().seconds);
  }
  const double serial = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < results.size(); ++i) {
    const CheckResult& c = results[i];
    EXPECT_TRUE(c.ok()) << c.file << ":\n" << dump(c.diagnostics);
    EXPECT_EQ(c.kernels.size(), r.plans[i].entries.size()) << c.file;
    if (r.plans[i].spec.kind == spec::Kind::backward) continue;  // no function is named `entry`: entries are
    ASSERT_NE(c.kernel(r.plans[i].entry), nullptr) << c.file;    // <entry>_preprocess, ... (BackwardKernelsAreClean)
    EXPECT_EQ(c.kernel(r.plans[i].entry)->threadgroup_memory_bytes, r.plans[i].threadgroup_bytes) << c.file;
  }
  const std::string manifest = emit::manifest_json(r.plans, sources_of(r));
  std::vector<Diagnostic> mismatches = check_manifest(results, manifest, "manifest.json");
  EXPECT_TRUE(mismatches.empty()) << dump(mismatches);

  const auto parallel_start = std::chrono::steady_clock::now();
  std::vector<CheckResult> parallel = check_many(r.sources);
  const double parallel_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - parallel_start).count();
  for (const CheckResult& c : parallel) EXPECT_TRUE(c.ok()) << c.file;
  std::printf("[ figures  ] %zu kernels of specs/: %.1f ms per kernel (slowest %.1f ms), %.2f s serial, %.2f s "
              "on %u threads\n",
              results.size(), serial / results.size() * 1e3, slowest * 1e3, serial, parallel_seconds,
              std::max(1u, std::thread::hardware_concurrency()));
}

// The precompiled stand-in changes nothing but the time: every kernel's
// diagnostics, signatures and function constants are those of the per-file
// parse, byte for byte.
TEST(CheckSpecs, PrecompiledStandinGivesTheSameResultsAsThePerFileParse) {
  const Rendered& r = specs_kernels();
  CheckOptions per_file;
  per_file.precompiled_standin = false;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<CheckResult> slow = check_many(r.sources, per_file);
  const auto middle = std::chrono::steady_clock::now();
  const std::vector<CheckResult> fast = check_many(r.sources);
  const auto end = std::chrono::steady_clock::now();
  ASSERT_EQ(fast.size(), slow.size());
  for (size_t i = 0; i < fast.size(); ++i) {
    EXPECT_TRUE(fast[i].used_precompiled_standin) << fast[i].file;
    EXPECT_EQ(test::result_text(fast[i]), test::result_text(slow[i]));
  }
  std::printf("[ figures  ] %zu kernels of specs/ on %u threads: %.2f s parsing the stand-in per file, %.2f s with "
              "it precompiled\n",
              fast.size(), std::max(1u, std::thread::hardware_concurrency()),
              std::chrono::duration<double>(middle - start).count(),
              std::chrono::duration<double>(end - middle).count());
}

TEST(CheckSpecs, BackwardKernelsAreClean) {
  const Rendered r = render_all(spec::parse_spec_text(
      R"({"kernels": [{"kind": "backward", "dtype": ["float16", "bfloat16"], "head_dim": 64,
                       "causal": "bottom_right", "mask": "additive", "softcap": true, "alibi": true,
                       "window": true, "sinks": [false, true]}]})",
      "backward.json"));
  std::vector<CheckResult> results = check_many(r.sources);
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].ok()) << results[i].file << ":\n" << dump(results[i].diagnostics);
    EXPECT_EQ(results[i].kernels.size(), r.plans[i].entries.size());
  }
  std::vector<Diagnostic> mismatches = check_manifest(results, emit::manifest_json(r.plans, sources_of(r)), "m.json");
  EXPECT_TRUE(mismatches.empty()) << dump(mismatches);
}

// One rendered kernel (with a mask and lse) and its manifest entry, to tamper with.
class TamperedManifest : public ::testing::Test {
 protected:
  void SetUp() override {
    rendered_ = render_all(spec::parse_spec_text(
        R"({"dtype": "float16", "head_dim": 64, "causal": "bottom_right", "mask": "bool"})", "one.json"));
    results_ = check_many(rendered_.sources);
    ASSERT_TRUE(results_[0].ok()) << dump(results_[0].diagnostics);
    manifest_ = Json::parse(emit::manifest_json(rendered_.plans, sources_of(rendered_)));
    name_ = rendered_.plans[0].entry;
    ASSERT_TRUE(check_manifest(results_, manifest_.dump(), "manifest.json").empty());
  }

  Json& kernel() { return manifest_["kernels"][0]; }
  Json& buffer(const std::string& name) {
    for (Json& b : kernel()["buffers"])
      if (b["name"] == name) return b;
    throw std::runtime_error("no buffer " + name);
  }

  // The mismatches; each must be in the kernel's file, with the manifest rule.
  std::string mismatches() {
    std::vector<Diagnostic> found = check_manifest(results_, manifest_.dump(), "manifest.json");
    for (const Diagnostic& d : found) {
      EXPECT_EQ(d.rule, rules::kManifest);
      EXPECT_EQ(d.file, rendered_.sources[0].name);
    }
    return dump(found);
  }

  Rendered rendered_;
  std::vector<CheckResult> results_;
  Json manifest_;
  std::string name_;
};

TEST_F(TamperedManifest, WrongBufferIndex) {
  buffer("out")["index"] = 12;
  std::string found = mismatches();
  EXPECT_NE(found.find("the manifest lists buffer 12 'out' (device half*) but no kernel of " + name_ +
                       ".metal has a [[buffer(12)]] parameter"),
            std::string::npos)
      << found;
  EXPECT_NE(found.find("kernel '" + name_ + "' has [[buffer(3)]] 'out' (device half*) but the manifest lists no "
                       "buffer 3"),
            std::string::npos)
      << found;
}

TEST_F(TamperedManifest, MissingBuffer) {
  Json kept = Json::array();
  for (const Json& b : kernel()["buffers"])
    if (b["name"] != "mask") kept.push_back(b);
  kernel()["buffers"] = kept;
  std::string found = mismatches();
  EXPECT_NE(found.find("has [[buffer(6)]] 'mask' (device const bool*) but the manifest lists no buffer 6"),
            std::string::npos)
      << found;
}

TEST_F(TamperedManifest, WrongBufferType) {
  buffer("lse")["type"] = "device half*";
  std::string found = mismatches();
  EXPECT_NE(found.find("buffer 4: the manifest says 'lse' (device half*) but kernel '" + name_ +
                       "' declares 'lse' (device float*)"),
            std::string::npos)
      << found;
}

TEST_F(TamperedManifest, WrongAccess) {
  buffer("q")["access"] = "write";
  std::string found = mismatches();
  EXPECT_NE(found.find("buffer 0 'q': the manifest says access 'write' but the kernels only read it"),
            std::string::npos)
      << found;
}

TEST_F(TamperedManifest, ExtraFunctionConstant) {
  kernel()["function_constants"].push_back({{"index", 0}, {"name", "has_mask"}, {"type", "bool"}});
  std::string found = mismatches();
  EXPECT_NE(found.find("the manifest lists function constant 0 'has_mask' (bool) but " + name_ +
                       ".metal declares no [[function_constant(0)]]"),
            std::string::npos)
      << found;
}

TEST_F(TamperedManifest, MissingFunctionConstant) {
  // The source declares a constant the manifest does not list.
  SourceFile& f = rendered_.sources[0];
  f.text.insert(f.text.find("struct AttentionParams"), "constant bool use_bias [[function_constant(2)]];\n");
  results_ = check_many(rendered_.sources);
  ASSERT_TRUE(results_[0].ok()) << dump(results_[0].diagnostics);
  std::string found = mismatches();
  EXPECT_NE(found.find("declares function constant 2 'use_bias' (bool) but the manifest lists no function "
                       "constant 2"),
            std::string::npos)
      << found;
}

TEST_F(TamperedManifest, ThreadgroupMemory) {
  kernel()["dispatch"]["threadgroup_memory_bytes"] = 1;
  std::string found = mismatches();
  EXPECT_NE(found.find("threadgroup memory: the manifest says 1 bytes but kernel '" + name_ + "' declares " +
                       std::to_string(rendered_.plans[0].threadgroup_bytes) + " bytes"),
            std::string::npos)
      << found;
}

TEST_F(TamperedManifest, WrongEntryPoint) {
  // "entries" lists the file's kernel functions (backward files: three, none named "name").
  if (kernel().contains("entries"))
    kernel()["entries"][0] = "attn_renamed";
  else
    kernel()["name"] = "attn_renamed";
  std::string found = mismatches();
  EXPECT_NE(found.find("the manifest names entry point 'attn_renamed' but " + name_ +
                       ".metal defines no kernel of that name (it defines " + name_ + ")"),
            std::string::npos)
      << found;
}

// Generated code is formatted consistently: rendering is deterministic,
// every file ends with a newline, no tabs, lines of at most 120 columns (the
// header's one-line canonical spec excepted: it is data, kept on one line).
std::string formatting_problems(bool trailing_whitespace) {
  const Rendered& r = specs_kernels();
  std::set<std::string> problems;
  for (size_t i = 0; i < r.sources.size(); ++i) {
    const std::string& text = r.sources[i].text;
    if (text != render::render_forward(r.plans[i])) problems.insert(r.sources[i].name + ": renders differently twice");
    if (text.empty() || text.back() != '\n') problems.insert(r.sources[i].name + ": no final newline");
    std::istringstream lines(text);
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      std::string where = r.sources[i].name + ":" + std::to_string(n);
      if (trailing_whitespace) {
        if (!line.empty() && line.back() == ' ') problems.insert(where + ": trailing whitespace");
        continue;
      }
      if (line.find('\t') != std::string::npos) problems.insert(where + ": tab");
      if (line.size() > 120 && !line.starts_with("// Spec: {")) problems.insert(where + ": longer than 120 columns");
    }
  }
  std::string all;
  for (const std::string& p : problems) all += p + "\n";
  return all;
}

TEST(CheckFormatting, RenderedKernelsAreStableAndTidy) {
  std::string problems = formatting_problems(false);
  EXPECT_TRUE(problems.empty()) << problems.substr(0, 4000);
}

// Disabled: templates/attention_forward.metal.mustache line 11 renders
// "//                  " (trailing blanks) for kernels with no visibility
// rule (no causal, window or mask). Enable once the template is fixed.
TEST(CheckFormatting, RenderedKernelsHaveNoTrailingWhitespace) {
  std::string problems = formatting_problems(true);
  EXPECT_TRUE(problems.empty()) << problems.substr(0, 4000);
}

}  // namespace
}  // namespace mfagen::check
