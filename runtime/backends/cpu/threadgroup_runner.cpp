#include "threadgroup_runner.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "subprocess.h"
#include "toolchain.h"

namespace mfagen::cpu {
namespace ctx = boost::context::detail;
namespace {

// A thread's stack. Reserved, not committed (MAP_NORESERVE): metal-flash-attention's
// sgemm, its 8x8 fragments held as vec<float, 64>, keeps a 263 KB frame here.
// Kernels are compiled with stack-clash protection (compiler.cpp), so a deeper
// frame probes its pages in order and stops at the guard page instead of
// writing into the next thread's stack.
constexpr size_t kStackBytes = 1024 * 1024;
constexpr size_t kGuardBytes = 4096;
constexpr uint64_t kRedzoneBytes = 256;  // gap between threadgroup allocations (catches overshoots)
constexpr uint32_t kMemThreadgroup = 2;  // mem_flags::mem_threadgroup
constexpr size_t kSinkBytes = 64 * 1024;  // where out-of-bounds accesses are redirected
constexpr std::byte kUninitializedPattern{0xa5};
// A read made while the thread's reads are paused (__mf_traffic_pause): a bit
// above the ABI's access flags, never set by a kernel.
constexpr uint32_t kUncountedRead = 1u << 30;

thread_local ThreadgroupRunner* tls_runner = nullptr;

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// Source location of a return address inside a kernel module, skipping
// frames of the Metal stand-in so that the user's call site is reported.
std::string symbolize(const void* site) {
  static std::mutex mutex;
  static std::map<const void*, std::string> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(site); it != cache.end()) return it->second;
  Dl_info info{};
  std::string result = fmt::format("{}", site);
  if (dladdr(site, &info) && info.dli_fname) {
    uintptr_t offset = reinterpret_cast<uintptr_t>(site) - reinterpret_cast<uintptr_t>(info.dli_fbase) - 1;
    try {
      ProcessResult out = run_process({"llvm-symbolizer-16", "--inlining", "--obj", info.dli_fname,
                                       fmt::format("0x{:x}", offset)});
      std::string standin = toolchain().standin_dir.string();
      std::vector<std::string> lines;
      size_t start = 0;
      while (start < out.output.size()) {
        size_t end = out.output.find('\n', start);
        if (end == std::string::npos) end = out.output.size();
        lines.push_back(out.output.substr(start, end - start));
        start = end + 1;
      }
      for (size_t i = 1; i < lines.size(); i += 2) {
        if (lines[i].empty() || lines[i].starts_with("??")) continue;
        if (lines[i].find(standin) != std::string::npos || lines[i].find("mfagen_standin") != std::string::npos)
          continue;
        result = lines[i];
        break;
      }
    } catch (const std::exception&) {
      // keep the raw address
    }
  }
  cache.emplace(site, result);
  return result;
}

}  // namespace

ThreadgroupRunner* ThreadgroupRunner::current() { return tls_runner; }

ThreadgroupRunner::ThreadgroupRunner(const LaunchContext& context, FindingSink& findings)
    : context_(context), findings_(findings) {
  uint32_t count = static_cast<uint32_t>(context.group.volume());
  threads_.resize(count);
  simds_.resize((count + abi::kSimdWidth - 1) / abi::kSimdWidth);
  stacks_bytes_ = size_t(count) * kStackBytes;
  void* memory = mmap(nullptr, stacks_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) throw LaunchError("cannot allocate fiber stacks");
  stacks_ = static_cast<std::byte*>(memory);
  for (uint32_t i = 0; i < count; ++i) mprotect(stacks_ + size_t(i) * kStackBytes, kGuardBytes, PROT_NONE);
  arena_.assign(2 * kThreadgroupMemoryLimit + 64 * kRedzoneBytes, kUninitializedPattern);  // room for gaps
  shadow_.resize(arena_.size());
  sink_.resize(kSinkBytes);
  scope_slots_.resize(size_t(count) * abi::kMaxSimdExchangeBytes);
  for (const auto& b : context.buffers) traffic_.push_back(BufferTraffic{b.index, 0, 0});
  for (size_t i = 0; i < context.buffers.size(); ++i)
    for (size_t j = i + 1; j < context.buffers.size(); ++j)
      if (context.buffers[i].begin < context.buffers[j].end && context.buffers[j].begin < context.buffers[i].end)
        buffers_disjoint_ = false;
  // A module compiled for profiling counts whether or not this launch
  // collects the counts, so its counters always need somewhere to go.
  counter_table_ = context.profile ? context.profile : (context.module ? context.module->profile_table() : nullptr);
  if (counter_table_) block_counters_.resize(counter_table_->functions.size());
}

ThreadgroupRunner::~ThreadgroupRunner() { munmap(stacks_, stacks_bytes_); }

void ThreadgroupRunner::prepare_threads(Dim3 position) {
  position_ = position;
  std::fill(scope_slots_.begin(), scope_slots_.end(), std::byte{0});
  const Dim3 g = context_.group;
  const uint32_t count = static_cast<uint32_t>(g.volume());
  for (uint32_t i = 0; i < count; ++i) {
    KernelThread& t = threads_[i];
    t.state = State::runnable;
    t.simd = i / abi::kSimdWidth;
    t.lane = i % abi::kSimdWidth;
    t.wait_site = nullptr;
    abi::LaunchArgs& a = t.args;
    std::copy(context_.buffer_addresses.begin(), context_.buffer_addresses.end(), a.buffers);
    const uint32_t local[3] = {i % g.x, (i / g.x) % g.y, i / (g.x * g.y)};
    const uint32_t group[3] = {position.x, position.y, position.z};
    const uint32_t size[3] = {g.x, g.y, g.z};
    const uint32_t grid[3] = {context_.grid.x, context_.grid.y, context_.grid.z};
    for (int d = 0; d < 3; ++d) {
      a.thread_position_in_threadgroup[d] = local[d];
      a.threadgroup_position_in_grid[d] = group[d];
      a.thread_position_in_grid[d] = group[d] * size[d] + local[d];
      a.threads_per_threadgroup[d] = size[d];
      a.threadgroups_per_grid[d] = grid[d];
      a.threads_per_grid[d] = grid[d] * size[d];
    }
    a.thread_index_in_threadgroup = i;
    a.thread_index_in_simdgroup = t.lane;
    a.simdgroup_index_in_threadgroup = t.simd;
    a.simdgroups_per_threadgroup = static_cast<uint32_t>(simds_.size());
    a.threads_per_simdgroup = abi::kSimdWidth;
    t.context = ctx::make_fcontext(stacks_ + size_t(i + 1) * kStackBytes, kStackBytes - kGuardBytes, &fiber_main);
  }
  for (size_t s = 0; s < simds_.size(); ++s) {
    SimdGroup& group = simds_[s];
    group.lanes = std::min<uint32_t>(abi::kSimdWidth, count - uint32_t(s) * abi::kSimdWidth);
    group.arrived_mask = 0;
    group.generation = 0;
    group.epoch = 0;
    group.partitions[0].clear();
    group.partitions[1].clear();
  }
  // Threadgroup memory starts as garbage, as on a GPU; dynamic buffers first.
  std::fill(arena_.begin(), arena_.begin() + static_cast<std::ptrdiff_t>(std::max<uint64_t>(arena_next_, 1)),
            kUninitializedPattern);
  std::fill(shadow_.begin(), shadow_.begin() + static_cast<std::ptrdiff_t>(std::max<uint64_t>(arena_next_, 1)), Shadow{});
  allocations_.clear();
  arena_next_ = 0;
  arena_used_bytes_ = 0;
  tg_epoch_ = 0;
  threadgroup_bytes_read_ = threadgroup_bytes_written_ = 0;
  if (context_.profile) traffic_at_start_ = traffic_;  // take_profile() reports this threadgroup's share
  lines_read_.clear();
  // At most 31 buffers of at most 32 KB in all (checked at launch): they
  // always fit the arena, gaps included.
  for (auto [index, bytes] : context_.threadgroup_buffers) {
    uint64_t offset = place(bytes, 16, fmt::format("threadgroup({})", index), ~0u);
    for (KernelThread& t : threads_)
      t.args.threadgroup_buffers[index] = reinterpret_cast<uint64_t>(arena_.data() + offset);
  }
}

// Places an allocation in the arena, followed by a gap at least as large as
// it (up to 4 KB) so that overshooting indices land in no allocation.
uint64_t ThreadgroupRunner::place(uint64_t size, uint64_t align, std::string name, uint32_t site) {
  uint64_t offset = align_up(arena_next_, std::max<uint64_t>(align, 16));
  uint64_t next = offset + size + std::max(kRedzoneBytes, std::min<uint64_t>(size, 4096));
  if (next > arena_.size()) return kNoRoom;
  allocations_.push_back(Allocation{offset, size, std::move(name), site});
  arena_next_ = next;
  arena_used_bytes_ += size;
  return offset;
}

bool ThreadgroupRunner::run(Dim3 position) {
  prepare_threads(position);
  tls_runner = this;
  schedule();
  tls_runner = nullptr;
  return fatal_error_.empty();
}

void ThreadgroupRunner::fiber_main(ctx::transfer_t transfer) {
  ThreadgroupRunner* self = tls_runner;
  self->scheduler_ = transfer.fctx;
  KernelThread& thread = self->threads_[self->current_];
  self->context_.entry(&thread.args);
  self->threads_[self->current_].state = State::finished;
  ctx::jump_fcontext(self->scheduler_, nullptr);  // never resumed
}

void ThreadgroupRunner::resume(uint32_t index) {
  current_ = index;
  ctx::transfer_t back = ctx::jump_fcontext(threads_[index].context, nullptr);
  threads_[index].context = back.fctx;
}

void ThreadgroupRunner::yield() {
  ctx::transfer_t back = ctx::jump_fcontext(scheduler_, nullptr);
  scheduler_ = back.fctx;
}

void ThreadgroupRunner::schedule() {
  aborted_ = false;
  const uint32_t count = static_cast<uint32_t>(threads_.size());
  for (;;) {
    bool ran = false;
    for (uint32_t i = 0; i < count && !aborted_; ++i) {
      if (threads_[i].state != State::runnable) continue;
      resume(i);
      ran = true;
    }
    if (aborted_) return;
    if (ran) continue;
    bool all_finished = std::all_of(threads_.begin(), threads_.end(),
                                    [](const KernelThread& t) { return t.state == State::finished; });
    if (all_finished) return;
    if (!release_blocked()) return;
  }
}

void ThreadgroupRunner::complete_collective(SimdGroup& group) {
  uint32_t parity = group.generation & 1;
  uint32_t base = static_cast<uint32_t>(&group - simds_.data()) * abi::kSimdWidth;
  for (const Partition& part : group.partitions[parity])
    for (uint32_t lane = 0; lane < group.lanes; ++lane)
      if (part.mask & (1u << lane)) group.lane_mask[lane] = part.mask;
  for (uint32_t lane = 0; lane < group.lanes; ++lane)
    if (group.arrived_mask & (1u << lane)) threads_[base + lane].state = State::runnable;
  group.arrived_mask = 0;
  group.generation++;
  group.partitions[group.generation & 1].clear();
  group.epoch++;
}

// Nothing is runnable: complete what can complete, report what cannot.
bool ThreadgroupRunner::release_blocked() {
  // Nothing can run, so every lane that is not in a collective now is
  // inactive for it (returned, or in another branch waiting at a barrier):
  // the collective completes with the lanes that arrived, as on the GPU.
  bool released = false;
  for (SimdGroup& group : simds_) {
    if (!group.arrived_mask) continue;
    complete_collective(group);
    released = true;
  }
  if (released) return true;

  std::vector<uint32_t> waiting, finished;
  for (uint32_t i = 0; i < threads_.size(); ++i) {
    if (threads_[i].state == State::at_barrier) waiting.push_back(i);
    if (threads_[i].state == State::finished) finished.push_back(i);
  }
  if (waiting.empty()) return false;
  const void* site = threads_[waiting.front()].wait_site;
  if (context_.detectors.barrier_divergence) {
    if (!finished.empty())
      report(FindingKind::barrier_divergence, 0, site_location(site), "",
             fmt::format("thread {} returned while {} threads wait at this threadgroup_barrier", finished.front(),
                         waiting.size()),
             finished.front());
    for (uint32_t i : waiting) {
      if (threads_[i].wait_site == site) continue;
      report(FindingKind::barrier_divergence, 0, site_location(threads_[i].wait_site), "",
             fmt::format("thread {} waits at a different threadgroup_barrier than thread {} ({})", i, waiting.front(),
                         site_location(site)),
             i);
      break;
    }
  }
  // Only a barrier that fences threadgroup memory orders it (race detector).
  // With divergent barriers (already reported) one fencing side is enough,
  // so the report is not buried under the races that follow from it.
  bool fences_threadgroup = false;
  for (uint32_t i : waiting) {
    threads_[i].state = State::runnable;
    fences_threadgroup |= (threads_[i].barrier_flags & kMemThreadgroup) != 0;
  }
  if (fences_threadgroup) ++tg_epoch_;
  return true;
}

void ThreadgroupRunner::threadgroup_barrier(uint32_t mem_flags, const void* site) {
  KernelThread& t = threads_[current_];
  t.state = State::at_barrier;
  t.wait_site = site;
  t.barrier_flags = mem_flags;
  yield();
}

void ThreadgroupRunner::simdgroup_barrier(const void* site) {
  uint32_t mask = 0;
  simd_exchange(nullptr, 0, &mask, site);
}

const void* ThreadgroupRunner::simd_exchange(const void* value, uint32_t bytes, uint32_t* active_mask,
                                             const void* site) {
  KernelThread& t = threads_[current_];
  SimdGroup& group = simds_[t.simd];
  if (bytes > abi::kMaxSimdExchangeBytes) {
    abort_threadgroup(fmt::format("simd collective of {} bytes exceeds the supported {}", bytes,
                                  abi::kMaxSimdExchangeBytes));
    return sink_.data();
  }
  const uint32_t parity = group.generation & 1;
  std::vector<Partition>& parts = group.partitions[parity];
  size_t index = 0;
  while (index < parts.size() && !(parts[index].site == site && parts[index].bytes == bytes)) ++index;
  if (index == parts.size()) parts.push_back(Partition{site, bytes, 0});
  auto& areas = group.slots[parity];
  if (areas.size() <= index) areas.resize(index + 1);
  if (areas[index].empty()) areas[index].resize(size_t(abi::kMaxSimdExchangeBytes) * abi::kSimdWidth);
  std::byte* area = areas[index].data();
  if (bytes) std::memcpy(area + size_t(t.lane) * bytes, value, bytes);
  parts[index].mask |= 1u << t.lane;
  group.arrived_mask |= 1u << t.lane;
  t.state = State::in_collective;
  t.wait_site = site;
  uint32_t active = 0;
  for (uint32_t lane = 0; lane < group.lanes; ++lane) {
    const KernelThread& other = threads_[t.simd * abi::kSimdWidth + lane];
    if (other.state != State::finished) active |= 1u << lane;
  }
  if ((group.arrived_mask & active) == active) {
    complete_collective(group);  // the last lane to arrive continues at once
  } else {
    yield();
  }
  *active_mask = group.lane_mask[t.lane];
  return area;
}

uint32_t* ThreadgroupRunner::profile_counters(uint32_t function) {
  const ProfileTable* table = counter_table_;
  if (!table || function >= block_counters_.size()) {
    // Not a module compiled for profiling (a hook it cannot call): abort
    // rather than let it write anywhere.
    abort_threadgroup(fmt::format("kernel {} asked for profile counters of function {} it does not have",
                                  context_.kernel, function));
    return reinterpret_cast<uint32_t*>(sink_.data());
  }
  std::vector<uint32_t>& counters = block_counters_[function];
  const size_t blocks = table->functions[function].blocks;
  if (counters.empty()) counters.assign(threads_.size() * blocks, 0);
  if (std::find(entered_functions_.begin(), entered_functions_.end(), function) == entered_functions_.end())
    entered_functions_.push_back(function);
  return counters.data() + size_t(current_) * blocks;
}

// A simdgroup issues a block as often as its busiest lane ran it: lanes on
// another path are masked, not skipped (docs/profile.md).
ThreadgroupProfile ThreadgroupRunner::take_profile() {
  ThreadgroupProfile p;
  p.position = position_;
  p.threadgroup_bytes_read = threadgroup_bytes_read_;
  p.threadgroup_bytes_written = threadgroup_bytes_written_;
  p.threadgroup_memory_bytes = arena_used_bytes_;
  uint64_t bytes_read = 0;
  for (size_t i = 0; i < traffic_.size(); ++i) {
    p.traffic.push_back(BufferTraffic{traffic_[i].index, traffic_[i].bytes_read - traffic_at_start_[i].bytes_read,
                                      traffic_[i].bytes_written - traffic_at_start_[i].bytes_written});
    bytes_read += p.traffic.back().bytes_read;
  }
  p.device_bytes_read_past_l1 = std::min<uint64_t>(bytes_read, 128 * uint64_t(lines_read_.size()));
  const ProfileTable* table = context_.profile;
  if (!table) return p;
  std::vector<profile::OpCounts> per_simd(simds_.size(), profile::OpCounts{});
  for (uint32_t function : entered_functions_) {
    const ProfileTable::Function& f = table->functions[function];
    std::vector<uint32_t>& counters = block_counters_[function];
    for (size_t s = 0; s < simds_.size(); ++s) {
      const size_t first_thread = s * abi::kSimdWidth, lanes = simds_[s].lanes;
      for (uint32_t b = 0; b < f.blocks; ++b) {
        uint32_t most = 0;
        for (size_t lane = 0; lane < lanes; ++lane) most = std::max(most, counters[(first_thread + lane) * f.blocks + b]);
        if (!most) continue;
        for (auto [op, count] : table->block_ops[f.first_block + b]) per_simd[s][op] += double(most) * count;
      }
    }
    std::fill(counters.begin(), counters.end(), 0u);
  }
  entered_functions_.clear();
  double busiest = -1;
  for (const profile::OpCounts& ops : per_simd) {
    double issued = 0;
    for (uint32_t op = 0; op < profile::kOpCount; ++op) {
      p.ops[op] += ops[op];
      if (!profile::kOpNames[op].ends_with("_bytes")) issued += ops[op];
    }
    if (issued > busiest) busiest = issued, p.busiest_simdgroup = ops;
  }
  return p;
}

void* ThreadgroupRunner::threadgroup_alloc(uint32_t site, uint64_t size, uint64_t align, const char* name) {
  for (const Allocation& a : allocations_)
    if (a.site == site && a.size == size) return arena_.data() + a.offset;
  if (arena_used_bytes_ + size > kThreadgroupMemoryLimit) {
    abort_threadgroup(fmt::format("kernel {} uses more than {} bytes of threadgroup memory (`{}` needs {} more)",
                                  context_.kernel, kThreadgroupMemoryLimit, name, size));
    return sink_.data();
  }
  uint64_t offset = place(size, align, name, site);
  if (offset == kNoRoom) {
    abort_threadgroup(fmt::format("kernel {} declares more threadgroup variables than the cpu backend can guard "
                                  "(`{}` does not fit)",
                                  context_.kernel, name));
    return sink_.data();
  }
  return arena_.data() + offset;
}

void ThreadgroupRunner::abort_threadgroup(std::string why) {
  aborted_ = true;
  if (!why.empty() && fatal_error_.empty()) fatal_error_ = std::move(why);
  if (threads_[current_].state != State::finished) {
    // Park the current fiber for good; its stack is reused next threadgroup.
    threads_[current_].state = State::finished;
    yield();
  }
}

// ---- detectors ----

void ThreadgroupRunner::traffic_add(const void* operand, uint64_t bytes) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(operand);
  const uintptr_t arena = reinterpret_cast<uintptr_t>(arena_.data());
  if (address >= arena && address < arena + arena_.size()) {
    threadgroup_bytes_read_ += bytes;
    return;
  }
  for (size_t i = 0; i < context_.buffers.size(); ++i)
    if (address >= context_.buffers[i].begin && address < context_.buffers[i].end) {
      traffic_[i].bytes_read += bytes;
      return;
    }
}

const void* ThreadgroupRunner::access(const void* pointer, uint64_t size, uint32_t flags, const char* loc) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  const uint32_t space = flags & abi::kSpaceMask;
  bool redirect = false;
  const uintptr_t arena = reinterpret_cast<uintptr_t>(arena_.data());
  bool in_arena = address >= arena && address < arena + arena_.size();
  if (threads_[current_].reads_uncounted) flags |= kUncountedRead;
  if (space == abi::kSpaceThreadgroup || (space == abi::kSpaceGeneric && in_arena)) {
    // Lockstep (LaunchOptions::lockstep): every other runnable thread takes
    // its turn, up to its own next threadgroup access, before this one is made.
    if (context_.lockstep) yield();
    if ((flags & abi::kRead) && !(flags & kUncountedRead)) threadgroup_bytes_read_ += size;
    if (flags & abi::kWrite) threadgroup_bytes_written_ += size;
    check_threadgroup(address, size, flags, loc, redirect);
  } else if (space == abi::kSpaceDevice || space == abi::kSpaceConstant || space == abi::kSpaceGeneric) {
    check_device(address, size, flags, loc, space == abi::kSpaceGeneric, redirect);
  }
  if (redirect && size <= sink_.size()) return sink_.data();
  return pointer;
}

void ThreadgroupRunner::check_device(uintptr_t address, uint64_t size, uint32_t flags, const char* loc, bool generic,
                                     bool& redirect) {
  // A generic pointer into thread memory (the fibers' stacks) is private
  // memory, which no detector tracks: answered before the scans below, which
  // would all miss it, as they did on most accesses of the stand-in's
  // bfloat members and TensorOps emulation (a quarter of a TensorOps test's
  // time was spent here).
  const uintptr_t stacks = reinterpret_cast<uintptr_t>(stacks_);
  if (generic && address >= stacks && address < stacks + stacks_bytes_) return;
  const auto contains = [&](size_t i) {
    return address >= context_.buffers[i].begin && address + size <= context_.buffers[i].end;
  };
  size_t first = buffers_disjoint_ && last_buffer_hit_ < context_.buffers.size() && contains(last_buffer_hit_)
                     ? last_buffer_hit_
                     : 0;
  for (size_t i = first; i < context_.buffers.size(); ++i) {
    const auto& b = context_.buffers[i];
    if (contains(i)) {
      last_buffer_hit_ = i;
      if ((flags & abi::kRead) && !(flags & kUncountedRead)) traffic_[i].bytes_read += size;
      if (flags & abi::kWrite) traffic_[i].bytes_written += size;
      if ((flags & abi::kRead) && context_.profile && size > 0) {
        // Apple GPU caches move 128-byte lines (assumption; docs/profile.md).
        constexpr uint64_t kL1LineBytes = 128;
        const uint64_t first = (address - b.begin) / kL1LineBytes, last = (address - b.begin + size - 1) / kL1LineBytes;
        for (uint64_t line = first; line <= last; ++line) lines_read_.insert(uint64_t(i) << 48 | line);
      }
      return;
    }
  }
  if ((flags & abi::kSpaceMask) != abi::kSpaceDevice) {
    for (auto [begin, end] : context_.module->image_ranges())
      if (address >= begin && address + size <= end) return;  // program-scope constant data
  }
  const LaunchContext::DeviceBuffer* nearest = nullptr;
  for (const auto& b : context_.buffers)
    if (address + size > b.guard_begin && address < b.guard_end) nearest = &b;
  if (generic && !nearest) return;  // a generic pointer to private memory
  if (!context_.detectors.out_of_bounds) return;
  redirect = true;
  std::string region;
  if (nearest) {
    uint64_t length = nearest->end - nearest->begin;
    region = address >= nearest->begin
                 ? fmt::format("buffer({}) offset {} ({} bytes accessed, buffer is {} bytes)", nearest->index,
                               address - nearest->begin, size, length)
                 : fmt::format("{} bytes before buffer({}) ({} bytes)", nearest->begin - address, nearest->index, length);
  } else {
    region = "not inside any bound buffer";
  }
  report(FindingKind::out_of_bounds, address, loc ? loc : "", region,
         fmt::format("{} of {} bytes through a {} pointer", flags & abi::kWrite ? "write" : "read", size,
                     (flags & abi::kSpaceMask) == abi::kSpaceConstant ? "constant" : "device"),
         current_);
}

// Records a read of s by the current thread (before s.reader becomes it).
// Lanes of one simdgroup are ordered by its simdgroup_barrier (the
// simdgroup epoch), threads of different simdgroups only by a
// threadgroup_barrier (the threadgroup epoch).
void ThreadgroupRunner::note_reader(Shadow& s, uint32_t sg_epoch) const {
  const uint32_t my_simd = threads_[current_].simd;
  if (s.reader == kNobody || s.reader_tg_epoch != tg_epoch_) {
    s.many_readers = false;
    s.readers_in_one_simd = true;
    s.many_readers_in_sg_epoch = false;
    return;
  }
  const bool same_simd = threads_[s.reader].simd == my_simd;
  if (!same_simd) s.readers_in_one_simd = false;
  if (same_simd && s.reader_sg_epoch != sg_epoch) s.many_readers_in_sg_epoch = false;  // a new simdgroup interval
  if (s.reader == current_) return;
  s.many_readers = true;
  if (same_simd && s.reader_sg_epoch == sg_epoch) s.many_readers_in_sg_epoch = true;
}

// Whether a write by the current thread conflicts with the many readers of
// s in this threadgroup interval.
bool ThreadgroupRunner::readers_conflict(const Shadow& s, uint32_t sg_epoch) const {
  if (!s.readers_in_one_simd) return true;  // some reader is of another simdgroup than the writer
  if (threads_[s.reader].simd != threads_[current_].simd) return true;
  if (s.reader_sg_epoch != sg_epoch) return false;  // every read was before the simdgroup_barrier
  return s.reader != current_ || s.many_readers_in_sg_epoch;
}

bool ThreadgroupRunner::conflicts(uint16_t other, uint32_t other_tg_epoch, uint32_t other_sg_epoch) const {
  if (other == kNobody || other == current_ || other_tg_epoch != tg_epoch_) return false;
  uint32_t my_simd = threads_[current_].simd;
  uint32_t other_simd = threads_[other].simd;
  return other_simd != my_simd || other_sg_epoch == simds_[my_simd].epoch;
}

std::string ThreadgroupRunner::describe_threadgroup(uintptr_t address) const {
  uint64_t offset = address - reinterpret_cast<uintptr_t>(arena_.data());
  for (const Allocation& a : allocations_)
    if (offset >= a.offset && offset < a.offset + a.size)
      return fmt::format("threadgroup `{}` offset {} of {} bytes", a.name, offset - a.offset, a.size);
  return fmt::format("threadgroup memory offset {}", offset);
}

void ThreadgroupRunner::check_threadgroup(uintptr_t address, uint64_t size, uint32_t flags, const char* loc,
                                          bool& redirect) {
  const uintptr_t arena = reinterpret_cast<uintptr_t>(arena_.data());
  const Allocation* inside = nullptr;
  for (const Allocation& a : allocations_)
    if (address >= arena + a.offset && address + size <= arena + a.offset + a.size) inside = &a;
  if (!inside) {
    if (!context_.detectors.out_of_bounds) return;
    redirect = true;
    const Allocation* nearest = nullptr;
    for (const Allocation& a : allocations_)
      if (!nearest || (address >= arena + a.offset)) nearest = &a;
    std::string region =
        nearest ? fmt::format("threadgroup `{}` offset {} ({} bytes accessed, allocation is {} bytes)", nearest->name,
                              int64_t(address - arena) - int64_t(nearest->offset), size, nearest->size)
                : "no threadgroup memory is allocated";
    report(FindingKind::out_of_bounds, address, loc ? loc : "", region,
           fmt::format("{} of {} bytes through a threadgroup pointer", flags & abi::kWrite ? "write" : "read", size),
           current_);
    return;
  }
  const bool races = context_.detectors.data_races && !(flags & abi::kAtomic);
  const uint32_t sg_epoch = simds_[threads_[current_].simd].epoch;
  const uint64_t first = address - arena;
  for (uint64_t i = first; i < first + size; ++i) {
    Shadow& s = shadow_[i];
    if ((flags & abi::kRead) && !(flags & abi::kAtomic)) {
      if (!s.initialized && context_.detectors.uninitialized_reads) {
        report(FindingKind::uninitialized_read, arena + i, loc ? loc : "", describe_threadgroup(arena + i),
               "read before any thread wrote it", current_);
        break;
      }
      if (races && conflicts(s.writer, s.writer_tg_epoch, s.writer_sg_epoch)) {
        report(FindingKind::data_race, arena + i, loc ? loc : "", describe_threadgroup(arena + i),
               fmt::format("read conflicts with a write by thread {} in the same barrier interval", s.writer),
               current_);
        break;
      }
      note_reader(s, sg_epoch);
      s.reader = static_cast<uint16_t>(current_);
      s.reader_tg_epoch = tg_epoch_;
      s.reader_sg_epoch = sg_epoch;
    }
    if (flags & abi::kWrite) {
      if (races && conflicts(s.writer, s.writer_tg_epoch, s.writer_sg_epoch)) {
        report(FindingKind::data_race, arena + i, loc ? loc : "", describe_threadgroup(arena + i),
               fmt::format("write conflicts with a write by thread {} in the same barrier interval", s.writer),
               current_);
        break;
      }
      const bool other_readers = s.many_readers && s.reader_tg_epoch == tg_epoch_ && readers_conflict(s, sg_epoch);
      if (races && (other_readers || conflicts(s.reader, s.reader_tg_epoch, s.reader_sg_epoch)) &&
          !(flags & abi::kRead)) {
        const std::string reader =
            s.reader != current_ ? fmt::format("thread {}", s.reader) : std::string("another thread");
        report(FindingKind::data_race, arena + i, loc ? loc : "", describe_threadgroup(arena + i),
               fmt::format("write conflicts with a read by {} in the same barrier interval", reader), current_);
        break;
      }
      s.writer = static_cast<uint16_t>(current_);
      s.writer_tg_epoch = tg_epoch_;
      s.writer_sg_epoch = sg_epoch;
      s.initialized = true;
    }
  }
}

void ThreadgroupRunner::scope_position(uint32_t* simdgroup, uint32_t* simdgroups) const {
  *simdgroup = threads_[current_].simd;
  *simdgroups = static_cast<uint32_t>(simds_.size());
}

// The table outlives every thread of the threadgroup; what a thread writes
// there is read by the others only after the barrier that follows (the
// stand-in's scope rendezvous), so it needs no shadow of its own.
void* ThreadgroupRunner::scope_slots(uint32_t bytes) {
  if (bytes > abi::kMaxSimdExchangeBytes) {
    abort_threadgroup(fmt::format("tensor-op scope exchange of {} bytes exceeds the supported {}", bytes,
                                  abi::kMaxSimdExchangeBytes));
    return sink_.data();
  }
  return scope_slots_.data();
}

void ThreadgroupRunner::tensor_finding(const char* what, uint32_t a, uint32_t b, const void* site) {
  if (!context_.detectors.tensor_ops) return;
  std::string detail = what;
  if (a != ~0u) detail += fmt::format(" ({}", a) + (b != ~0u ? fmt::format(", {})", b) : std::string(")"));
  report(FindingKind::tensor_op, 0, site_location(site), "", std::move(detail), current_);
}

std::string ThreadgroupRunner::site_location(const void* site) const { return site ? symbolize(site) : ""; }

void ThreadgroupRunner::report(FindingKind kind, uint64_t address, std::string location, std::string region,
                               std::string detail, uint32_t thread) {
  if (!findings_.first_time(kind, location)) return;
  Finding f;
  f.kind = kind;
  f.kernel = context_.kernel;
  f.threadgroup = position_;
  const auto& pos = threads_[thread].args.thread_position_in_threadgroup;
  f.thread = Dim3{pos[0], pos[1], pos[2]};
  f.thread_index = thread;
  f.address = address;
  f.region = std::move(region);
  f.location = std::move(location);
  f.detail = std::move(detail);
  findings_.report(std::move(f));
}

}  // namespace mfagen::cpu
