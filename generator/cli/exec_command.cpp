// `mfagen exec`: compile any Metal kernel file with the cpu backend, run it on
// .npy buffers with the detectors on, and write every buffer back. A debugging
// tool: mistakes in the invocation are named precisely (exec_bindings.h) and
// the kernel's own bugs come back as detector findings.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "arg_parsing.h"
#include "commands.h"
#include "errors.h"
#include "exec_bindings.h"
#include "io/npy.h"
#include "mfagen/cpu/backend.h"
#include "profile/launch_work.h"
#include "profile_output.h"

namespace mfagen::cli {
namespace {

constexpr uint64_t kMaxThreadsPerThreadgroup = 1024;  // Metal's limit on every Apple GPU

struct ExecArgs {
  std::string file;
  std::string entry;
  std::string threadgroups;
  std::string threads_per_threadgroup;
  std::vector<std::string> constants;
  std::vector<std::string> buffers;
  std::vector<std::string> threadgroup_bytes;
  std::vector<std::string> include_dirs;
  std::vector<std::string> defines;
  std::string out_dir;
  bool no_detectors = false;
  unsigned workers = 0;
  uint32_t tensor_layout_seed = 0;  // cooperative-tensor layout permutation (0: default layout)
  bool lockstep = false;            // cpu::LaunchOptions::lockstep
  bool stats = false;
  bool profile = false;
  std::string name;           // profile: the kernel's label in reports
  double useful_flops = 0;    // profile: FLOPs that count for TFLOPS and utilization
  uint32_t registers = 0;     // profile: 32-bit registers per thread from the kernel's tiles (0: unstated)
  uint32_t mma_chains = 0;    // profile: independent MMA accumulator chains per simdgroup (0: unstated)
  ProfileOutputArgs profile_output;
};

cpu::Dim3 to_dim3(const std::array<uint32_t, 3>& d) { return {d[0], d[1], d[2]}; }
std::string dim3_text(const cpu::Dim3& d) { return fmt::format("{}x{}x{}", d.x, d.y, d.z); }

std::string duration_text(double seconds) {
  return seconds < 1 ? fmt::format("{:.3f} ms", seconds * 1e3) : fmt::format("{:.3f} s", seconds);
}

std::map<uint32_t, cpu::ConstantValue> parse_constants(const std::vector<std::string>& texts) {
  std::map<uint32_t, cpu::ConstantValue> constants;
  for (const std::string& text : texts) {
    IndexedValue iv = parse_indexed(text, "--constant");
    TypedValue tv = parse_typed(iv.value, "--constant");
    cpu::ConstantValue value;
    try {
      value = cpu::parse_constant_value(tv.value, tv.type);
    } catch (const std::invalid_argument& e) {
      throw UserError(fmt::format("--constant {}: {}", text, e.what()));
    }
    if (!constants.emplace(iv.index, value).second)
      throw UserError(fmt::format("--constant {}: function constant {} is given twice", text, iv.index));
  }
  return constants;
}

std::vector<ExecBuffer> read_buffers(const std::vector<std::string>& texts) {
  std::vector<ExecBuffer> buffers;
  for (const std::string& text : texts) {
    IndexedValue iv = parse_indexed(text, "--buffer");
    for (const ExecBuffer& b : buffers)
      if (b.index == iv.index) throw UserError(fmt::format("--buffer {}: buffer {} is given twice", text, iv.index));
    buffers.push_back({iv.index, iv.value, io::read_npy(iv.value)});
  }
  return buffers;
}

std::map<uint32_t, uint64_t> parse_threadgroup_bytes(const std::vector<std::string>& texts) {
  std::map<uint32_t, uint64_t> sizes;
  for (const std::string& text : texts) {
    IndexedValue iv = parse_indexed(text, "--threadgroup-bytes");
    uint64_t bytes = parse_unsigned(iv.value, "--threadgroup-bytes");
    if (!sizes.emplace(iv.index, bytes).second)
      throw UserError(fmt::format("--threadgroup-bytes {}: threadgroup buffer {} is given twice", text, iv.index));
  }
  return sizes;
}

void check_grid(const cpu::Dim3& groups, const cpu::Dim3& threads, const ExecArgs& args) {
  if (threads.volume() > kMaxThreadsPerThreadgroup)
    throw UserError(fmt::format("--threads-per-threadgroup {}: {} threads per threadgroup; Metal allows at most {}",
                                args.threads_per_threadgroup, threads.volume(), kMaxThreadsPerThreadgroup));
  // thread_position_in_grid is a uint3: each dimension of the grid must fit.
  for (auto [g, t] : {std::pair{groups.x, threads.x}, {groups.y, threads.y}, {groups.z, threads.z}})
    if (uint64_t(g) * t > UINT32_MAX)
      throw UserError(fmt::format("--threadgroups {} with --threads-per-threadgroup {}: the grid has more than "
                                  "2^32-1 threads in one dimension",
                                  args.threadgroups, args.threads_per_threadgroup));
}

void prepare_out_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw UserError(fmt::format("--out-dir {}: cannot create the directory{}", dir.string(),
                                ec ? ": " + ec.message() : ""));
}

void write_outputs(const std::filesystem::path& dir, const std::vector<ExecBuffer>& buffers) {
  for (const ExecBuffer& b : buffers) {
    std::filesystem::path path = dir / fmt::format("buffer{}.npy", b.index);
    try {
      io::write_npy_atomic(path, b.array);
    } catch (const std::system_error& e) {
      throw UserError(fmt::format("cannot write {}: {}", path.string(), e.what()));
    }
  }
}

void print_summary(const cpu::KernelSignature& kernel, const cpu::Module& module, const cpu::LaunchOptions& launch,
                   const cpu::LaunchResult& result, const cpu::CompileStats& compile,
                   const std::vector<ExecBuffer>& buffers, bool stats) {
  std::string traffic = module.instrumented()
                            ? fmt::format("device bytes read {}, written {}", result.device_bytes_read,
                                          result.device_bytes_written)
                            : "device traffic not counted (--no-detectors)";
  std::string findings = result.findings_total == 0 ? "no findings"
                                                    : fmt::format("{} finding{}", result.findings_total,
                                                                  result.findings_total == 1 ? "" : "s");
  fmt::print("{}: {} threadgroups of {} threads, {}, {}, {}\n", kernel.name, dim3_text(launch.threadgroups),
             dim3_text(launch.threads_per_threadgroup), duration_text(result.seconds), traffic, findings);
  if (!stats) return;
  fmt::print("  compile: {}{}\n", duration_text(compile.seconds), compile.cache_hit ? " (cached)" : "");
  for (const ExecBuffer& b : buffers) {
    const cpu::KernelParam* p = kernel.buffer(b.index);
    std::string where = fmt::format("  buffer({}) {}: {} {}", b.index, p ? p->name : "?", b.array.dtype,
                                    io::shape_repr(b.array.shape));
    auto t = std::find_if(result.traffic.begin(), result.traffic.end(),
                          [&](const cpu::BufferTraffic& t) { return t.index == b.index; });
    if (t == result.traffic.end())
      fmt::print("{}, {} bytes\n", where, b.array.data.size());
    else
      fmt::print("{}, {} bytes, read {}, written {}\n", where, b.array.data.size(), t->bytes_read,
                 t->bytes_written);
  }
}

// `--profile`: the launch's counted work and its predicted time per chip.
void report_exec_profile(const ExecArgs& args, const cpu::LaunchOptions& launch, const cpu::LaunchProfile& counted) {
  profile::LaunchShape shape{args.entry, launch.threadgroups, launch.threads_per_threadgroup, {}};
  for (const cpu::BufferBinding& b : launch.buffers) shape.buffer_sizes.emplace_back(b.index, b.data.size());
  profile::KernelWork work;
  work.name = args.name.empty() ? args.entry : args.name;
  work.origin = args.file;
  work.shape = fmt::format("{} threadgroups of {} threads", dim3_text(launch.threadgroups),
                           dim3_text(launch.threads_per_threadgroup));
  work.useful_flops = args.useful_flops;
  work.launches.push_back(profile::to_launch_work(shape, counted));
  work.launches.back().registers_per_thread = args.registers;
  work.launches.back().mma_chains = args.mma_chains;
  report_profiles({std::move(work)}, args.profile_output, "mfagen exec --profile");
}

int run_exec(const ExecArgs& args) {
  // Everything cheap is checked before the (possibly slow) compile.
  cpu::LaunchOptions launch;
  launch.threadgroups = to_dim3(parse_dim3(args.threadgroups, "--threadgroups"));
  launch.threads_per_threadgroup = to_dim3(parse_dim3(args.threads_per_threadgroup, "--threads-per-threadgroup"));
  check_grid(launch.threadgroups, launch.threads_per_threadgroup, args);
  launch.threadgroup_bytes = parse_threadgroup_bytes(args.threadgroup_bytes);
  launch.workers = args.workers;
  launch.tensor_layout_seed = args.tensor_layout_seed;
  launch.lockstep = args.lockstep;
  if (args.lockstep && args.no_detectors)
    throw UserError("--lockstep: the lanes take turns at their threadgroup accesses, which only an instrumented "
                   "kernel reports: drop --no-detectors");
  if (args.no_detectors) launch.detectors = {false, false, false, false};

  if (args.profile) {
    check_profile_output(args.profile_output);
    launch.profile.enabled = true;
    launch.profile.sample_threadgroups = args.profile_output.sample;
  }
  cpu::CompileOptions options;
  options.profile = args.profile;
  options.include_dirs = args.include_dirs;
  options.defines = args.defines;
  options.constants = parse_constants(args.constants);
  options.instrument = !args.no_detectors;
  std::vector<ExecBuffer> buffers = read_buffers(args.buffers);

  cpu::CompileStats compile_stats;
  std::shared_ptr<const cpu::Module> module = cpu::compile_file(args.file, options, &compile_stats);
  const cpu::KernelSignature* kernel = module->find(args.entry);
  if (!kernel)
    throw UserError(fmt::format("{} has no kernel `{}`; {}", args.file, args.entry, describe_kernels(*module)));
  check_constants(*module, options.constants);
  check_buffers(*module, *kernel, buffers);
  check_threadgroup_bytes(*kernel, launch.threadgroup_bytes);
  prepare_out_dir(args.out_dir);  // last check: a run that was refused leaves nothing behind

  // The kernel reads and writes the arrays in place; they are written back as is.
  for (ExecBuffer& b : buffers) launch.buffers.push_back({b.index, std::span<std::byte>(b.array.data)});
  cpu::LaunchResult result = cpu::launch(*module, args.entry, launch);

  for (const cpu::Finding& finding : result.findings) fmt::print(stderr, "{}\n", finding.to_string());
  if (result.findings_total > result.findings.size())
    fmt::print(stderr, "... {} findings in total, {} distinct shown\n", result.findings_total, result.findings.size());
  write_outputs(args.out_dir, buffers);
  if (args.profile) {
    report_exec_profile(args, launch, *result.profile);
  } else {
    print_summary(*kernel, *module, launch, result, compile_stats, buffers, args.stats);
  }
  return result.findings_total == 0 ? kExitOk : kExitUserError;
}

}  // namespace

void register_exec_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<ExecArgs>();
  CLI::App* exec = app.add_subcommand("exec", "Run a Metal kernel on the CPU with .npy buffers");
  exec->footer(
      "Buffers are .npy files, bound as [[buffer(INDEX)]] and written back after the run as\n"
      "OUT_DIR/buffer<INDEX>.npy (same dtype and shape). The dtype must match the parameter's\n"
      "element type: float <f4, half <f2, bfloat <u2 or <i2 (raw bits), int <i4, uint <u4,\n"
      "short <i2, ushort <u2, char |i1, uchar |u1, bool |b1, long <i8, ulong <u8; vectors\n"
      "(float4) take a multiple of their width (3-wide vectors are 4 wide unless packed);\n"
      "structs take any dtype, bytes passed through. A `constant T&` is a 1-element buffer.\n"
      "Detector findings go to stderr and make the exit status 1.\n"
      "With --profile the launch is counted per simdgroup and its time predicted per Apple GPU by\n"
      "the cost model (docs/profile.md); --sample, --chip, --json, --json-out and --report apply then.\n\n"
      "Example:\n"
      "  mfagen exec saxpy.metal --entry saxpy --threadgroups 4 --threads-per-threadgroup 64 \\\n"
      "    --buffer 0=x.npy --buffer 1=y.npy --buffer 2=a.npy --out-dir out");

  exec->add_option("file", args->file, "Metal source file")->required()->check(CLI::ExistingFile);
  exec->add_option("--entry", args->entry, "kernel function to run")->required();
  exec->add_option("--threadgroups", args->threadgroups, "threadgroups per grid")
      ->required()
      ->type_name("X[,Y[,Z]]");
  exec->add_option("--threads-per-threadgroup", args->threads_per_threadgroup, "threads per threadgroup (<= 1024)")
      ->required()
      ->type_name("X[,Y[,Z]]");
  // allow_extra_args(false): each occurrence takes one value, so a repeated
  // option never swallows the positional FILE that follows it.
  exec->add_option("--constant", args->constants,
                   "[[function_constant(INDEX)]] value; TYPE: bool int uint short ushort float half")
      ->type_name("INDEX=VALUE:TYPE")
      ->allow_extra_args(false);
  exec->add_option("--buffer", args->buffers, "bind a .npy file as [[buffer(INDEX)]]")
      ->type_name("INDEX=FILE.npy")
      ->allow_extra_args(false);
  exec->add_option("--threadgroup-bytes", args->threadgroup_bytes, "size of [[threadgroup(INDEX)]] memory")
      ->type_name("INDEX=N")
      ->allow_extra_args(false);
  exec->add_option("-I,--include-dir", args->include_dirs, "add a directory to the #include search path")
      ->type_name("DIR")
      ->allow_extra_args(false);
  exec->add_option("-D,--define", args->defines, "define a preprocessor macro")
      ->type_name("NAME[=VALUE]")
      ->allow_extra_args(false);
  exec->add_option("--out-dir", args->out_dir, "where buffer<INDEX>.npy files are written (created)")
      ->required()
      ->type_name("DIR");
  exec->add_flag("--no-detectors", args->no_detectors,
                 "compile without instrumentation: faster, no findings and no traffic counters");
  exec->add_option("--workers", args->workers, "threads running threadgroups in parallel (default: one per core)");
  exec->add_option("--tensor-layout-seed", args->tensor_layout_seed,
                   "permute every cooperative tensor's element layout with this seed (0, the default: the "
                   "stand-in's default layout); a kernel that guesses slot positions instead of asking the "
                   "cooperative tensor fails under a nonzero seed")
      ->type_name("N");
  exec->add_flag("--lockstep", args->lockstep,
                 "run each simdgroup's lanes in lockstep at threadgroup memory accesses, as a GPU does (code that "
                 "relies on it without a barrier still gets its data-race finding; by default each thread runs to "
                 "its next barrier or collective)");
  exec->add_flag("--stats", args->stats, "also print compile time and per-buffer traffic");
  exec->add_flag("--profile", args->profile,
                 "count what the launch executes and predict its time per Apple GPU (a model; see mfagen profile)");
  exec->add_option("--name", args->name, "--profile: the kernel's name in reports (default: the entry)");
  exec->add_option("--useful-flops", args->useful_flops,
                   "--profile: FLOPs that count for TFLOPS (default: the counted MMA and FMA FLOPs)")
      ->check(CLI::NonNegativeNumber);
  exec->add_option("--registers", args->registers,
                   "--profile: 32-bit registers per thread, from the kernel's tiles (fragments + scalars); "
                   "limits residency on Apple7/8 and the on-chip pool on Apple9+ (default: unstated, no limit)")
      ->check(CLI::Range(0, 1024));
  exec->add_option("--mma-chains", args->mma_chains,
                   "--profile: independent MMA accumulator tiles per simdgroup (latency hiding; default: 2)")
      ->check(CLI::Range(0, 4096));
  add_profile_output_options(*exec, args->profile_output);

  exec->callback([args, &action] { action = [args] { return run_exec(*args); }; });
}

}  // namespace mfagen::cli
