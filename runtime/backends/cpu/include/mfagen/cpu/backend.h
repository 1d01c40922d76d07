// The cpu backend: compiles Metal Shading Language source as host code and
// runs every threadgroup of a grid on the CPU with Metal's semantics
// (DESIGN.md section 7). This is the project's ground truth for kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include "mfagen/cpu/profile_ops.h"

namespace mfagen::cpu {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t volume() const { return uint64_t(x) * y * z; }
  bool operator==(const Dim3&) const = default;
};

enum class AddressSpace : uint8_t { none = 0, device = 1, constant = 2, threadgroup = 3, generic = 4 };

// One parameter of a kernel entry point, as read from its MSL signature.
struct KernelParam {
  enum class Kind { buffer, threadgroup_buffer, builtin };
  std::string name;
  std::string type;       // as written, e.g. "device const half*" or "constant Params&"
  Kind kind = Kind::buffer;
  uint32_t index = 0;     // [[buffer(n)]] / [[threadgroup(n)]]
  std::string attribute;  // "buffer", "threadgroup", "thread_position_in_grid", ...
  AddressSpace space = AddressSpace::none;
  bool is_const = false;
  bool is_reference = false;  // `constant T&`: a one-element buffer
  std::string function_constant;  // [[function_constant(x)]]: bound only when x is true
};

struct KernelSignature {
  std::string name;
  std::vector<KernelParam> params;
  std::string location;  // file:line of the kernel's declaration
  const KernelParam* buffer(uint32_t index) const;
};

// A program-scope `constant T name [[function_constant(i)]];`.
struct FunctionConstant {
  uint32_t index = 0;
  std::string name;
  std::string type;
};

// A value given for a function constant. `literal` is C++ source text for the
// value (already validated for `type`), e.g. "true", "3", "1.5f".
struct ConstantValue {
  std::string type;  // bool int uint short ushort float half
  std::string literal;
};

// Parses "VALUE:TYPE" values as typed by users (`--constant 0=1.5:float`).
ConstantValue parse_constant_value(std::string_view value, std::string_view type);

struct CompileOptions {
  std::vector<std::string> include_dirs;
  std::vector<std::string> defines;  // "NAME" or "NAME=VALUE"
  std::map<uint32_t, ConstantValue> constants;
  bool instrument = true;  // detectors and traffic counters
  // Count GPU operations per basic block for `mfagen profile` (docs/profile.md).
  // Implies instrument (traffic counters); a separate compile, cached apart.
  bool profile = false;
  std::filesystem::path cache_dir;  // empty: $MFAGEN_CACHE_DIR, else ~/.cache/mfagen
};

// Clang's diagnostics (with the kernel file's line numbers) or a lowering error.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A launch configuration that Metal would refuse (zero grid, > 1024 threads,
// missing buffer, ...).
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Module;
struct CompileStats {
  bool cache_hit = false;       // the compiled object was cached
  bool preprocess_hit = false;  // so was the preprocessed source (no clang -E ran)
  double seconds = 0;
};

// Compiles (or loads from the on-disk cache) MSL source. Thread-safe.
std::shared_ptr<const Module> compile(std::string_view source, std::string_view source_name,
                                      const CompileOptions& options, CompileStats* stats = nullptr);
std::shared_ptr<const Module> compile_file(const std::filesystem::path& file, const CompileOptions& options,
                                           CompileStats* stats = nullptr);

class Module {
 public:
  virtual ~Module() = default;
  virtual const std::vector<KernelSignature>& kernels() const = 0;
  virtual const std::vector<FunctionConstant>& function_constants() const = 0;
  virtual bool instrumented() const = 0;
  virtual bool profiled() const = 0;  // compiled with CompileOptions::profile
  // Whether a parameter exists in this compile: `[[buffer(n), function_constant(c)]]`
  // arguments exist only when c was given as true (Metal drops them otherwise).
  virtual bool parameter_present(const KernelParam& param) const = 0;
  const KernelSignature* find(std::string_view name) const;
};

// A device buffer bound at [[buffer(index)]]. The kernel reads and writes it in
// place; its size is exact (accesses past it are out-of-bounds findings).
struct BufferBinding {
  uint32_t index = 0;
  std::span<std::byte> data;
};

struct Detectors {
  bool out_of_bounds = true;
  bool data_races = true;
  bool barrier_divergence = true;
  bool uninitialized_reads = true;
  // Undefined behaviour of Metal 4 tensor operations (matmul2d, cooperative
  // tensors): a scope not entered by all its threads, a scope whose simdgroup
  // count differs from the dispatch, reads of cooperative-tensor elements
  // never written.
  bool tensor_ops = true;
};

// `mfagen profile`: count what a launch executes (docs/profile.md). The
// module must be compiled with CompileOptions::profile.
struct ProfileOptions {
  bool enabled = false;
  // Run at most this many threadgroups and extrapolate (0: run all): the
  // linear threadgroup index range is cut into this many equal strata and the
  // threadgroup in the middle of each stands for its stratum.
  uint64_t sample_threadgroups = 0;
  // Launches that always run every threadgroup: their outputs steer later
  // launches (mask_mod's _blocks classes decide which blocks are skipped).
  std::vector<std::string> unsampled_entries;
  // Launches whose threadgroups that differ only in y do alike work, as the
  // q heads of a planned batch (the same work items for every head) and the
  // kv heads of a split-K decode do: their strata are cut from the
  // threadgroups ordered y fastest (then x, then z), so each spans every y
  // and a sample smaller than y still covers x and z; a sample above
  // x * z is lowered to it (one threadgroup per (x, z): exact).
  std::vector<std::string> y_alike_entries;
};

struct LaunchOptions {
  Dim3 threadgroups;
  Dim3 threads_per_threadgroup;
  std::vector<BufferBinding> buffers;
  std::map<uint32_t, uint64_t> threadgroup_bytes;  // [[threadgroup(n)]] sizes
  Detectors detectors;
  unsigned workers = 0;       // 0: one per core
  size_t max_findings = 64;   // distinct findings kept (all are counted)
  ProfileOptions profile;
  // Cooperative tensors' element layout is implementation-defined: 0 runs the
  // default layout (MLX NAX's 16x16 fragments), any other value a permutation
  // of it seeded by the value, so that a kernel relying on a layout fails.
  uint32_t tensor_layout_seed = 0;
  // Lanes in lockstep: every thread of the threadgroup yields before each of
  // its threadgroup memory accesses, so that the lanes take their k-th access
  // in turn before any takes its (k+1)-th, as a simdgroup executing one
  // instruction for all its lanes does. Metal's memory model orders
  // threadgroup memory between threads only through barriers; code that
  // relies on lockstep lanes instead (ggml's kernel_flash_attn_ext_vec) has a
  // data race, which the race detector still reports, but computes here what
  // a GPU computes. Off by default: the default schedule runs each thread to
  // its next barrier or collective, which exposes such code. Needs an
  // instrumented module (CompileOptions::instrument), whose accesses are hooked.
  bool lockstep = false;
};

enum class FindingKind { out_of_bounds, data_race, barrier_divergence, uninitialized_read, tensor_op };
std::string_view to_string(FindingKind kind);

struct Finding {
  FindingKind kind{};
  std::string kernel;
  Dim3 threadgroup;           // threadgroup_position_in_grid
  Dim3 thread;                // thread_position_in_threadgroup
  uint32_t thread_index = 0;  // thread_index_in_threadgroup
  uint64_t address = 0;
  std::string region;         // e.g. "buffer(1) offset 4096 of 4096 bytes"
  std::string location;       // source file:line:column of the access or barrier
  std::string detail;         // what happened, e.g. "written by thread 3 in the same barrier interval"
  std::string to_string() const;
};

struct BufferTraffic {
  uint32_t index = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
};

// What one executed threadgroup issued, per simdgroup issue (a block runs as
// often as its busiest lane runs it).
struct ThreadgroupProfile {
  Dim3 position;
  uint64_t represents = 1;  // threadgroups of the grid it stands for (its stratum)
  profile::OpCounts ops{};  // sum over its simdgroups
  profile::OpCounts busiest_simdgroup{};  // the simdgroup that issued the most
  std::vector<BufferTraffic> traffic;     // device bytes per bound buffer
  // Device bytes read past the core's L1: the distinct 128-byte lines this
  // threadgroup read (at most the bytes it read). Re-reads of a line within
  // a threadgroup are served by its core's L1 (docs/profile.md).
  uint64_t device_bytes_read_past_l1 = 0;
  uint64_t threadgroup_bytes_read = 0, threadgroup_bytes_written = 0;
  uint64_t threadgroup_memory_bytes = 0;  // allocated: declared + [[threadgroup(n)]]
};

struct LaunchProfile {
  uint64_t threadgroups = 0;  // in the grid
  std::string sampling;       // how the executed threadgroups were chosen, in words
  std::vector<ThreadgroupProfile> samples;  // the executed threadgroups, in grid order
  // The whole launch: sums of samples x represents.
  profile::OpCounts ops{};
  std::vector<BufferTraffic> traffic;
  uint64_t device_bytes_read_past_l1 = 0;  // see ThreadgroupProfile
  uint64_t threadgroup_bytes_read = 0, threadgroup_bytes_written = 0;
  uint64_t threadgroup_memory_bytes = 0;  // the largest of any threadgroup
  uint32_t registers_per_thread = 0;      // estimate (docs/profile.md)
  uint32_t simdgroups_per_threadgroup = 0;
};

struct LaunchResult {
  std::vector<Finding> findings;  // distinct (kind, location), first occurrence
  uint64_t findings_total = 0;
  std::vector<BufferTraffic> traffic;  // per bound buffer (instrumented modules only)
  uint64_t device_bytes_read = 0;
  uint64_t device_bytes_written = 0;
  double seconds = 0;
  std::optional<LaunchProfile> profile;  // when LaunchOptions::profile.enabled
  bool clean() const { return findings_total == 0; }
};

// Runs every threadgroup of the grid. Threads are cooperative fibers; groups
// of 32 form simdgroups; threadgroups run in parallel on `workers` threads.
LaunchResult launch(const Module& module, std::string_view entry, const LaunchOptions& options);

}  // namespace mfagen::cpu
