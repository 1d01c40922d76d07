// A backend executes dispatch plans (DESIGN.md section 8): cpu (the
// generated MSL compiled as host code, runtime/library/cpu_backend.*) and
// metal (runtime/backends/metal: on Apple, or on the metal-cpp stand-in). Tensors are bound by
// buffer index as bytes in the layout the plan describes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string_view>

#include "mfagen/library.h"

namespace mfagen {

using TensorMap = std::map<uint32_t, std::span<std::byte>>;

struct RunStats {
  double seconds = 0;         // execution of all launches
  double compile_seconds = 0; // first use of a kernel file (cached afterwards)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Whether RunStats::seconds are GPU timestamps (the Metal backend on an
  // Apple GPU). Otherwise they time an emulation on the CPU (the cpu backend,
  // the Metal backend on the metal-cpp stand-in) and must be labeled so.
  virtual bool measures_gpu_time() const { return false; }
  // What the device offers kernels (Metal version, Apple GPU family,
  // TensorOps), for selection: library.select(query, backend.capabilities())
  // picks only kernels whose manifest "requires" it satisfies, TensorOps
  // kernels first where supported. Computed once per backend; calling it
  // allocates nothing. Default: the baseline (no TensorOps).
  virtual DeviceCapabilities capabilities() const { return {}; }
  // Runs every launch of `plan` (made for `kernel` of `library`) in order.
  // `tensors` holds every non-scratch buffer except params; the backend
  // allocates scratch buffers and binds the params bytes.
  virtual RunStats run(const Library& library, const KernelEntry& kernel, const DispatchPlan& plan,
                       const TensorMap& tensors) = 0;
  // The same for a LaunchPlan (Library::launch_plan). Default: converted to
  // a DispatchPlan; the Metal backend encodes it directly.
  virtual RunStats run(const Library& library, const KernelEntry& kernel, const LaunchPlan& plan,
                       const TensorMap& tensors) {
    return run(library, kernel, plan.to_dispatch_plan(), tensors);
  }
};

}  // namespace mfagen
