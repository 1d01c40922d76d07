// launch(): validates a launch as Metal would, copies buffers into guarded
// allocations, runs threadgroups on a pool of workers and merges what the
// detectors and counters saw.
#include <fmt/format.h>

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
  context.instrumented = module.instrumented();
  for (auto [index, bytes] : options.threadgroup_bytes) context.threadgroup_buffers.emplace_back(index, bytes);

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
  unsigned workers = options.workers ? options.workers : std::max(1u, std::thread::hardware_concurrency());
  workers = static_cast<unsigned>(std::min<uint64_t>(workers, groups));
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex merge_mutex;
  std::string fatal;
  std::vector<BufferTraffic> traffic;
  for (const auto& b : context.buffers) traffic.push_back(BufferTraffic{b.index, 0, 0});

  auto work = [&] {
    ThreadgroupRunner runner(context, findings);
    const Dim3 g = options.threadgroups;
    for (uint64_t i = next++; i < groups && !stop; i = next++) {
      Dim3 position{uint32_t(i % g.x), uint32_t((i / g.x) % g.y), uint32_t(i / (uint64_t(g.x) * g.y))};
      if (!runner.run(position)) {
        stop = true;
        std::lock_guard lock(merge_mutex);
        if (fatal.empty()) fatal = runner.fatal_error();
      }
    }
    std::lock_guard lock(merge_mutex);
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
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace mfagen::cpu
