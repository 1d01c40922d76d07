#include "profile/html_report.h"

#include "profile/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace mfagen::profile {

using cpu::profile::kOpCount;
using cpu::profile::kOpDescriptions;
using cpu::profile::kOpNames;

namespace {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Whole numbers with thousands separators (exact counts read best in a
// table); fractional ones (extrapolated from a sample) with 6 digits.
std::string number(double v) {
  if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) >= 1e18) return fmt::format("{:.6g}", v);
  std::string digits = fmt::format("{:.0f}", std::fabs(v)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

double flops_of(const KernelWork& w) {
  if (w.useful_flops > 0) return w.useful_flops;
  double flops = 0;  // unknown useful FLOPs: the counted ones stand in (kernel_work.h)
  for (const LaunchWork& l : w.launches) flops += counted_flops(l);
  return flops;
}

// Roofline x: FLOPs per compulsory DRAM byte; 0 when no bytes were counted.
double intensity(const KernelWork& w) {
  double bytes = 0;
  for (const LaunchWork& l : w.launches) bytes += static_cast<double>(l.device_bytes_unique);
  return bytes > 0 ? flops_of(w) / bytes : 0;
}

double total_op(const KernelWork& w, uint32_t op) {
  double sum = 0;
  for (const LaunchWork& l : w.launches) sum += l.ops[op];
  return sum;
}

const Prediction* prediction_for(const ProfiledKernel& k, const std::string& chip) {
  for (const Prediction& p : k.predictions)
    if (p.chip == chip) return &p;
  return nullptr;
}

std::vector<std::string> chips_of(const std::vector<ProfiledKernel>& kernels) {
  std::vector<std::string> chips;
  for (const ProfiledKernel& k : kernels)
    for (const Prediction& p : k.predictions)
      if (std::find(chips.begin(), chips.end(), p.chip) == chips.end()) chips.push_back(p.chip);
  return chips;
}

// ---- roofline ----

// The chip's roof, recovered from the predictions (the report takes no chip
// table): peak = tflops / utilization per kernel (FP16 and FP32 kernels have
// different peaks, so there may be several), DRAM bandwidth likewise.
struct Roof {
  std::vector<double> peaks_tflops;
  double bandwidth_gbs = 0;  // 0 = unknown
};

Roof roof_of(const std::vector<ProfiledKernel>& kernels, const std::string& chip) {
  Roof roof;
  std::vector<double> peaks;
  for (const ProfiledKernel& k : kernels) {
    const Prediction* p = prediction_for(k, chip);
    if (!p) continue;
    if (p->utilization > 0 && p->tflops > 0) peaks.push_back(p->tflops / p->utilization);
    if (p->bandwidth_utilization > 0 && p->bandwidth_gbs > 0)
      roof.bandwidth_gbs = std::max(roof.bandwidth_gbs, p->bandwidth_gbs / p->bandwidth_utilization);
  }
  std::sort(peaks.begin(), peaks.end());
  for (double peak : peaks)  // the same peak seen by several kernels, up to rounding
    if (roof.peaks_tflops.empty() || peak > roof.peaks_tflops.back() * 1.01) roof.peaks_tflops.push_back(peak);
  return roof;
}

constexpr double kWidth = 640, kHeight = 400, kLeft = 72, kRight = 24, kTop = 40, kBottom = 56;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

std::string decade_label(int k) {
  if (k >= 0 && k <= 5) return fmt::format("{:.0f}", std::pow(10.0, k));
  if (k < 0 && k >= -3) return fmt::format("{:.{}f}", std::pow(10.0, k), -k);
  return fmt::format("1e{}", k);
}

struct Axes {
  int x0 = -1, x1 = 3, y0 = -1, y1 = 2;  // decades
  double px(double x) const { return kLeft + (std::log10(x) - x0) / (x1 - x0) * (kWidth - kLeft - kRight); }
  double py(double y) const { return kHeight - kBottom - (std::log10(y) - y0) / (y1 - y0) * (kHeight - kTop - kBottom); }
};

struct Point {
  std::string name;
  double x, y;
  size_t index;  // kernel index, for its colour
};

Axes axes_for(const std::vector<Point>& points, const Roof& roof) {
  std::vector<double> xs, ys;
  for (const Point& p : points) xs.push_back(p.x), ys.push_back(p.y);
  for (double peak : roof.peaks_tflops) {
    ys.push_back(peak);
    if (roof.bandwidth_gbs > 0) xs.push_back(peak * 1000 / roof.bandwidth_gbs);  // ridge: TFLOPS / (GB/s) * 1e3
  }
  Axes a;
  if (!xs.empty()) {
    a.x0 = static_cast<int>(std::floor(std::log10(*std::min_element(xs.begin(), xs.end())) - 0.1));
    a.x1 = static_cast<int>(std::ceil(std::log10(*std::max_element(xs.begin(), xs.end())) + 0.1));
  }
  if (!ys.empty()) {
    a.y1 = static_cast<int>(std::ceil(std::log10(*std::max_element(ys.begin(), ys.end())) + 0.1));
    a.y0 = static_cast<int>(std::floor(std::log10(*std::min_element(ys.begin(), ys.end())) - 0.1));
  }
  a.x0 = std::min(a.x0, a.x1 - 2);  // at least two decades, so the slope is visible
  a.y0 = std::min(a.y0, a.y1 - 2);
  return a;
}

// min(peak, bandwidth * x) as a polyline clipped to the plot.
std::string roof_path(const Axes& a, double peak, double bandwidth_gbs) {
  const double inf = std::numeric_limits<double>::infinity();
  auto roof_y = [&](double x) { return std::min(peak > 0 ? peak : inf, bandwidth_gbs > 0 ? bandwidth_gbs * x / 1000 : inf); };
  double lo = std::pow(10.0, a.x0), hi = std::pow(10.0, a.x1);
  std::vector<double> xs;
  if (bandwidth_gbs > 0) {
    lo = std::max(lo, std::pow(10.0, a.y0) * 1000 / bandwidth_gbs);  // where the slope enters the plot
    if (peak > 0) xs.push_back(peak * 1000 / bandwidth_gbs);          // the ridge
    else hi = std::min(hi, std::pow(10.0, a.y1) * 1000 / bandwidth_gbs);  // where it leaves through the top
  }
  xs.push_back(lo), xs.push_back(hi);
  std::sort(xs.begin(), xs.end());
  std::string path;
  for (double x : xs)
    if (x >= lo && x <= hi) path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", a.px(x), a.py(roof_y(x)));
  return path;
}

std::string roofline_svg(const std::vector<ProfiledKernel>& kernels, const std::string& chip) {
  const Roof roof = roof_of(kernels, chip);
  std::vector<Point> points;
  std::vector<std::string> unplotted;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Prediction* p = prediction_for(kernels[i], chip);
    if (!p) continue;
    const double x = intensity(kernels[i].work);
    if (x > 0 && p->tflops > 0) points.push_back({kernels[i].work.name, x, p->tflops, i});
    else unplotted.push_back(kernels[i].work.name);
  }
  const Axes a = axes_for(points, roof);
  const double left = kLeft, right = kWidth - kRight, top = kTop, bottom = kHeight - kBottom;

  std::string svg = fmt::format(
      "<svg width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "role=\"img\" aria-label=\"Roofline on {2} (predicted)\">\n",
      kWidth, kHeight, escape(chip));
  std::string roof_text;
  if (roof.bandwidth_gbs > 0) roof_text += fmt::format("DRAM {:.0f} GB/s", roof.bandwidth_gbs);
  for (double peak : roof.peaks_tflops) roof_text += fmt::format("{}peak {:.2f} TFLOPS", roof_text.empty() ? "" : ", ", peak);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"24\" class=\"caption\">{} roof: {}</text>\n", left, escape(chip),
                     roof_text.empty() ? "unknown" : roof_text);
  // Decade grid and labels.
  for (int k = a.x0; k <= a.x1; ++k) {
    const double x = a.px(std::pow(10.0, k));
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" class=\"grid\"/>\n", x, top, bottom);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x, bottom + 16, decade_label(k));
  }
  for (int k = a.y0; k <= a.y1; ++k) {
    const double y = a.py(std::pow(10.0, k));
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" class=\"grid\"/>\n", left, y, right);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6, y + 4, decade_label(k));
  }
  svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"frame\"/>\n", left, top,
                     right - left, bottom - top);
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">arithmetic intensity (useful FLOPs per compulsory device "
      "byte)</text>\n",
      (left + right) / 2, kHeight - 12);
  svg += fmt::format(
      "<text x=\"16\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {:.1f})\">TFLOPS (predicted)</text>\n",
      (top + bottom) / 2, (top + bottom) / 2);
  if (roof.bandwidth_gbs > 0 || !roof.peaks_tflops.empty()) {
    std::vector<double> peaks = roof.peaks_tflops;
    if (peaks.empty()) peaks.push_back(0);  // bandwidth only: the slanted line alone
    for (double peak : peaks)
      if (std::string path = roof_path(a, peak, roof.bandwidth_gbs); !path.empty())
        svg += fmt::format("<polyline points=\"{}\" class=\"roof\"/>\n", path);
  }
  for (const Point& p : points) {
    const double x = a.px(p.x), y = a.py(p.y);
    const bool flip = x > right - 120;  // keep labels near the right edge inside the chart
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"><title>{}: {:.2f} FLOPs/byte, {:.2f} TFLOPS "
        "(predicted)</title></circle>\n",
        x, y, kColors[p.index % std::size(kColors)], escape(p.name), p.x, p.y);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{}</text>\n", flip ? x - 8 : x + 8, y - 8,
                       flip ? "end" : "start", escape(p.name));
  }
  svg += "</svg>\n";
  if (!unplotted.empty()) {
    std::string names;
    for (const std::string& n : unplotted) names += (names.empty() ? "" : ", ") + escape(n);
    svg += fmt::format("<p class=\"small\">Not plotted (no compulsory bytes or zero predicted TFLOPS): {}</p>\n", names);
  }
  return svg;
}

// ---- tables ----

std::string row(std::string_view header, const std::vector<std::string>& cells) {
  std::string html = fmt::format("<tr><th>{}</th>", header);
  for (const std::string& c : cells) html += "<td>" + c + "</td>";
  return html + "</tr>\n";
}

// Per-launch values of one kernel, joined (a call may have several launches).
template <typename F>
std::string per_launch(const KernelWork& w, F value) {
  std::string text;
  for (const LaunchWork& l : w.launches) text += (text.empty() ? "" : " / ") + value(l);
  return text.empty() ? "-" : text;
}

std::string work_table(const std::vector<ProfiledKernel>& kernels) {
  std::string html = "<table>\n<tr><th></th>";
  for (const ProfiledKernel& k : kernels) html += "<th>" + escape(k.work.name) + "</th>";
  html += "</tr>\n";
  auto add = [&](std::string_view header, auto value) {
    std::vector<std::string> cells;
    for (const ProfiledKernel& k : kernels) cells.push_back(value(k.work));
    html += row(header, cells);
  };
  // A field summed over launches, and one listed per launch.
  auto add_sum = [&](std::string_view header, auto field) {
    add(header, [&](const KernelWork& w) {
      double s = 0;
      for (const LaunchWork& l : w.launches) s += static_cast<double>(field(l));
      return number(s);
    });
  };
  auto add_each = [&](std::string_view header, auto field) {
    add(header, [&](const KernelWork& w) {
      return per_launch(w, [&](const LaunchWork& l) { return number(static_cast<double>(field(l))); });
    });
  };
  add("origin", [](const KernelWork& w) { return escape(w.origin); });
  add("shape", [](const KernelWork& w) { return escape(w.shape); });
  add("launches", [](const KernelWork& w) { return per_launch(w, [](const LaunchWork& l) { return escape(l.kernel); }); });
  add("useful FLOPs", [](const KernelWork& w) { return w.useful_flops > 0 ? number(w.useful_flops) : "unknown"; });
  add("counted FLOPs", [](const KernelWork& w) {
    double f = 0;
    for (const LaunchWork& l : w.launches) f += counted_flops(l);
    return number(std::round(f));
  });
  add("arithmetic intensity (FLOPs/byte)", [](const KernelWork& w) { return fmt::format("{:.2f}", intensity(w)); });
  for (uint32_t op = 0; op < kOpCount; ++op) {
    bool any = false;
    for (const ProfiledKernel& k : kernels) any = any || total_op(k.work, op) != 0;
    if (!any) continue;
    std::string header = "<code>" + escape(kOpNames[op]) + "</code>";
    if (kOpDescriptions[op] != kOpNames[op]) header = escape(kOpDescriptions[op]) + " " + header;
    add(header, [op](const KernelWork& w) { return number(total_op(w, op)); });
  }
  add_sum("device bytes read (requested)", [](const LaunchWork& l) { return l.device_bytes_read; });
  add_sum("device bytes written (requested)", [](const LaunchWork& l) { return l.device_bytes_written; });
  add_sum("device bytes compulsory", [](const LaunchWork& l) { return l.device_bytes_unique; });
  add_sum("threadgroup bytes read", [](const LaunchWork& l) { return l.threadgroup_bytes_read; });
  add_sum("threadgroup bytes written", [](const LaunchWork& l) { return l.threadgroup_bytes_written; });
  add("grid (threadgroups)", [](const KernelWork& w) {
    return per_launch(w, [](const LaunchWork& l) { return fmt::format("{}x{}x{}", l.grid[0], l.grid[1], l.grid[2]); });
  });
  add_each("threadgroups", [](const LaunchWork& l) { return l.threadgroups; });
  add_each("threadgroups run (sampled)", [](const LaunchWork& l) { return l.threadgroups_run; });
  add_each("threads per threadgroup", [](const LaunchWork& l) { return l.threads_per_threadgroup; });
  add_each("registers per thread (structure; 0 = unstated)", [](const LaunchWork& l) { return l.registers_per_thread; });
  add_each("threadgroup memory (bytes)", [](const LaunchWork& l) { return l.threadgroup_memory_bytes; });
  return html + "</table>\n";
}

std::string html_percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

std::string prediction_tables(const std::vector<ProfiledKernel>& kernels) {
  std::string html =
      "<table>\n<tr><th>kernel</th><th>chip</th><th>predicted time</th><th>TFLOPS</th><th>utilization</th>"
      "<th>bandwidth (GB/s)</th><th>bandwidth utilization</th><th>bound</th><th>calibration error band</th></tr>\n";
  std::string launches =
      "<table>\n<tr><th>kernel</th><th>chip</th><th>launch</th><th>time</th><th>compute</th><th>matrix</th>"
      "<th>transcendental</th><th>tensor</th><th>device memory</th><th>threadgroup memory</th><th>bound</th>"
      "<th>threadgroups/core</th><th>simdgroups/core</th><th>latency hiding</th><th>waves</th></tr>\n";
  for (const ProfiledKernel& k : kernels)
    for (const Prediction& p : k.predictions) {
      html += fmt::format(
          "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{:.1f}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>\n",
          escape(k.work.name), escape(p.chip), escape(format_seconds(p.seconds)), p.tflops, html_percent(p.utilization),
          p.bandwidth_gbs, html_percent(p.bandwidth_utilization), escape(to_string(p.bound)), escape(band_text(p.chip, p.bound)));
      for (const LaunchPrediction& l : p.launches)
        launches += fmt::format(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
            "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
            "<td class=\"num\">{}</td><td>{}</td><td class=\"num\">{} ({})</td><td class=\"num\">{:.1f}</td>"
            "<td class=\"num\">{:.2f}</td><td class=\"num\">{:.2f}</td></tr>\n",
            escape(k.work.name), escape(p.chip), escape(l.kernel), escape(format_seconds(l.seconds)),
            escape(format_seconds(l.compute_seconds)), escape(format_seconds(l.matrix_seconds)),
            escape(format_seconds(l.transcendental_seconds)), escape(format_seconds(l.tensor_seconds)),
            escape(format_seconds(l.device_memory_seconds)),
            escape(format_seconds(l.threadgroup_memory_seconds)), escape(to_string(l.bound)), l.threadgroups_per_core,
            escape(l.occupancy_limit.empty() ? "-" : l.occupancy_limit), l.simdgroups_per_core, l.latency_hiding, l.waves);
    }
  return html + "</table>\n<h3>Per launch</h3>\n" + launches + "</table>\n";
}

constexpr const char* kStyle = R"(body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
.note{border:2px solid #c60;background:#fff4e5;padding:.8em 1em;font-size:1.1em}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
svg{display:block;margin:1em 0;font-size:12px}
svg .grid{stroke:#e4e4e4}
svg .frame{fill:none;stroke:#888}
svg .roof{fill:none;stroke:#333;stroke-width:2}
svg .caption{font-weight:bold}
.small{font-size:.85em;color:#555}
)";

}  // namespace

std::string html_report(const std::vector<ProfiledKernel>& kernels, std::string_view title) {
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{0}</title>\n<style>\n{1}</style>\n"
      "</head>\n<body>\n<h1>{0}</h1>\n",
      escape(title), kStyle);
  html +=
      "<p class=\"note\"><strong>Every time in this report is a prediction of the mfagen cost model, not a measurement "
      "on an Apple GPU.</strong> The model turns the work counted on the cpu backend into a time per chip; its "
      "constants and their sources are in docs/cost_model.md.</p>\n";
  html += "<h2>Roofline per chip</h2>\n";
  for (const std::string& chip : chips_of(kernels))
    html += "<h3>" + escape(chip) + "</h3>\n" + roofline_svg(kernels, chip);
  html += "<h2>Counted work</h2>\n" + work_table(kernels);
  html += "<h2>Predictions</h2>\n" + prediction_tables(kernels);
  return html + "</body>\n</html>\n";
}

}  // namespace mfagen::profile
