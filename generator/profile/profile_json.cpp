#include "profile/profile_json.h"

#include "profile/calibration.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

namespace mfagen::profile {

using cpu::profile::kOpCount;
using cpu::profile::kOpNames;

namespace {

constexpr const char* kModelNote =
    "mfagen cost model (a prediction from counted work, not a measurement on an Apple GPU)";

// Extrapolated counts are doubles; whole ones are written as integers so
// `jq` and diffs show 1024, not 1024.0.
nlohmann::json count_json(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15) return static_cast<int64_t>(v);
  return v;
}

double total_counted_flops(const KernelWork& work) {
  double flops = 0;
  for (const LaunchWork& l : work.launches) flops += counted_flops(l);
  return flops;
}

// Only the nonzero counts, by op name.
nlohmann::json ops_json(const OpCounts& counts) {
  nlohmann::json ops = nlohmann::json::object();
  for (uint32_t i = 0; i < kOpCount; ++i)
    if (counts[i] != 0) ops[std::string(kOpNames[i])] = count_json(counts[i]);
  return ops;
}

nlohmann::json launch_json(const LaunchWork& l) {
  nlohmann::json ops = ops_json(l.ops);
  // The executed threadgroups (per threadgroup and per simdgroup counts), in grid order.
  nlohmann::json executed = nlohmann::json::array();
  for (const ThreadgroupClass& c : l.classes)
    executed.push_back({{"represents", c.threadgroups},
                        {"ops", ops_json(c.ops)},
                        {"busiest_simdgroup_ops", ops_json(c.max_simdgroup_ops)},
                        {"device_bytes", c.device_bytes},
                        {"threadgroup_bytes", c.threadgroup_bytes}});
  nlohmann::json buffers = nlohmann::json::array();
  for (const LaunchWork::Buffer& b : l.buffers)
    buffers.push_back({{"index", b.index}, {"size", b.size}, {"bytes_read", b.bytes_read}, {"bytes_written", b.bytes_written}});
  return {{"kernel", l.kernel},
          {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
          {"threads_per_threadgroup", l.threads_per_threadgroup},
          {"simdgroups_per_threadgroup", l.simdgroups_per_threadgroup},
          {"threadgroup_memory_bytes", l.threadgroup_memory_bytes},
          {"registers_per_thread", l.registers_per_thread},
          {"mma_chains", l.mma_chains},
          {"threadgroups", l.threadgroups},
          {"threadgroups_run", l.threadgroups_run},
          {"sampling", l.sampling},
          {"ops", std::move(ops)},
          {"device_bytes_read", l.device_bytes_read},
          {"device_bytes_written", l.device_bytes_written},
          {"device_bytes_unique", l.device_bytes_unique},
          {"device_bytes_read_past_l1", l.device_bytes_read_past_l1},
          {"threadgroup_bytes_read", l.threadgroup_bytes_read},
          {"threadgroup_bytes_written", l.threadgroup_bytes_written},
          {"buffers", std::move(buffers)},
          {"executed_threadgroups", std::move(executed)}};
}

// The calibration's band for this chip and regime (calibration.h), with its text.
nlohmann::json error_band_json(const std::string& chip, Bound bound) {
  const std::optional<ErrorBand> band = error_band(chip, regime_of(bound));
  nlohmann::json j = {{"text", band_text(chip, bound)}, {"regime", std::string(regime_of(bound))}};
  if (band) {
    j["scope"] = band->this_chip ? "this chip" : "all chips";
    j["anchors"] = band->anchors;
    j["median_error"] = band->median;
    j["worst_error"] = band->worst;
  }
  return j;
}

nlohmann::json prediction_json(const Prediction& p) {
  nlohmann::json launches = nlohmann::json::array();
  for (const LaunchPrediction& l : p.launches)
    launches.push_back({{"kernel", l.kernel},
                        {"seconds", l.seconds},
                        {"compute_seconds", l.compute_seconds},
                        {"matrix_seconds", l.matrix_seconds},
                        {"transcendental_seconds", l.transcendental_seconds},
                        {"tensor_seconds", l.tensor_seconds},
                        {"device_memory_seconds", l.device_memory_seconds},
                        {"threadgroup_memory_seconds", l.threadgroup_memory_seconds},
                        {"bound", std::string(to_string(l.bound))},
                        {"threadgroups_per_core", l.threadgroups_per_core},
                        {"occupancy_limit", l.occupancy_limit},
                        {"simdgroups_per_core", l.simdgroups_per_core},
                        {"latency_hiding", l.latency_hiding},
                        {"mma_latency_hiding", l.mma_latency_hiding},
                        {"waves", l.waves}});
  return {{"chip", p.chip},
          {"seconds", p.seconds},
          {"tflops", p.tflops},
          {"utilization", p.utilization},
          {"bandwidth_gbs", p.bandwidth_gbs},
          {"bandwidth_utilization", p.bandwidth_utilization},
          {"bound", std::string(to_string(p.bound))},
          {"error_band", error_band_json(p.chip, p.bound)},
          {"launches", std::move(launches)}};
}

// ---- plain text ----

// 3 significant digits with a decimal SI prefix; small whole counts exact.
std::string format_si(double v, std::string_view unit) {
  static constexpr std::string_view kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  size_t p = 0;
  int decimals = 0;
  if (std::fabs(v) >= 10000 || v != std::floor(v)) {
    while (std::fabs(v) >= 999.5 && p + 1 < std::size(kPrefix)) v /= 1000, ++p;
    decimals = std::fabs(v) < 9.995 ? 2 : std::fabs(v) < 99.95 ? 1 : 0;
  }
  const std::string suffix = std::string(kPrefix[p]) + std::string(unit);
  return fmt::format("{:.{}f}{}{}", v, decimals, suffix.empty() ? "" : " ", suffix);
}

// Display width of UTF-8 text ("µs" is two bytes, one column).
size_t columns(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

using Row = std::vector<std::string>;

// Columns padded to their widest cell, two spaces apart, no trailing spaces.
std::string format_table(const std::vector<Row>& rows, std::string_view indent) {
  std::vector<size_t> widths;
  for (const Row& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], columns(row[c]));
  }
  std::string text;
  for (const Row& row : rows) {
    std::string line(indent);
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - columns(row[c]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + "\n";
  }
  return text;
}

double sum_ops(const LaunchWork& l, Op first, Op last) {
  double sum = 0;
  for (auto i = static_cast<uint32_t>(first); i <= static_cast<uint32_t>(last); ++i) sum += l.ops[i];
  return sum;
}

std::string launch_text(const LaunchWork& l) {
  std::string run = l.threadgroups_run >= l.threadgroups
                        ? "all run"
                        : fmt::format("{} run{}", l.threadgroups_run, l.sampling.empty() ? "" : " (" + l.sampling + ")");
  std::string text = fmt::format("  launch {}: grid {}x{}x{}, {} threadgroups, {}\n", l.kernel, l.grid[0], l.grid[1],
                                 l.grid[2], l.threadgroups, run);
  text += fmt::format("    {} threads ({} simdgroups) per threadgroup, {} threadgroup memory, {} registers/thread\n",
                      l.threads_per_threadgroup, l.simdgroups_per_threadgroup,
                      l.threadgroup_memory_bytes % 1024 == 0 ? fmt::format("{} KiB", l.threadgroup_memory_bytes / 1024)
                                                               : fmt::format("{} B", l.threadgroup_memory_bytes),
                      l.registers_per_thread ? fmt::format("{}", l.registers_per_thread) : std::string("unstated"));
  const double requested = static_cast<double>(l.device_bytes_read + l.device_bytes_written);
  std::vector<Row> rows = {{"MMAs (8x8x8)", format_si(sum_ops(l, Op::mma_f16_f32, Op::mma_f32_f32), "")}};
  // Metal 4 TensorOps, shown only when the kernel uses them.
  if (const double blocks = sum_ops(l, Op::tensor_mma_f16, Op::tensor_mma_i8); blocks != 0)
    rows.push_back({"matmul2d blocks (8x8x8)", format_si(blocks, "")});
  rows.insert(rows.end(), {
      {"FP32 ALU", format_si(sum_ops(l, Op::f32_add, Op::f32_other), "")},
      {"FP16 ALU", format_si(sum_ops(l, Op::f16_add, Op::f16_other), "")},
      {"transcendentals", format_si(sum_ops(l, Op::exp2, Op::transcendental_other), "")},
      {"device bytes", fmt::format("requested {} (read {}, written {}), compulsory {}", format_si(requested, "B"),
                                   format_si(static_cast<double>(l.device_bytes_read), "B"),
                                   format_si(static_cast<double>(l.device_bytes_written), "B"),
                                   format_si(static_cast<double>(l.device_bytes_unique), "B"))},
      {"threadgroup bytes", fmt::format("read {}, written {}", format_si(static_cast<double>(l.threadgroup_bytes_read), "B"),
                                        format_si(static_cast<double>(l.threadgroup_bytes_written), "B"))},
      {"barriers", fmt::format("threadgroup {}, simdgroup {}", format_si(l.op(Op::threadgroup_barrier), ""),
                               format_si(l.op(Op::simdgroup_barrier), ""))}});
  return text + format_table(rows, "    ");
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

std::string kernel_text(const ProfiledKernel& k) {
  const KernelWork& w = k.work;
  std::string text = w.name + "\n";
  std::vector<Row> head;
  if (!w.origin.empty()) head.push_back({"origin", w.origin});
  if (!w.shape.empty()) head.push_back({"shape", w.shape});
  head.push_back({"FLOPs", fmt::format("useful {}, counted {}", w.useful_flops > 0 ? format_si(w.useful_flops, "") : "unknown",
                                       format_si(total_counted_flops(w), ""))});
  text += format_table(head, "  ");
  for (const LaunchWork& l : w.launches) text += launch_text(l);
  // The call's device bytes against the IO model (q, k, v read once; out and lse written once).
  if (w.io_model_bytes > 0) {
    uint64_t requested = 0, compulsory = 0;
    for (const LaunchWork& l : w.launches)
      requested += l.device_bytes_read + l.device_bytes_written, compulsory += l.device_bytes_unique;
    text += fmt::format("  device bytes, all launches: requested {} ({:.2f}x the IO model), compulsory {} ({:.2f}x); "
                        "IO model {} (q, k, v read once, out and lse written once)\n",
                        format_si(double(requested), "B"), double(requested) / double(w.io_model_bytes),
                        format_si(double(compulsory), "B"), double(compulsory) / double(w.io_model_bytes),
                        format_si(double(w.io_model_bytes), "B"));
  }
  if (k.predictions.empty()) return text + "  (no predictions)\n";
  std::vector<Row> rows = {{"chip", "time", "TFLOPS", "util", "GB/s", "BW util", "bound", "error band"}};
  for (const Prediction& p : k.predictions) {
    rows.push_back({p.chip, format_seconds(p.seconds), fmt::format("{:.2f}", p.tflops), percent(p.utilization),
                    fmt::format("{:.1f}", p.bandwidth_gbs), percent(p.bandwidth_utilization), std::string(to_string(p.bound)),
                    band_text(p.chip, p.bound)});
    // Multi-launch calls (decode, backward): show where the time goes.
    if (p.launches.size() > 1)
      for (const LaunchPrediction& l : p.launches)
        rows.push_back({"  " + l.kernel, format_seconds(l.seconds), "", "", "", "", std::string(to_string(l.bound)), ""});
  }
  return text + format_table(rows, "  ");
}

// Rows = chips (first-seen order), columns = kernels, cells = time and ratio to the first kernel.
std::string comparison_text(const std::vector<ProfiledKernel>& kernels) {
  std::vector<std::string> chips;
  for (const ProfiledKernel& k : kernels)
    for (const Prediction& p : k.predictions)
      if (std::find(chips.begin(), chips.end(), p.chip) == chips.end()) chips.push_back(p.chip);
  auto find = [](const ProfiledKernel& k, const std::string& chip) -> const Prediction* {
    for (const Prediction& p : k.predictions)
      if (p.chip == chip) return &p;
    return nullptr;
  };
  std::vector<Row> rows = {{"chip"}};
  for (const ProfiledKernel& k : kernels) rows[0].push_back(k.work.name);
  rows[0].push_back("error band (of the first kernel's regime)");
  for (const std::string& chip : chips) {
    Row row = {chip};
    const Prediction* first = find(kernels.front(), chip);
    for (const ProfiledKernel& k : kernels) {
      const Prediction* p = find(k, chip);
      if (!p) {
        row.push_back("-");
        continue;
      }
      std::string cell = format_seconds(p->seconds);
      if (first && first->seconds > 0) cell += fmt::format(" ({:.2f}x)", p->seconds / first->seconds);
      row.push_back(cell);
    }
    row.push_back(first ? band_text(chip, first->bound) : "-");
    rows.push_back(row);
  }
  return fmt::format("Side by side (predicted time; ratio to {}):\n", kernels.front().work.name) + format_table(rows, "  ");
}

}  // namespace

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds == 0) return "0 s";
  static constexpr std::string_view kUnit[] = {"ns", "µs", "ms", "s"};
  double v = seconds * 1e9;
  size_t u = 0;
  while (std::fabs(v) >= 999.5 && u + 1 < std::size(kUnit)) v /= 1000, ++u;
  const int decimals = std::fabs(v) < 9.995 ? 2 : std::fabs(v) < 99.95 ? 1 : 0;
  return fmt::format("{:.{}f} {}", v, decimals, kUnit[u]);
}

nlohmann::json to_json(const std::vector<ProfiledKernel>& kernels) {
  nlohmann::json list = nlohmann::json::array();
  for (const ProfiledKernel& k : kernels) {
    nlohmann::json launches = nlohmann::json::array(), predictions = nlohmann::json::array();
    for (const LaunchWork& l : k.work.launches) launches.push_back(launch_json(l));
    for (const Prediction& p : k.predictions) predictions.push_back(prediction_json(p));
    list.push_back({{"name", k.work.name},
                    {"origin", k.work.origin},
                    {"shape", k.work.shape},
                    {"useful_flops", count_json(k.work.useful_flops)},
                    {"io_model_bytes", k.work.io_model_bytes},
                    {"counted_flops", count_json(total_counted_flops(k.work))},
                    {"launches", std::move(launches)},
                    {"predictions", std::move(predictions)}});
  }
  return {{"model", kModelNote}, {"kernels", std::move(list)}};
}

std::string text_report(const std::vector<ProfiledKernel>& kernels) {
  std::string text =
      "All times below are predictions of a model (the mfagen cost model, see docs/cost_model.md), "
      "not measurements on an Apple GPU.\n";
  for (const ProfiledKernel& k : kernels) text += '\n' + kernel_text(k);
  if (kernels.size() > 1) text += '\n' + comparison_text(kernels);
  return text;
}

}  // namespace mfagen::profile
