// launch(): validates a launch as Metal would, copies buffers into guarded
// allocations, runs threadgroups on a pool of workers and merges what the
// detectors and counters saw.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "finding_sink.h"
#include "loaded_module.h"
#include "threadgroup_runner.h"

namespace mfagen::cpu {
namespace {

constexpr uint64_t kRedzone = 256;  // bytes around each device buffer
constexpr uint64_t kMaxThreadsPerThreadgroup = 1024;

std::string list_kernels(const Module& module) {
  std::string out;
  for (const KernelSignature& k : module.kernels()) out += (out.empty() ? "" : ", ") + k.name;
  return out.empty() ? "(none)" : out;
}

void validate(const Module& module, const KernelSignature& kernel, const LaunchOptions& options) {
  const Dim3 g = options.threadgroups, t = options.threads_per_threadgroup;
  if (g.volume() == 0) throw LaunchError(fmt::format("the grid has zero threadgroups ({},{},{})", g.x, g.y, g.z));
  if (t.volume() == 0) throw LaunchError(fmt::format("a threadgroup has zero threads ({},{},{})", t.x, t.y, t.z));
  if (t.volume() > kMaxThreadsPerThreadgroup)
    throw LaunchError(fmt::format("{} threads per threadgroup exceed Metal's limit of {}", t.volume(),
                                  kMaxThreadsPerThreadgroup));
  std::set<uint32_t> bound;
  for (const BufferBinding& b : options.buffers) {
    if (!bound.insert(b.index).second) throw LaunchError(fmt::format("buffer({}) is bound twice", b.index));
    if (!kernel.buffer(b.index))
      throw LaunchError(fmt::format("kernel {} has no [[buffer({})]] parameter", kernel.name, b.index));
  }
  uint64_t threadgroup_total = 0;
  for (const KernelParam& p : kernel.params) {
    bool gated_off = !module.parameter_present(p);
    if (p.kind == KernelParam::Kind::buffer && !bound.contains(p.index) && !gated_off)
      throw LaunchError(fmt::format("kernel {} needs buffer({}) for parameter '{} {}'", kernel.name, p.index, p.type,
                                    p.name));
    if (p.kind == KernelParam::Kind::threadgroup_buffer) {
      auto it = options.threadgroup_bytes.find(p.index);
      if (it == options.threadgroup_bytes.end())
        throw LaunchError(fmt::format("kernel {} needs the size of threadgroup({}) for parameter '{} {}'", kernel.name,
                                      p.index, p.type, p.name));
      threadgroup_total += it->second;
    }
  }
  for (auto [index, bytes] : options.threadgroup_bytes) {
    bool used = false;
    for (const KernelParam& p : kernel.params)
      used |= p.kind == KernelParam::Kind::threadgroup_buffer && p.index == index;
    if (!used) throw LaunchError(fmt::format("kernel {} has no [[threadgroup({})]] parameter", kernel.name, index));
  }
  if (threadgroup_total > ThreadgroupRunner::kThreadgroupMemoryLimit)
    throw LaunchError(fmt::format("{} bytes of threadgroup buffers exceed Metal's limit of {}", threadgroup_total,
                                  ThreadgroupRunner::kThreadgroupMemoryLimit));
}

// The threadgroups a profile executes: all of them, or one in the middle of
// each of `sample` equal strata of the linear threadgroup index (x fastest),
// standing for its stratum. For work that changes smoothly along the grid
// (causal attention: linear in the query block) the midpoint is exact up to
// the curvature within a stratum. `y_alike`: the strata are of the
// threadgroups ordered y fastest, then x, then z (threadgroups that differ
// only in y do alike work: ProfileOptions::y_alike_entries), so each
// stratum spans every y; the chosen ones are returned by their linear index.
struct Sampled {
  uint64_t index = 0, represents = 1;
};
std::vector<Sampled> choose_threadgroups(uint64_t groups, uint64_t sample, Dim3 grid = {}, bool y_alike = false) {
  std::vector<Sampled> chosen;
  if (sample == 0 || sample >= groups) {
    chosen.reserve(groups);
    for (uint64_t i = 0; i < groups; ++i) chosen.push_back({i, 1});
    return chosen;
  }
  for (uint64_t s = 0; s < sample; ++s) {
    const uint64_t begin = s * groups / sample, end = (s + 1) * groups / sample, size = end - begin;
    // An even-sized stratum has two middles: alternate them so that a linear
    // trend's half-index biases cancel.
    const uint64_t middle = begin + (size - 1) / 2 + (size % 2 == 0 && s % 2 == 1 ? 1 : 0);
    if (!y_alike) {
      chosen.push_back({middle, size});
      continue;
    }
    const uint64_t y = middle % grid.y, x = (middle / grid.y) % grid.x, z = middle / (uint64_t(grid.y) * grid.x);
    chosen.push_back({x + grid.x * (y + uint64_t(grid.y) * z), size});
  }
  return chosen;
}

Dim3 position_of(uint64_t i, Dim3 g) {
  return Dim3{uint32_t(i % g.x), uint32_t((i / g.x) % g.y), uint32_t(i / (uint64_t(g.x) * g.y))};
}

LaunchProfile extrapolate(std::vector<ThreadgroupProfile> samples, uint64_t groups, uint64_t sample,
                          const LaunchContext& context, bool y_alike) {
  LaunchProfile p;
  p.threadgroups = groups;
  p.sampling = sample == 0 || sample >= groups
                   ? fmt::format("all {} threadgroups executed", groups)
                   : fmt::format("{} of {} threadgroups executed, the middle one of each of {} equal ranges of the "
                                 "{}; counts scaled by each range's size",
                                 samples.size(), groups, samples.size(),
                                 y_alike ? "threadgroups ordered y fastest (threadgroups differing only in y do "
                                           "alike work)"
                                         : "linear threadgroup index");
  std::sort(samples.begin(), samples.end(), [&](const ThreadgroupProfile& a, const ThreadgroupProfile& b) {
    auto linear = [&](Dim3 d) { return (uint64_t(d.z) * context.grid.y + d.y) * context.grid.x + d.x; };
    return linear(a.position) < linear(b.position);
  });
  for (const auto& b : context.buffers) p.traffic.push_back(BufferTraffic{b.index, 0, 0});
  for (const ThreadgroupProfile& t : samples) {
    const double w = double(t.represents);
    for (uint32_t op = 0; op < profile::kOpCount; ++op) p.ops[op] += w * t.ops[op];
    for (size_t i = 0; i < t.traffic.size(); ++i) {
      p.traffic[i].bytes_read += t.represents * t.traffic[i].bytes_read;
      p.traffic[i].bytes_written += t.represents * t.traffic[i].bytes_written;
    }
    p.device_bytes_read_past_l1 += t.represents * t.device_bytes_read_past_l1;
    p.threadgroup_bytes_read += t.represents * t.threadgroup_bytes_read;
    p.threadgroup_bytes_written += t.represents * t.threadgroup_bytes_written;
    p.threadgroup_memory_bytes = std::max(p.threadgroup_memory_bytes, t.threadgroup_memory_bytes);
  }
  p.samples = std::move(samples);
  p.registers_per_thread = context.profile->registers_of(context.kernel);
  p.simdgroups_per_threadgroup = static_cast<uint32_t>((context.group.volume() + abi::kSimdWidth - 1) / abi::kSimdWidth);
  return p;
}

}  // namespace

LaunchResult launch(const Module& module, std::string_view entry, const LaunchOptions& options) {
  auto start = std::chrono::steady_clock::now();
  const auto& loaded = static_cast<const LoadedModule&>(module);
  const KernelSignature* kernel = module.find(entry);
  if (!kernel)
    throw LaunchError(fmt::format("no kernel named '{}' (kernels in this file: {})", entry, list_kernels(module)));
  validate(module, *kernel, options);

  LaunchContext context;
  context.module = &loaded;
  context.entry = loaded.entry(entry);
  context.kernel = kernel->name;
  context.grid = options.threadgroups;
  context.group = options.threads_per_threadgroup;
  context.detectors = options.detectors;
  context.tensor_layout_seed = options.tensor_layout_seed;
  context.instrumented = module.instrumented();
  context.lockstep = options.lockstep;
  if (options.lockstep && !context.instrumented)
    throw LaunchError(fmt::format("kernel {}: lockstep lanes need a module compiled with instrumentation (its "
                                  "threadgroup accesses are where the lanes take turns: CompileOptions::instrument, "
                                  "or drop mfagen exec --no-detectors)",
                                  kernel->name));
  for (auto [index, bytes] : options.threadgroup_bytes) context.threadgroup_buffers.emplace_back(index, bytes);
  if (options.profile.enabled) {
    context.profile = loaded.profile_table();
    if (!context.profile)
      throw LaunchError(fmt::format("kernel {}: profiling needs a module compiled for it (CompileOptions::profile)",
                                    kernel->name));
  }

  // Each buffer gets its own allocation with redzones, so an access just past
  // its end never lands in a neighbour.
  std::vector<std::vector<std::byte>> storage;
  for (const BufferBinding& b : options.buffers) {
    std::vector<std::byte>& copy = storage.emplace_back(b.data.size() + 2 * kRedzone, std::byte{0});
    std::memcpy(copy.data() + kRedzone, b.data.data(), b.data.size());
    LaunchContext::DeviceBuffer d;
    d.guard_begin = reinterpret_cast<uintptr_t>(copy.data());
    d.begin = d.guard_begin + kRedzone;
    d.end = d.begin + b.data.size();
    d.guard_end = d.end + kRedzone;
    d.index = b.index;
    context.buffers.push_back(d);
    context.buffer_addresses[b.index] = d.begin;
  }

  FindingSink findings(options.max_findings);
  const uint64_t groups = options.threadgroups.volume();
  // Without profiling every threadgroup runs; with it, a sample may.
  const auto& y_alike_entries = options.profile.y_alike_entries;
  const bool y_alike = std::find(y_alike_entries.begin(), y_alike_entries.end(), entry) != y_alike_entries.end();
  uint64_t sample = options.profile.enabled ? options.profile.sample_threadgroups : 0;
  // Alike in y: one threadgroup per (x, z) already stands for its column exactly.
  if (y_alike && sample) sample = std::min<uint64_t>(sample, groups / options.threadgroups.y);
  const std::vector<Sampled> chosen = sample && sample < groups
                                          ? choose_threadgroups(groups, sample, options.threadgroups, y_alike)
                                          : std::vector<Sampled>{};
  const uint64_t to_run = chosen.empty() ? groups : chosen.size();
  unsigned workers = options.workers ? options.workers : std::max(1u, std::thread::hardware_concurrency());
  workers = static_cast<unsigned>(std::min<uint64_t>(workers, to_run));
  std::vector<ThreadgroupProfile> profiles;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex merge_mutex;
  std::string fatal;
  std::vector<BufferTraffic> traffic;
  for (const auto& b : context.buffers) traffic.push_back(BufferTraffic{b.index, 0, 0});

  auto work = [&] {
    ThreadgroupRunner runner(context, findings);
    const Dim3 g = options.threadgroups;
    std::vector<ThreadgroupProfile> mine;
    for (uint64_t n = next++; n < to_run && !stop; n = next++) {
      const Sampled which = chosen.empty() ? Sampled{n, 1} : chosen[n];
      if (!runner.run(position_of(which.index, g))) {
        stop = true;
        std::lock_guard lock(merge_mutex);
        if (fatal.empty()) fatal = runner.fatal_error();
      }
      if (context.profile) {
        mine.push_back(runner.take_profile());
        mine.back().represents = which.represents;
      }
    }
    std::lock_guard lock(merge_mutex);
    for (ThreadgroupProfile& p : mine) profiles.push_back(std::move(p));
    for (size_t i = 0; i < traffic.size(); ++i) {
      traffic[i].bytes_read += runner.traffic()[i].bytes_read;
      traffic[i].bytes_written += runner.traffic()[i].bytes_written;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (!fatal.empty()) throw LaunchError(fatal);

  for (size_t i = 0; i < options.buffers.size(); ++i)
    std::memcpy(options.buffers[i].data.data(), storage[i].data() + kRedzone, options.buffers[i].data.size());

  LaunchResult result;
  result.findings_total = findings.total();
  result.findings = findings.take();
  if (module.instrumented()) {
    result.traffic = traffic;
    for (const BufferTraffic& t : traffic) {
      result.device_bytes_read += t.bytes_read;
      result.device_bytes_written += t.bytes_written;
    }
  }
  if (context.profile) result.profile = extrapolate(std::move(profiles), groups, sample, context, y_alike);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace mfagen::cpu
