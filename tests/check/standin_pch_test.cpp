// The precompiled stand-in (generator/check/standin_pch.h): checks that use
// it report exactly what the per-file parse reports; an edited stand-in gets
// a fresh PCH at once, even when the edit keeps the file's size; a damaged
// cache file is rebuilt, never trusted; whatever cannot be precompiled or
// loaded falls back to the per-file parse. Each test works on its own copy
// of the stand-in and its own cache directory.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "check/check.h"
#include "check/parse_setup.h"
#include "check/pch_cache_file.h"
#include "check/rules.h"
#include "check/standin_pch.h"
#include "result_text.h"

namespace mfagen::check {
namespace {

namespace fs = std::filesystem;

const std::string kMetalPreamble = "#include <metal_stdlib>\nusing namespace metal;\n";
const std::string kClean = kMetalPreamble +
                           "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                           "  out[i] = simd_sum(out[i]) + exp2(out[i]);\n}\n";
// The header of the stand-in that <metal_stdlib> includes last.
const std::string kLastHeader = "mfagen_standin/metal_intrinsics.h";

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

TEST(StandinInclude, OnlyAFirstMetalStdlibIncludeTakesThePrecompiledStandin) {
  EXPECT_TRUE(starts_with_metal_stdlib_include("#include <metal_stdlib>\nusing namespace metal;\n"));
  EXPECT_TRUE(starts_with_metal_stdlib_include("#include <metal_stdlib>"));
  EXPECT_TRUE(starts_with_metal_stdlib_include(
      "// generated, do not edit\n/* a block\n   comment */\n  #  include <metal_stdlib>  // the stand-in\nint x;\n"));
  EXPECT_FALSE(starts_with_metal_stdlib_include(""));
  EXPECT_FALSE(starts_with_metal_stdlib_include("#define WIDTH 4\n#include <metal_stdlib>\n"));
  EXPECT_FALSE(starts_with_metal_stdlib_include("using namespace metal;\n#include <metal_stdlib>\n"));
  EXPECT_FALSE(starts_with_metal_stdlib_include("#include <metal_stdlib_extra>\n"));
  EXPECT_FALSE(starts_with_metal_stdlib_include("#include \"metal_stdlib\"\n"));
  EXPECT_FALSE(starts_with_metal_stdlib_include("#include <metal_math>\n#include <metal_stdlib>\n"));
  // The include is part of a comment continued by a backslash.
  EXPECT_FALSE(starts_with_metal_stdlib_include("// continued \\\n#include <metal_stdlib>\n"));
  // A block comment that goes on past the include's line.
  EXPECT_FALSE(starts_with_metal_stdlib_include("#include <metal_stdlib> /* a comment\n that goes on */\n"));
}

class StandinPch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mfagen_standin_pch_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    standin_ = dir_ / "standin";
    fs::copy(fs::path(MFAGEN_SOURCE_DIR) / "runtime/metal_standin/include", standin_, fs::copy_options::recursive);
    cache_ = dir_ / "cache";
    forget_precompiled_standins();  // as a new process would start
  }
  void TearDown() override {
    forget_precompiled_standins();
    fs::remove_all(dir_);
  }

  CheckOptions options() const {
    CheckOptions o;
    o.standin_dir = standin_;
    o.cache_dir = cache_;
    return o;
  }
  void append_to_standin(const std::string& header, const std::string& text) {
    std::ofstream(standin_ / header, std::ios::binary | std::ios::app) << text;
  }
  std::shared_ptr<const PrecompiledStandin> pch() const { return precompiled_standin(standin_, cache_); }

  // The check of `source` with the precompiled stand-in, after asserting
  // that the per-file parse reports exactly the same.
  CheckResult check(const std::string& source, bool expect_precompiled = true) {
    CheckResult fast = check_msl(source, "test.metal", options());
    CheckOptions per_file = options();
    per_file.precompiled_standin = false;
    CheckResult slow = check_msl(source, "test.metal", per_file);
    EXPECT_EQ(fast.used_precompiled_standin, expect_precompiled);
    EXPECT_EQ(test::result_text(fast), test::result_text(slow));
    return fast;
  }

  fs::path dir_, standin_, cache_;
};

TEST_F(StandinPch, IsBuiltOnceAndReadFromItsCacheFileByTheNextProcess) {
  std::shared_ptr<const PrecompiledStandin> built = pch();
  ASSERT_NE(built, nullptr);
  EXPECT_FALSE(built->loaded_from_cache);
  EXPECT_EQ(built->cache_file.parent_path(), cache_);
  EXPECT_TRUE(fs::exists(built->cache_file));
  EXPECT_EQ(pch(), built);  // the same, from memory
  EXPECT_TRUE(check(kClean).ok());

  forget_precompiled_standins();
  std::shared_ptr<const PrecompiledStandin> loaded = pch();
  ASSERT_NE(loaded, nullptr);
  EXPECT_TRUE(loaded->loaded_from_cache);
  EXPECT_EQ(loaded->key, built->key);
  EXPECT_TRUE(loaded->bytes == built->bytes);
  EXPECT_TRUE(check(kClean).ok());
}

TEST_F(StandinPch, AnEditedStandinGetsAFreshPchAtOnce) {
  const std::string uses_marker =
      kMetalPreamble + "kernel void k(device int* out [[buffer(0)]]) { out[0] = mfagen_marker(); }\n";
  std::shared_ptr<const PrecompiledStandin> before = pch();
  ASSERT_NE(before, nullptr);
  CheckResult r = check(uses_marker);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics[0].message.find("undeclared identifier 'mfagen_marker'"), std::string::npos)
      << r.diagnostics[0].to_string();

  append_to_standin(kLastHeader, "\ninline int mfagen_marker() { return 1; }\n");
  std::shared_ptr<const PrecompiledStandin> after = pch();
  ASSERT_NE(after, nullptr);
  EXPECT_NE(after->key, before->key);
  EXPECT_FALSE(after->loaded_from_cache);
  EXPECT_NE(after->cache_file, before->cache_file);
  EXPECT_FALSE(fs::exists(before->cache_file)) << "one cache file per stand-in directory";
  EXPECT_TRUE(fs::exists(after->cache_file));
  r = check(uses_marker);
  EXPECT_TRUE(r.ok()) << test::result_text(r);

  // An edit that keeps the file's size: clang validates a PCH's inputs by
  // size only, the key is their content.
  std::string text = read(standin_ / kLastHeader);
  text.replace(text.rfind("mfagen_marker"), 13, "mfagen_market");
  write(standin_ / kLastHeader, text);
  std::shared_ptr<const PrecompiledStandin> renamed = pch();
  ASSERT_NE(renamed, nullptr);
  EXPECT_NE(renamed->key, after->key);
  r = check(uses_marker);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics[0].message.find("'mfagen_marker'"), std::string::npos) << r.diagnostics[0].to_string();
}

TEST_F(StandinPch, ADamagedCacheFileIsRebuiltNotTrusted) {
  std::shared_ptr<const PrecompiledStandin> built = pch();
  ASSERT_NE(built, nullptr);
  const fs::path file = built->cache_file;
  const std::string good = read(file);
  const std::vector<std::pair<std::string, std::function<std::string(std::string)>>> damages = {
      {"a flipped byte in the PCH", [](std::string s) { s[s.size() / 2] ^= 0x20; return s; }},
      {"a truncated file", [](std::string s) { return s.substr(0, s.size() - 4096); }},
      {"an empty file", [](std::string) { return std::string(); }},
      {"another key's file", [&](std::string s) { return s.replace(s.find(built->key), 8, "00000000"); }},
      {"another format's file", [](std::string s) { return s.replace(s.find(" 1\n"), 3, " 0\n"); }},
  };
  for (const auto& [what, damage] : damages) {
    write(file, damage(good));
    forget_precompiled_standins();
    std::shared_ptr<const PrecompiledStandin> again = pch();
    ASSERT_NE(again, nullptr) << what;
    EXPECT_FALSE(again->loaded_from_cache) << what;
    EXPECT_EQ(again->key, built->key) << what;
    EXPECT_TRUE(read_pch_cache_file(file, built->key) == again->bytes) << what << ": the cache file is whole again";
    EXPECT_TRUE(check(kClean).ok()) << what;
  }
}

TEST_F(StandinPch, APchClangRefusesFallsBackToThePerFileParse) {
  std::shared_ptr<const PrecompiledStandin> built = pch();
  ASSERT_NE(built, nullptr);
  // A well-formed cache file whose PCH is not one.
  write(built->cache_file, pch_cache_file_text(built->key, "not a precompiled header"));
  forget_precompiled_standins();
  ASSERT_TRUE(pch()->loaded_from_cache);
  CheckResult r = check(kClean, /*expect_precompiled=*/false);
  EXPECT_TRUE(r.ok()) << test::result_text(r);
  EXPECT_FALSE(fs::exists(built->cache_file)) << "the refused file is removed";
  // The next check builds afresh.
  EXPECT_TRUE(check(kClean).ok());
  EXPECT_TRUE(read_pch_cache_file(built->cache_file, built->key).has_value());
}

TEST_F(StandinPch, AStandinThatDoesNotCompileIsParsedPerFile) {
  append_to_standin(kLastHeader, "\nthis is not C++;\n");
  EXPECT_EQ(pch(), nullptr);
  CheckResult r = check(kClean, /*expect_precompiled=*/false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].file, (standin_ / kLastHeader).string()) << test::result_text(r);
}

TEST_F(StandinPch, FilesThatDoNotStartWithTheIncludeAreParsedPerFile) {
  CheckResult r = check("#define WIDTH 4\n" + kClean, /*expect_precompiled=*/false);
  EXPECT_TRUE(r.ok()) << test::result_text(r);
  r = check("// before the include\n" + kClean);
  EXPECT_TRUE(r.ok()) << test::result_text(r);
}

// A PCH names the stand-in's headers by absolute path; the per-file parse
// names them as the directory was given.
TEST_F(StandinPch, ARelativeStandinDirectoryIsParsedPerFile) {
  standin_ = fs::relative(standin_, fs::current_path());
  ASSERT_TRUE(standin_.is_relative());
  EXPECT_TRUE(check(kClean, /*expect_precompiled=*/false).ok());
}

// Diagnostics inside the stand-in (a static_assert of a template the file
// instantiates) name the header and its line, as the per-file parse does.
TEST_F(StandinPch, ErrorsInsideTheStandinKeepTheirHeaderLocation) {
  CheckResult r = check(kMetalPreamble +
                        "struct Pair { float a, b; };\n"
                        "kernel void k(device float* out [[buffer(0)]]) {\n"
                        "  Pair p = {1.0f, 2.0f};\n  Pair s = simd_sum(p);\n  out[0] = s.a;\n}\n");
  ASSERT_FALSE(r.ok());
  bool in_header = false;
  for (const Diagnostic& d : r.diagnostics) in_header |= d.file.starts_with(standin_.string()) && d.line > 0;
  EXPECT_TRUE(in_header) << test::result_text(r);
}

TEST_F(StandinPch, ConcurrentChecksShareOneBuild) {
  std::vector<SourceFile> files;
  for (int i = 0; i < 8; ++i)
    files.push_back({fmt::format("k{}.metal", i),
                     kMetalPreamble + fmt::format("kernel void k{}(device float* out [[buffer(0)]], "
                                           "uint i [[thread_position_in_grid]]) {{\n"
                                           "  out[i] = simd_max(out[i]) * {}.0f;\n}}\n",
                                           i, i)});
  std::vector<CheckResult> fast = check_many(files, options(), 2);
  CheckOptions per_file = options();
  per_file.precompiled_standin = false;
  std::vector<CheckResult> slow = check_many(files, per_file, 2);
  ASSERT_EQ(fast.size(), files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_TRUE(fast[i].ok()) << test::result_text(fast[i]);
    EXPECT_TRUE(fast[i].used_precompiled_standin);
    EXPECT_EQ(test::result_text(fast[i]), test::result_text(slow[i]));
  }
  std::vector<fs::path> cache_files;
  for (const auto& entry : fs::directory_iterator(cache_)) cache_files.push_back(entry.path());
  ASSERT_EQ(cache_files.size(), 1u) << "one PCH, no temporary files left";
  EXPECT_EQ(cache_files[0], pch()->cache_file);
}

TEST_F(StandinPch, AnUnwritableCacheDirectoryStillParsesTheStandinOnce) {
  write(dir_ / "a-file", "");
  cache_ = dir_ / "a-file" / "cache";  // cannot be created
  std::shared_ptr<const PrecompiledStandin> built = pch();
  ASSERT_NE(built, nullptr);
  EXPECT_FALSE(fs::exists(built->cache_file));
  EXPECT_TRUE(check(kClean).ok());
}

}  // namespace
}  // namespace mfagen::check
