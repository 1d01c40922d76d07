#include "backend_choice.h"

#include <fmt/format.h>

#include "errors.h"
#include "mfagen/cpu_backend.h"
#if MFAGEN_HAVE_METAL_BACKEND
#include "mfagen/metal_backend.h"
#endif

namespace mfagen::cli {

void check_backend_name(std::string_view name) {
  if (name != "cpu" && name != "metal") throw UserError(fmt::format("--backend {}: expected cpu or metal", name));
}

std::unique_ptr<Backend> make_backend(std::string_view name, bool detectors) {
  check_backend_name(name);
  if (name == "cpu") return std::make_unique<CpuBackend>(detectors);
#if MFAGEN_HAVE_METAL_BACKEND
  return std::make_unique<MetalBackend>();
#else
  throw UserError(
      "--backend metal: this build of mfagen has no Metal backend (on Apple platforms it needs metal-cpp: "
      "configure with -DMFAGEN_METAL_CPP_DIR=...); use --backend cpu");
#endif
}

std::string describe_backend(const Backend& backend, bool detectors) {
  if (backend.name() == "cpu")
    return fmt::format("cpu (the generated MSL compiled as C++ and run on this CPU with Metal's semantics; "
                       "detectors {})",
                       detectors ? "on" : "off");
  if (backend.measures_gpu_time()) return fmt::format("{} (the system's default Metal device)", backend.name());
  return fmt::format("{} on the metal-cpp stand-in (no Apple GPU: dispatches run on the cpu backend)",
                     backend.name());
}

std::string measured_time_label(const Backend& backend) {
  if (backend.measures_gpu_time()) return "GPU time (Metal command buffer timestamps)";
  return backend.name() == "cpu" ? "emulation (cpu backend), not a GPU time"
                                 : "emulation (Metal stand-in), not a GPU time";
}

}  // namespace mfagen::cli
