#include "selftest/selftest_report.h"

#include <fmt/format.h>

#include <sstream>
#include <string_view>

namespace mfagen::selftest {
namespace {

// The longest built-in case name is 43 characters.
constexpr size_t kNameWidth = 44;

std::string_view verdict(const CaseResult& r) { return r.passed() ? "PASS" : "FAIL"; }

std::string checks_text(const CaseResult& r, std::string_view separator) {
  std::string text;
  for (const Check& c : r.checks)
    text += fmt::format("{}{} {:.1e} (bound {:.1e}){}", text.empty() ? "" : separator, c.tensor, c.max_abs_error,
                        c.bound, c.ok ? "" : " FAIL");
  return text;
}

std::string kernels_text(const CaseResult& r) {
  std::string text;
  for (const KernelRun& k : r.kernels)
    text += fmt::format("{}{} ({} launch{})", text.empty() ? "" : ", ", k.kernel, k.launches,
                        k.launches == 1 ? "" : "es");
  return text;
}

// The first lines of a long text (a detector report can run to thousands).
std::string first_lines(const std::string& text, size_t most) {
  std::istringstream in(text);
  std::string out, line;
  size_t n = 0;
  while (std::getline(in, line)) {
    if (n++ == most) return out + "...\n";
    out += line + "\n";
  }
  return out;
}

// Why a case failed, one item a line.
std::string failure_lines(const CaseResult& r) {
  std::string text;
  if (r.error_injected) text += "error injected on purpose (--inject-error): this case must fail\n";
  if (!r.error.empty()) text += first_lines(r.error, 20);
  for (const Check& c : r.checks) {
    if (c.ok) continue;
    // Some verdicts already start with the tensor's name ("dq: worst ...").
    std::string detail = c.detail.rfind(c.tensor + ":", 0) == 0 ? c.detail : c.tensor + ": " + c.detail;
    while (!detail.empty() && detail.back() == '\n') detail.pop_back();
    text += detail + "\n";
  }
  return text;
}

}  // namespace

std::string case_line(const CaseResult& r) {
  std::string line = fmt::format("{}  {:<{}} {}\n", verdict(r), r.name, kNameWidth,
                                 r.error.empty() ? checks_text(r, "  ") : "could not be judged");
  if (!r.passed()) {
    std::istringstream why(failure_lines(r));
    for (std::string l; std::getline(why, l);) line += "      " + l + "\n";
  }
  return line;
}

std::string text_summary(const SelftestRun& run) {
  return fmt::format("{} cases: {} passed, {} failed (wall time {:.1f} s)\n", run.results.size(), run.passed(),
                     run.failed(), run.wall_seconds);
}

std::string markdown_report(const SelftestRun& run, const ReportContext& context) {
  std::string md = "# mfagen selftest\n\n| | |\n|---|---|\n";
  md += fmt::format("| result | **{}**: {} of {} cases passed |\n", run.ok() ? "PASS" : "FAIL", run.passed(),
                    run.results.size());
  md += fmt::format("| mfagen | {} |\n| machine | {} |\n| backend | {} |\n| command | `{}` |\n",
                    context.mfagen_version, context.machine, context.backend, context.command);
  md += fmt::format("| wall time | {:.1f} s (generating, compiling, running and judging every case) |\n\n",
                    run.wall_seconds);
  md +=
      "Each case generates a kernel, selects and plans it through the runtime as an app would, runs it through\n"
      "the backend on seeded inputs and judges every output against a float64 reference (DESIGN.md section 3):\n"
      "max abs error at most 2x (gradients 3x) the error of the same math done naively in the input dtype,\n"
      "+1e-5; every element within atol + rtol |ref| (float32 5e-6 + 5e-5, float16 and bfloat16 5e-3 + 5e-2;\n"
      "gradients scale atol by their largest value); lse within 1e-5 (1 + |ref|); rows with no visible key\n"
      "exactly 0 with lse -inf; no NaN or Inf. \"bound\" is the first of these limits.\n\n";
  md += "| case | result | call | kernels | max error (bound) |\n|---|---|---|---|---|\n";
  for (const CaseResult& r : run.results)
    md += fmt::format("| {} | {} | {} | {} | {} |\n", r.name, r.passed() ? "pass" : "**FAIL**", r.call,
                      kernels_text(r), r.error.empty() ? checks_text(r, "; ") : "could not be judged");
  if (run.failed() == 0) return md;
  md += "\n## Failures\n";
  for (const CaseResult& r : run.results)
    if (!r.passed()) md += fmt::format("\n### {}\n\n```\n{}```\n", r.name, failure_lines(r));
  return md;
}

}  // namespace mfagen::selftest
