// LaunchPlan: a DispatchPlan (mfagen/forward_dispatch.h) in fixed storage,
// made per call by Library::launch_plan without touching the heap. Entry
// names are views into the Library's KernelEntry, so a LaunchPlan is valid
// while the Library it was planned from is alive (and not moved-from by copy).
//
// It holds exactly what plan_forward() computes: the launches in order (entry,
// grid, threadgroup size, threadgroup memory, bound buffer indices), every
// buffer's smallest size (scratch buffers flagged for the backend), the
// params bytes and the call's shape. to_dispatch_plan() converts it for
// backends taking a DispatchPlan; tests/runtime asserts both are equal for
// every kernel kind.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mfagen/forward_dispatch.h"

namespace mfagen {

struct FunctionConstant;

struct LaunchPlan {
  static constexpr size_t kMaxLaunches = 6;      // backward: mask_mod blocks, preprocess, dK/dV, dQ, d_sinks, d_captures
  static constexpr size_t kMaxBuffers = 31;      // Metal's indices 0..30 (DESIGN.md section 8)
  static constexpr size_t kMaxParamsBytes = 256; // the largest AttentionParams is ~200 bytes

  struct Launch {
    std::string_view entry;
    std::array<uint32_t, 3> threadgroups{1, 1, 1};
    std::array<uint32_t, 3> threads_per_threadgroup{1, 1, 1};
    uint32_t threadgroup_bytes = 0;
    uint32_t buffer_mask = 0;  // bit i: this launch binds buffer index i (bound in ascending order)
    bool binds(uint32_t index) const { return index < 32 && (buffer_mask >> index & 1u); }
  };
  struct Buffer {
    std::string_view name;  // as in BufferRequirement
    uint64_t bytes = 0;
    uint32_t index = 0;
    bool written = false;
    bool scratch = false;
  };

  std::array<Launch, kMaxLaunches> launch_storage{};
  std::array<Buffer, kMaxBuffers> buffer_storage{};
  alignas(8) std::array<std::byte, kMaxParamsBytes> params_storage{};
  uint32_t launch_count = 0, buffer_count = 0, params_size = 0;
  AttentionShape shape;  // the call's shape: what backends report to the call trace
  // The kernel's function constants and their values (a view into the
  // Library; empty for every generated kernel today). Not in DispatchPlan.
  std::span<const FunctionConstant> constants;

  std::span<const Launch> launches() const { return {launch_storage.data(), launch_count}; }
  std::span<const Buffer> buffers() const { return {buffer_storage.data(), buffer_count}; }
  std::span<const std::byte> params() const { return {params_storage.data(), params_size}; }
  const Buffer* buffer(uint32_t index) const;
  const Buffer* buffer(std::string_view name) const;

  // The same plan as a DispatchPlan (allocates; not for the hot path).
  DispatchPlan to_dispatch_plan() const;
};

}  // namespace mfagen
