// `mfagen explain`: why a kernel looks the way it does and what it costs.
// Shows the planner's decisions (tiles, threads, K/V passes, memory and
// register budgets) next to the limits they answer to, the buffer table, and
// for one call shape the grid, arithmetic and device traffic.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "shape_options.h"
#include "errors.h"
#include "mfagen/forward_dispatch.h"
#include "plan/dispatch_info.h"
#include "plan/forward_cost.h"
#include "plan/kernel_plan.h"
#include "profile/calibration.h"
#include "profile/chip_selection.h"
#include "profile/profile_json.h"
#include "profile/spec_profile.h"
#include "profile/synthetic_call.h"
#include "profile_output.h"
#include "spec/spec_parser.h"
#include "text_table.h"

namespace mfagen::cli {
namespace {

struct ExplainArgs {
  std::vector<std::string> specs;
  plan::CostShape shape{1, 32, 8, 4096, 4096};
  bool profile = false;
  std::string chips = "all";
  uint64_t sample = kDefaultProfileSample;
};

constexpr const char* kIndent = "  ";
constexpr const char* kListIndent = "    ";

std::string plural(uint64_t n, const char* word) {
  const bool sibilant = std::string_view(word).ends_with('s');  // "pass" -> "passes"
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : sibilant ? "es" : "s");
}

// 1234567 -> "1.23 M" (decimal prefixes, as FLOP counts are usually quoted).
std::string decimal(double v) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (v >= 1000 && i < 6) v /= 1000, ++i;
  return fmt::format("{:.3g} {}", v, prefixes[i]);
}

// 1048576 -> "1.00 MiB".
std::string binary(double v) {
  const char* prefixes[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (v >= 1024 && i < 5) v /= 1024, ++i;
  return i == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.2f} {}", v, prefixes[i]);
}

std::string percent(double part, double whole) { return fmt::format("{:.1f}%", whole > 0 ? 100 * part / whole : 0.0); }

std::string origin_text(const spec::SpecOrigin& o) { return o.json_path.empty() ? o.file : o.file + ": " + o.json_path; }

std::string spec_text(const spec::KernelSpec& s) {
  std::string text = fmt::format("{} {}, D {}, Dv {}, causal {}, gqa {}, lse {}, target {}", spec::to_string(s.kind),
                                 spec::to_string(s.dtype), s.head_dim, s.head_dim_v, spec::to_string(s.causal),
                                 s.gqa ? "yes" : "no", s.lse ? "yes" : "no", spec::to_string(s.target));
  if (s.sinks) text += ", sinks";
  if (s.layout == spec::Layout::varlen) text += ", layout varlen";
  if (s.kv_cache == spec::KvCache::paged) text += ", kv_cache paged";
  if (s.dropout) text += ", dropout (Philox4x32-10 per weight)";
  if (spec::kv_quantized(s.kv_dtype))
    text += fmt::format(", kv_dtype {} (k and v dequantized while staged)", spec::to_string(s.kv_dtype));
  return text;
}

// How the staged tiles hold their operands (KernelPlan::staged_bytes, resident_tiles).
std::string staging_text(const plan::KernelPlan& p) {
  const spec::KernelSpec& s = p.spec;
  const bool backward = s.kind == spec::Kind::backward;
  const std::string type = p.staged_bytes == spec::dtype_bytes(s.dtype)
                               ? std::string(spec::to_string(s.dtype))
                               : fmt::format("float32 (widened from {} as staged)",
                                             spec::kv_quantized(s.kv_dtype) ? spec::to_string(s.kv_dtype)
                                                                            : spec::to_string(s.dtype));
  if (!p.resident_tiles)
    return fmt::format("{} tiles; {} take turns in one tile", type, backward ? "the operands" : "K and V");
  return fmt::format("{} tiles; {}", type,
                     backward ? "q and dO (K and V) keep a tile each, q (K) staged once per block"
                              : "K and V keep a tile each, staged together under one barrier pair per key block");
}

std::vector<TextRow> plan_rows(const plan::KernelPlan& p) {
  const spec::KernelSpec& s = p.spec;
  const uint32_t widest = std::max(s.head_dim, s.head_dim_v);
  return {
      {"spec", spec_text(s)},
      {"tiles", fmt::format("block_q {}, block_k {}, simdgroups {}{} ({})", p.block_q, p.block_k, p.simdgroups,
                            p.key_groups > 1 ? fmt::format(", key_groups {}", p.key_groups) : std::string(),
                            p.tiles_from_table ? fmt::format("from the tile table for D {} on {}", widest,
                                                             spec::to_string(s.target))
                                               : "given in the spec")},
      {"threads", s.kind == spec::Kind::decode
                      ? fmt::format("up to {} per threadgroup ({} x {}), limit {}: a call runs 1, 2, 4 or 8 "
                                    "simdgroups, as many as its rows (heads_q / heads_kv x seq_q) fill",
                                    p.threads, plural(p.simdgroups, "simdgroup"), plan::kSimdWidth,
                                    plan::kMaxThreadsPerThreadgroup)
                      : fmt::format("{} per threadgroup ({} x {}), limit {}", p.threads,
                                    plural(p.simdgroups, "simdgroup"), plan::kSimdWidth,
                                    plan::kMaxThreadsPerThreadgroup)},
      {"row tiles", p.key_groups > 1
                        ? fmt::format("{} per simdgroup ({} query rows each); {} key groups of {} simdgroups take "
                                      "{} keys each of every {}-key staged block and merge after the last",
                                      p.row_tiles, 8 * p.row_tiles, p.key_groups, p.simdgroups / p.key_groups,
                                      p.block_k, p.key_groups * p.block_k)
                        : fmt::format("{} per simdgroup ({} query rows each)", p.row_tiles, 8 * p.row_tiles)},
      {"products", p.tensor_ops ? fmt::format("Metal 4 TensorOps: matmul2d of {} rows per simdgroup (S = Q K^T, "
                                              "O += P V), needs Metal 4 and an apple10 GPU (manifest \"requires\")",
                                              8 * p.row_tiles)
                                : std::string("simdgroup_matrix 8x8 MMAs (Metal 3.1, apple7 and later)")},
      {"K/V passes", fmt::format("{} columns staged per pass: {} over D {} ({} tiles of 8), {} over Dv {} ({} tiles)",
                                 p.chunk, plural(p.d_passes, "pass"), s.head_dim, p.d_tiles,
                                 plural(p.dv_passes, "pass"), s.head_dim_v, p.dv_tiles)},
      {"staging", staging_text(p)},
      {"threadgroup memory", fmt::format("{} bytes of the {}-byte limit ({})", p.threadgroup_bytes,
                                         plan::kMaxThreadgroupBytes,
                                         percent(p.threadgroup_bytes, plan::kMaxThreadgroupBytes))},
      {"registers", fmt::format("{} 32-bit registers of fragment values per thread, limit {}{}", p.fragment_registers,
                                s.kind == spec::Kind::backward ? plan::kMaxBackwardFragmentRegistersPerThread
                                                               : plan::kMaxFragmentRegistersPerThread,
                                p.fragment_registers > plan::kRegistersPerThread
                                    ? fmt::format("; over the {} registers a thread has, the compiler spills "
                                                  "the rest (the profile's model does not charge spills)",
                                                  plan::kRegistersPerThread)
                                    : std::string())},
  };
}

std::string buffer_table(const plan::KernelPlan& p) {
  std::vector<TextRow> rows = {{"index", "name", "type", "access"}};
  for (const plan::BufferSlot& b : p.buffers)
    rows.push_back({std::to_string(b.index), b.name, b.msl_type, b.written ? "write" : "read"});
  return format_table(rows, kListIndent);
}

std::string function_constant_table(const plan::KernelPlan& p) {
  std::vector<TextRow> rows = {{"index", "name", "type"}};
  for (const plan::FunctionConstantSlot& c : p.function_constants)
    rows.push_back({std::to_string(c.index), c.name, c.type});
  return format_table(rows, kListIndent);
}

// Decode (split-K): the two launches the runtime would make for this shape,
// and the traffic of K and V (read once per split and row block) and of the
// partial results.
std::vector<TextRow> decode_rows(const plan::KernelPlan& p, const plan::CostShape& shape) {
  // The call the profile makes (paged caches: pages of kSyntheticPageSize keys).
  const DispatchPlan d = plan_forward(plan::forward_kernel_info(p), profile::synthetic_call(p, shape));
  std::vector<TextRow> rows;
  for (const KernelLaunch& l : d.launches)
    rows.push_back({"launch", fmt::format("{}: {} x {} x {} threadgroups of {} threads", l.entry, l.threadgroups[0],
                                          l.threadgroups[1], l.threadgroups[2], l.threads_per_threadgroup[0])});
  const uint64_t e = spec::dtype_bytes(p.spec.dtype);
  const uint64_t kv = shape.batch * shape.heads_kv * shape.seq_k * plan::kv_key_bytes(p.spec);  // as stored
  const uint64_t row_blocks = d.launches[0].threadgroups[1] / shape.heads_kv;
  const uint64_t partials = d.buffer("out_partial")->bytes + d.buffer("lse_partial")->bytes;
  const uint64_t q_out = shape.batch * shape.heads_q * shape.seq_q * (p.spec.head_dim + p.spec.head_dim_v) * e;
  rows.push_back({"splits", fmt::format("{} (chosen from the shape: about 1024 threadgroups, splits of at least {} "
                                        "keys)",
                                        d.launches[0].threadgroups[0],
                                        decode_min_split_keys(d.launches[0].threads_per_threadgroup[0] / 32))});
  rows.push_back({"min device bytes", fmt::format("{} ({}): K and V read once, q and out once", kv + q_out,
                                                  binary(double(kv + q_out)))});
  const uint64_t total = kv * row_blocks + q_out + 2 * partials;
  rows.push_back({"kernel device bytes", fmt::format("{} ({}): {:.3f}x the minimum (partials written and read back)",
                                                     total, binary(double(total)),
                                                     double(total) / double(kv + q_out))});
  return rows;
}

// The shape a kernel can take: no GQA means Hkv = Hq, decode at most 16 queries.
plan::CostShape shape_for(const plan::KernelPlan& p, plan::CostShape shape, std::string& note) {
  // A kernel without GQA reads kv head h for q head h: it needs Hkv == Hq.
  if (!p.spec.gqa && shape.heads_kv != shape.heads_q) {
    note = fmt::format("gqa is off for this kernel: costed with heads_kv = heads_q = {}", shape.heads_q);
    shape.heads_kv = shape.heads_q;
  }
  if (p.spec.kind == spec::Kind::decode && shape.seq_q > kMaxDecodeQueries) {
    note += fmt::format("{}decode kernels take at most {} queries: costed with seq_q = 1", note.empty() ? "" : "; ",
                        kMaxDecodeQueries);
    shape.seq_q = 1;
  }
  return shape;
}

std::vector<TextRow> cost_rows(const plan::KernelPlan& p, const plan::CostShape& shape) {
  if (p.spec.kind == spec::Kind::decode) {
    std::vector<TextRow> rows = {{"shape", fmt::format("batch {}, heads_q {}, heads_kv {}, seq_q {}, seq_k {}",
                                                       shape.batch, shape.heads_q, shape.heads_kv, shape.seq_q,
                                                       shape.seq_k)}};
    for (TextRow& r : decode_rows(p, shape)) rows.push_back(std::move(r));
    return rows;
  }
  const plan::ForwardCost c = plan::forward_cost(p, shape);
  const uint64_t q_blocks = (shape.seq_q + p.block_q - 1) / p.block_q;
  const uint64_t skipped = c.key_blocks_total - c.key_blocks_visited;
  return {
      {"shape", fmt::format("batch {}, heads_q {}, heads_kv {}, seq_q {}, seq_k {}", shape.batch, shape.heads_q,
                            shape.heads_kv, shape.seq_q, shape.seq_k)},
      {"grid", fmt::format("{} x {} x {} = {} threadgroups of {} threads  [ceil(seq_q / {}), heads_q, batch]",
                           q_blocks, shape.heads_q, shape.batch, c.threadgroups, p.threads, p.block_q)},
      {"FLOPs", fmt::format("{:.0f} ({}FLOP): 2 x {:.0f} visible (query, key) pairs x (D + Dv)", c.flops,
                            decimal(c.flops), c.visible_pairs)},
      {"min device bytes", fmt::format("{} ({}): q, k, v read once; out{} written once", c.min_device_bytes,
                                       binary(double(c.min_device_bytes)), p.spec.lse ? " and lse" : "")},
      {"kernel device bytes",
       fmt::format("{} ({}): {:.2f}x the minimum (K and V re-read per query block)", c.kernel_device_bytes,
                   binary(double(c.kernel_device_bytes)),
                   c.min_device_bytes ? double(c.kernel_device_bytes) / double(c.min_device_bytes) : 0.0)},
      {"key blocks", fmt::format("{} visited of {} ({} skipped by causal masking and windows)",
                                 c.key_blocks_visited, c.key_blocks_total,
                                 percent(double(skipped), double(c.key_blocks_total)))},
  };
}

// Label/value lines with one label width for the whole kernel, so the
// sections printed between them (buffer table) do not break the alignment.
void print_labelled(const std::vector<TextRow>& rows) {
  for (const TextRow& row : rows) fmt::print("{}{:<21}{}\n", kIndent, row.at(0) + ":", row.at(1));
}

// `--profile`: the cost model's prediction from counted work, one row per chip.
std::vector<TextRow> profile_rows(const plan::KernelPlan& p, const plan::CostShape& shape, uint64_t sample,
                                  const std::vector<profile::Chip>& chips) {
  const profile::ProfiledKernel k = profile::predict_on(profile::profile_plan_call(p, shape, sample), chips);
  std::vector<TextRow> rows;
  for (const profile::Prediction& pr : k.predictions)
    rows.push_back({"predicted " + pr.chip,
                    fmt::format("{} ({:.2f} TFLOPS, {:.1f}% of peak, bound: {}) — cost model, not measured ({})",
                                profile::format_seconds(pr.seconds), pr.tflops, 100 * pr.utilization,
                                profile::to_string(pr.bound), profile::band_text(pr.chip, pr.bound))});
  return rows;
}

// `chips` empty: no --profile.
void explain_kernel(const plan::KernelPlan& p, const plan::CostShape& requested, uint64_t sample,
                    const std::vector<profile::Chip>& chips) {
  fmt::print("{}  ({})\n", p.entry, origin_text(p.spec.origin));
  print_labelled(plan_rows(p));
  print_labelled({{"buffers", ""}});
  fmt::print("{}", buffer_table(p));
  if (p.function_constants.empty()) {
    print_labelled({{"function constants", "none (every spec field is compiled in)"}});
  } else {
    print_labelled({{"function constants", ""}});
    fmt::print("{}", function_constant_table(p));
  }
  std::string note;
  const plan::CostShape shape = shape_for(p, requested, note);
  print_labelled(cost_rows(p, shape));
  if (!chips.empty()) print_labelled(profile_rows(p, shape, sample, chips));
  if (!note.empty()) print_labelled({{"note", note}});
}

int run_explain(const ExplainArgs& args) {
  const plan::CostShape& s = args.shape;
  if (s.heads_q % s.heads_kv != 0)
    throw UserError(fmt::format("--heads-kv {} must divide --heads-q {} (each kv head serves a whole group of q heads)",
                                s.heads_kv, s.heads_q));
  const std::vector<profile::Chip> chips = args.profile ? chips_named(args.chips) : std::vector<profile::Chip>{};
  std::vector<plan::KernelPlan> plans;
  for (const spec::KernelSpec& spec : spec::load_spec_files({args.specs.begin(), args.specs.end()}))
    plans.push_back(plan::plan_kernel(spec));
  for (size_t i = 0; i < plans.size(); ++i) {
    if (i > 0) fmt::print("\n");
    explain_kernel(plans[i], s, args.sample, chips);
  }
  return kExitOk;
}

}  // namespace

void register_explain_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<ExplainArgs>();
  CLI::App* cmd = app.add_subcommand("explain", "Show each kernel's plan (tiles, threads, memory) and its cost");
  cmd->footer(
      "For every kernel of the spec files: the planner's tiles (given or from its table), threads,\n"
      "query row tiles per simdgroup, how K/V columns are staged through threadgroup memory (passes\n"
      "over D and Dv), threadgroup memory against the 32 KB limit, fragment registers per thread,\n"
      "the buffer table and function constants. Then, for the call shape given by the options: the\n"
      "grid, FLOPs, the minimum device traffic (every tensor touched once), this kernel's device\n"
      "traffic (the FlashAttention IO model) and the key blocks causal masking and windows let it\n"
      "skip; for decode kernels the two launches, the key splits and their traffic. With --profile,\n"
      "also the cost model's predicted time per chip from work counted on the cpu backend.\n"
      "Negative numbers need the --name=value form: --window-left=-1.\n\n"
      "Exit status: 0 ok, 1 bad spec or shape, 2 internal error.");
  cmd->add_option("specs", args->specs, "spec files (JSON)")->required()->type_name("SPEC");
  add_shape_options(*cmd, args->shape);
  add_window_options(*cmd, args->shape);
  cmd->add_flag("--profile", args->profile,
                "also run each kernel on the cpu backend, count its work and show the cost model's predicted time "
                "per chip (as mfagen profile; slower)");
  cmd->add_option("--chip", args->chips, "--profile: chips to predict for (all, or names separated by commas)")
      ->capture_default_str();
  cmd->add_option("--sample", args->sample, "--profile: threadgroups executed per launch (0: all)")
      ->capture_default_str();
  cmd->callback([args, &action] { action = [args] { return run_explain(*args); }; });
}

}  // namespace mfagen::cli
