// Runs the threads of one threadgroup at a time as cooperative fibers on the
// calling OS thread: 32-lane simdgroups, barriers and simd collectives switch
// fibers until every participant has arrived. Also owns the threadgroup
// memory arena and the detectors that watch it (DESIGN.md section 7).
#pragma once

#include <boost/context/detail/fcontext.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "finding_sink.h"
#include "loaded_module.h"
#include "mfagen/cpu/backend.h"
#include "mfagen/cpu/kernel_abi.h"

namespace mfagen::cpu {

// Read-only description of one launch, shared by all workers.
struct LaunchContext {
  const LoadedModule* module = nullptr;
  abi::EntryFn entry = nullptr;
  std::string kernel;
  Dim3 grid;  // threadgroups per grid
  Dim3 group;  // threads per threadgroup
  struct DeviceBuffer {
    uintptr_t begin = 0, end = 0;
    uintptr_t guard_begin = 0, guard_end = 0;  // allocation incl. redzones
    uint32_t index = 0;
  };
  std::vector<DeviceBuffer> buffers;
  std::array<uint64_t, abi::kMaxBufferIndex> buffer_addresses{};
  std::vector<std::pair<uint32_t, uint64_t>> threadgroup_buffers;  // (index, bytes)
  Detectors detectors;
  bool instrumented = false;
  uint32_t tensor_layout_seed = 0;  // LaunchOptions::tensor_layout_seed
  bool lockstep = false;            // LaunchOptions::lockstep
  const ProfileTable* profile = nullptr;  // set when profiling
};

class ThreadgroupRunner {
 public:
  static constexpr uint64_t kThreadgroupMemoryLimit = 32768;

  ThreadgroupRunner(const LaunchContext& context, FindingSink& findings);
  ~ThreadgroupRunner();
  ThreadgroupRunner(const ThreadgroupRunner&) = delete;
  ThreadgroupRunner& operator=(const ThreadgroupRunner&) = delete;

  // Runs every thread of threadgroup `position`; false if the launch must stop
  // (see fatal_error()).
  bool run(Dim3 position);
  const std::string& fatal_error() const { return fatal_error_; }
  const std::vector<BufferTraffic>& traffic() const { return traffic_; }
  // Profiling: what the threadgroup run last issued (then its counters are reset).
  ThreadgroupProfile take_profile();

  // Hooks called from kernel code (through hooks.cpp) on this OS thread.
  const void* access(const void* address, uint64_t size, uint32_t flags, const char* loc);
  void threadgroup_barrier(uint32_t mem_flags, const void* site);
  void simdgroup_barrier(const void* site);
  const void* simd_exchange(const void* value, uint32_t bytes, uint32_t* active_mask, const void* site);
  void* threadgroup_alloc(uint32_t site, uint64_t size, uint64_t align, const char* name);
  uint32_t current_lane() const { return threads_[current_].lane; }
  // An emulated operation's traffic counted as the GPU moves it (kernel_abi.h).
  void traffic_pause(bool paused) { threads_[current_].reads_uncounted = paused; }
  void traffic_add(const void* operand, uint64_t bytes);
  void scope_position(uint32_t* simdgroup, uint32_t* simdgroups) const;
  void* scope_slots(uint32_t bytes);
  uint32_t tensor_layout_seed() const { return context_.tensor_layout_seed; }
  void tensor_finding(const char* what, uint32_t a, uint32_t b, const void* site);
  uint32_t* profile_counters(uint32_t function);

  static ThreadgroupRunner* current();

 private:
  enum class State : uint8_t { runnable, at_barrier, in_collective, finished };
  struct KernelThread {
    boost::context::detail::fcontext_t context = nullptr;
    State state = State::runnable;
    uint32_t simd = 0, lane = 0;
    const void* wait_site = nullptr;
    uint32_t barrier_flags = 0;
    bool reads_uncounted = false;  // __mf_traffic_pause: reads checked, not added to the byte counters
    abi::LaunchArgs args{};
  };
  // Lanes that reach the same collective call site form one partition; lanes
  // in divergent branches reach different sites, as on the GPU.
  struct Partition {
    const void* site = nullptr;
    uint32_t bytes = 0;
    uint32_t mask = 0;
  };
  struct SimdGroup {
    uint32_t lanes = 0;           // lanes that exist (the last group may be partial)
    uint32_t arrived_mask = 0;    // lanes waiting in an open collective
    uint32_t generation = 0;      // collective rounds completed so far
    uint32_t epoch = 0;           // simdgroup barrier interval (race detector)
    std::array<std::vector<Partition>, 2> partitions;   // per round parity
    std::array<std::vector<std::vector<std::byte>>, 2> slots;  // per partition: 32 lanes x bytes
    std::array<uint32_t, abi::kSimdWidth> lane_mask{};  // result: active mask seen by each lane
  };
  struct Allocation {
    uint64_t offset = 0, size = 0;
    std::string name;
    uint32_t site = 0;
  };
  // Per-byte shadow of threadgroup memory for the race and uninit detectors.
  struct Shadow {
    uint32_t writer_tg_epoch = 0, writer_sg_epoch = 0, reader_tg_epoch = 0, reader_sg_epoch = 0;
    uint16_t writer = kNobody, reader = kNobody;
    bool initialized = false, many_readers = false;
    // With many readers in the interval: whether they are all of one
    // simdgroup (the last reader's), and whether two of them read since that
    // simdgroup's last simdgroup_barrier (which orders its lanes' accesses).
    bool readers_in_one_simd = true, many_readers_in_sg_epoch = false;
  };
  static constexpr uint16_t kNobody = 0xffff;

  void prepare_threads(Dim3 position);
  void schedule();
  bool release_blocked();
  void complete_collective(SimdGroup& group);
  void resume(uint32_t index);
  void yield();
  static void fiber_main(boost::context::detail::transfer_t transfer);

  void check_device(uintptr_t address, uint64_t size, uint32_t flags, const char* loc, bool generic, bool& redirect);
  void note_reader(Shadow& s, uint32_t sg_epoch) const;
  bool readers_conflict(const Shadow& s, uint32_t sg_epoch) const;
  void check_threadgroup(uintptr_t address, uint64_t size, uint32_t flags, const char* loc, bool& redirect);
  bool conflicts(uint16_t other, uint32_t other_tg_epoch, uint32_t other_sg_epoch) const;
  void report(FindingKind kind, uint64_t address, std::string location, std::string region, std::string detail,
              uint32_t thread);
  std::string site_location(const void* site) const;
  std::string describe_threadgroup(uintptr_t address) const;
  void abort_threadgroup(std::string why);
  static constexpr uint64_t kNoRoom = ~uint64_t(0);
  uint64_t place(uint64_t size, uint64_t align, std::string name, uint32_t site);

  const LaunchContext& context_;
  FindingSink& findings_;
  std::vector<KernelThread> threads_;
  std::vector<SimdGroup> simds_;
  uint32_t current_ = 0;
  boost::context::detail::fcontext_t scheduler_ = nullptr;
  bool aborted_ = false;
  std::string fatal_error_;
  Dim3 position_;

  std::byte* stacks_ = nullptr;
  size_t stacks_bytes_ = 0;

  std::vector<std::byte> arena_;
  std::vector<Shadow> shadow_;
  std::vector<Allocation> allocations_;
  uint64_t arena_next_ = 0, arena_used_bytes_ = 0;
  uint32_t tg_epoch_ = 0;
  std::vector<std::byte> sink_;
  std::vector<std::byte> scope_slots_;  // __mf_scope_slots: threads x abi::kMaxSimdExchangeBytes

  std::vector<BufferTraffic> traffic_;
  // check_device's shortcut: the buffer the last device access hit, tried
  // first when no two bound buffers overlap (then it is also the first that
  // contains the access, which a scan would have found).
  size_t last_buffer_hit_ = 0;
  bool buffers_disjoint_ = true;

  // Profiling: per function (index into the module's table), one counter per
  // thread and counted block, thread-major; functions entered this threadgroup.
  const ProfileTable* counter_table_ = nullptr;  // the module's tables, when compiled for profiling
  std::vector<std::vector<uint32_t>> block_counters_;
  std::vector<uint32_t> entered_functions_;
  uint64_t threadgroup_bytes_read_ = 0, threadgroup_bytes_written_ = 0;
  std::vector<BufferTraffic> traffic_at_start_;
  // Profiling: the device lines (buffer, offset / kL1LineBytes) this
  // threadgroup read; their count is what it reads past its core's L1.
  std::unordered_set<uint64_t> lines_read_;
};

}  // namespace mfagen::cpu
