// The reports of `mfagen profile`: JSON, terminal text and the
// self-contained HTML page. Predictions are written by hand here, so these
// tests check the reports alone, not the cost model.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "profile/html_report.h"
#include "profile/profile_json.h"

namespace mfagen::profile {
namespace {

const std::string kOddName = "a<b&\"c\"";

LaunchWork launch(std::string kernel, double mmas, double exp2s) {
  LaunchWork l;
  l.kernel = std::move(kernel);
  l.grid[0] = 32, l.grid[1] = 8;
  l.threads_per_threadgroup = 128;
  l.simdgroups_per_threadgroup = 4;
  l.threadgroup_memory_bytes = 16384;
  l.registers_per_thread = 96;
  l.threadgroups = 256;
  l.threadgroups_run = 16;
  l.sampling = "16 of 256 threadgroups, extrapolated";
  l.ops[static_cast<uint32_t>(Op::mma_f16_f32)] = mmas;
  l.ops[static_cast<uint32_t>(Op::exp2)] = exp2s;
  l.ops[static_cast<uint32_t>(Op::threadgroup_barrier)] = 512;
  l.device_bytes_read = 64 << 20;
  l.device_bytes_written = 8 << 20;
  l.device_bytes_unique = 24 << 20;
  l.threadgroup_bytes_read = 128 << 20;
  l.threadgroup_bytes_written = 32 << 20;
  l.buffers.push_back({0, 8 << 20, 32 << 20, 0});
  l.buffers.push_back({3, 8 << 20, 0, 8 << 20});
  return l;
}

Prediction prediction(std::string chip, double seconds, double peak_tflops, double dram_gbs, Bound bound) {
  Prediction p;
  p.chip = std::move(chip);
  p.seconds = seconds;
  p.tflops = 1.0e9 / seconds / 1e12;
  p.utilization = p.tflops / peak_tflops;
  p.bandwidth_gbs = 24.0 * (1 << 20) / seconds / 1e9;
  p.bandwidth_utilization = p.bandwidth_gbs / dram_gbs;
  p.bound = bound;
  LaunchPrediction l;
  l.kernel = "part";
  l.seconds = seconds;
  l.matrix_seconds = seconds;
  l.bound = bound;
  l.threadgroups_per_core = 2;
  l.occupancy_limit = "threadgroup memory";
  l.simdgroups_per_core = 8;
  l.latency_hiding = 0.75;
  l.waves = 3.2;
  p.launches = {l};
  return p;
}

// Two kernels, two chips each; the second also on a chip whose roof cannot
// be recovered (zero utilizations), which must still get its chart.
std::vector<ProfiledKernel> kernels() {
  ProfiledKernel a;
  a.work.name = "fwd_f16";
  a.work.origin = "specs/fwd.json";
  a.work.shape = "B 1, Hq 8, Sq 1024, Sk 1024, D 64";
  a.work.useful_flops = 1.0e9;
  a.work.launches = {launch("fwd_f16_main", 1000000, 4096)};
  a.predictions = {prediction("M1 Max", 250e-6, 10.4, 400, Bound::matrix),
                   prediction("M3 Pro", 400e-6, 7.4, 150, Bound::device_memory)};
  ProfiledKernel b;
  b.work.name = kOddName;
  b.work.origin = "<stdin>";
  b.work.shape = "decode";
  b.work.useful_flops = 1.0e9;
  b.work.launches = {launch("partials", 800000, 8192), launch("combine", 0, 100)};
  b.predictions = {prediction("M1 Max", 500e-6, 10.4, 400, Bound::device_memory),
                   prediction("M3 Pro", 600e-6, 7.4, 150, Bound::device_memory), Prediction{}};
  b.predictions.back().chip = "A17 Pro";
  return {a, b};
}

bool is_void(const std::string& tag) {
  static const std::vector<std::string> kVoid = {"area", "base", "br",   "col",   "embed", "hr",  "img",
                                                 "input", "link", "meta", "source", "track", "wbr"};
  return std::find(kVoid.begin(), kVoid.end(), tag) != kVoid.end();
}

// A small HTML checker: doctype first, every non-void element closed in
// order (or self-closed with "/>", as SVG allows), attribute values in
// balanced double quotes, no stray '<' or '>' in text, '&' only in entities.
// Returns "" when well formed, else what went wrong and where.
std::string check_html(const std::string& html) {
  if (html.rfind("<!DOCTYPE html>", 0) != 0) return "no doctype";
  std::vector<std::string> open;
  size_t i = std::string("<!DOCTYPE html>").size();
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == ':' || c == '_'; };
  while (i < html.size()) {
    const char c = html[i];
    if (c == '>') return "stray '>' at " + std::to_string(i);
    if (c == '&') {
      size_t j = i + 1;
      while (j < html.size() && (std::isalnum(static_cast<unsigned char>(html[j])) || html[j] == '#')) ++j;
      if (j == i + 1 || j >= html.size() || html[j] != ';') return "bare '&' at " + std::to_string(i);
      i = j + 1;
      continue;
    }
    if (c != '<') {
      ++i;
      continue;
    }
    const bool closing = i + 1 < html.size() && html[i + 1] == '/';
    size_t j = i + (closing ? 2 : 1);
    const size_t name_start = j;
    while (j < html.size() && name_char(html[j])) ++j;
    const std::string tag = html.substr(name_start, j - name_start);
    if (tag.empty()) return "bad tag at " + std::to_string(i);
    if (closing) {
      if (j >= html.size() || html[j] != '>') return "bad closing tag at " + std::to_string(i);
      if (open.empty() || open.back() != tag) return "</" + tag + "> closes <" + (open.empty() ? "" : open.back()) + ">";
      open.pop_back();
      i = j + 1;
      continue;
    }
    bool self_closed = false;
    for (;;) {  // attributes
      while (j < html.size() && std::isspace(static_cast<unsigned char>(html[j]))) ++j;
      if (j >= html.size()) return "unterminated <" + tag + ">";
      if (html[j] == '>') break;
      if (html.compare(j, 2, "/>") == 0) {
        self_closed = true;
        ++j;
        break;
      }
      const size_t attr = j;
      while (j < html.size() && name_char(html[j])) ++j;
      if (j == attr) return "bad attribute in <" + tag + "> at " + std::to_string(j);
      if (html[j] != '=') continue;  // boolean attribute
      if (html[j + 1] != '"') return "unquoted attribute in <" + tag + "> at " + std::to_string(j);
      const size_t end = html.find('"', j + 2);
      if (end == std::string::npos) return "unbalanced quote in <" + tag + ">";
      if (html.substr(j + 2, end - j - 2).find_first_of("<>") != std::string::npos) return "'<' or '>' in attribute";
      j = end + 1;
    }
    i = j + 1;
    if (self_closed || is_void(tag)) continue;
    if (tag == "style") {  // raw text: skip to its end tag
      const size_t end = html.find("</style>", i);
      if (end == std::string::npos) return "unclosed <style>";
      i = end;
    }
    open.push_back(tag);
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return "";
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlReport, CheckerRejectsBrokenHtml) {
  EXPECT_NE(check_html("<html><body></html>"), "");
  EXPECT_NE(check_html("<!DOCTYPE html><p class=\"x>a</p>"), "");
  EXPECT_NE(check_html("<!DOCTYPE html><p>a<b</p>"), "");
  EXPECT_NE(check_html("<!DOCTYPE html><p>a & b</p>"), "");
  EXPECT_EQ(check_html("<!DOCTYPE html><html><svg><line x1=\"1\"/></svg><br></html>"), "");
}

TEST(HtmlReport, IsWellFormedAndSelfContained) {
  const std::string html = html_report(kernels(), "Profile <of> \"two\" & 'kernels'");
  EXPECT_EQ(check_html(html), "");
  for (const char* external : {"http://", "https://", "src=", "<link", "<script"})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  EXPECT_NE(html.find("not a measurement"), std::string::npos);
  EXPECT_NE(html.find("Profile &lt;of&gt; &quot;two&quot; &amp; &#39;kernels&#39;"), std::string::npos);
}

TEST(HtmlReport, OneRooflinePerChip) {
  const std::string html = html_report(kernels(), "t");
  EXPECT_EQ(occurrences(html, "<svg"), 3u);
  for (const char* chip : {"M1 Max", "M3 Pro", "A17 Pro"}) EXPECT_NE(html.find(chip), std::string::npos) << chip;
  // Roofs recovered from the predictions: 10.4 TFLOPS, 400 GB/s on M1 Max; none on A17 Pro.
  EXPECT_NE(html.find("DRAM 400 GB/s, peak 10.40 TFLOPS"), std::string::npos);
  EXPECT_NE(html.find("A17 Pro roof: unknown"), std::string::npos);
  EXPECT_EQ(occurrences(html, "<polyline"), 2u);
}

TEST(HtmlReport, EscapesNames) {
  const std::string html = html_report(kernels(), "t");
  EXPECT_EQ(html.find(kOddName), std::string::npos);
  EXPECT_EQ(html.find("<stdin>"), std::string::npos);
  EXPECT_NE(html.find("a&lt;b&amp;&quot;c&quot;"), std::string::npos);
}

TEST(HtmlReport, ListsNonzeroOpsOnly) {
  const std::string html = html_report(kernels(), "t");
  EXPECT_NE(html.find("<code>mma_f16_f32</code>"), std::string::npos);
  EXPECT_NE(html.find("<code>exp2</code>"), std::string::npos);
  EXPECT_EQ(html.find("<code>f32_fma</code>"), std::string::npos);
  EXPECT_NE(html.find("1,000,000"), std::string::npos);
}

TEST(HtmlReport, HandlesEmptyAndPartialInput) {
  EXPECT_EQ(check_html(html_report({}, "empty")), "");
  EXPECT_EQ(occurrences(html_report({}, "empty"), "<svg"), 0u);
  // Only the bandwidth is recoverable (zero utilization): the slanted roof alone.
  std::vector<ProfiledKernel> partial = kernels();
  partial.resize(1);
  partial[0].predictions.resize(1);
  partial[0].predictions[0].utilization = 0;
  const std::string html = html_report(partial, "partial");
  EXPECT_EQ(check_html(html), "");
  EXPECT_EQ(occurrences(html, "<polyline"), 1u);
  EXPECT_NE(text_report({}).find("not measurements"), std::string::npos);
}

TEST(HtmlReport, IsDeterministic) { EXPECT_EQ(html_report(kernels(), "t"), html_report(kernels(), "t")); }

TEST(ProfileJson, RoundTripsKeyFields) {
  const nlohmann::json j = nlohmann::json::parse(to_json(kernels()).dump());
  EXPECT_NE(j.at("model").get<std::string>().find("not a measurement"), std::string::npos);
  ASSERT_EQ(j.at("kernels").size(), 2u);
  const nlohmann::json& b = j.at("kernels").at(1);
  EXPECT_EQ(b.at("name").get<std::string>(), kOddName);
  EXPECT_EQ(b.at("launches").size(), 2u);
  const nlohmann::json& ops = b.at("launches").at(0).at("ops");
  EXPECT_EQ(ops.at("mma_f16_f32").get<int64_t>(), 800000);
  EXPECT_EQ(ops.at("exp2").get<double>(), 8192);
  EXPECT_FALSE(ops.contains("f32_fma"));
  EXPECT_FALSE(b.at("launches").at(1).at("ops").contains("mma_f16_f32"));  // zero in the combine launch
  EXPECT_EQ(b.at("launches").at(0).at("grid"), nlohmann::json::array({32, 8, 1}));
  EXPECT_EQ(b.at("launches").at(0).at("buffers").at(1).at("index").get<int>(), 3);
  EXPECT_EQ(b.at("counted_flops").get<double>(), 1024.0 * 800000);
  const nlohmann::json& p = b.at("predictions").at(0);
  EXPECT_EQ(p.at("chip").get<std::string>(), "M1 Max");
  EXPECT_DOUBLE_EQ(p.at("seconds").get<double>(), 500e-6);
  EXPECT_EQ(p.at("bound").get<std::string>(), std::string(to_string(Bound::device_memory)));
  EXPECT_FALSE(p.at("bound").get<std::string>().empty());
  EXPECT_EQ(p.at("launches").at(0).at("occupancy_limit").get<std::string>(), "threadgroup memory");
}

TEST(TextReport, HasChipRowsDisclaimerAndComparison) {
  const std::string text = text_report(kernels());
  EXPECT_NE(text.find("model"), std::string::npos);
  EXPECT_NE(text.find("not measurements"), std::string::npos);
  for (const char* chip : {"M1 Max", "M3 Pro", "A17 Pro"}) EXPECT_GE(occurrences(text, chip), 2u) << chip;
  EXPECT_NE(text.find("250 µs"), std::string::npos);
  EXPECT_NE(text.find("Side by side"), std::string::npos);
  EXPECT_NE(text.find("500 µs (2.00x)"), std::string::npos);
  EXPECT_NE(text.find(kOddName), std::string::npos);  // plain text: names as they are
}

// Metal 4 TensorOps: the matmul2d blocks count 1024 FLOPs each, the text
// report lists them (only for kernels that have them), JSON and HTML carry
// the tensor pipe's time and its bound.
TEST(TextReport, ShowsTensorOpsWhenPresent) {
  std::vector<ProfiledKernel> ks = kernels();
  ks.resize(1);
  ProfiledKernel& k = ks[0];
  k.work.launches[0].ops[static_cast<uint32_t>(Op::tensor_mma_f16)] = 2000;
  k.work.launches[0].ops[static_cast<uint32_t>(Op::tensor_mma_i8)] = 48;
  k.predictions[0].bound = Bound::tensor;
  k.predictions[0].launches[0].tensor_seconds = 123e-6;
  k.predictions[0].launches[0].bound = Bound::tensor;
  const std::string text = text_report(ks);
  EXPECT_NE(text.find("matmul2d blocks (8x8x8)  2048"), std::string::npos) << text;
  EXPECT_NE(text.find("tensor (neural accelerator)"), std::string::npos);
  EXPECT_EQ(text_report(kernels()).find("matmul2d"), std::string::npos);

  const nlohmann::json j = nlohmann::json::parse(to_json(ks).dump());
  const nlohmann::json& kj = j.at("kernels").at(0);
  EXPECT_EQ(kj.at("counted_flops").get<double>(), 1024.0 * (1000000 + 2048));
  EXPECT_EQ(kj.at("launches").at(0).at("ops").at("tensor_mma_f16").get<int64_t>(), 2000);
  const nlohmann::json& lp = kj.at("predictions").at(0).at("launches").at(0);
  EXPECT_DOUBLE_EQ(lp.at("tensor_seconds").get<double>(), 123e-6);
  EXPECT_EQ(lp.at("bound").get<std::string>(), "tensor (neural accelerator)");

  const std::string html = html_report(ks, "t");
  EXPECT_EQ(check_html(html), "");
  EXPECT_NE(html.find("<th>tensor</th>"), std::string::npos);
  EXPECT_NE(html.find("123 µs"), std::string::npos);
  EXPECT_NE(html.find("<code>tensor_mma_f16</code>"), std::string::npos);
}

TEST(TextReport, FormatsSeconds) {
  EXPECT_EQ(format_seconds(250e-6), "250 µs");
  EXPECT_EQ(format_seconds(1.234e-3), "1.23 ms");
  EXPECT_EQ(format_seconds(0.9999), "1.00 s");
  EXPECT_EQ(format_seconds(12e-9), "12.0 ns");
}

}  // namespace
}  // namespace mfagen::profile
