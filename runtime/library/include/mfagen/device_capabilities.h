// What a kernel requires of the device (manifest.json "requires") and what a
// device offers (Backend::capabilities()): the Metal Shading Language
// version, the Apple GPU family and Metal 4 TensorOps. Selection
// (Library::find / select) serves a call only with kernels the device's
// capabilities satisfy (docs/runtime.md, "Device capabilities and fallback").
// Plain values: comparing them allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace mfagen {

// Metal Shading Language versions, in order ("3.0" ... "4.0" in the manifest).
enum class MetalVersion : uint8_t { v3_0, v3_1, v3_2, v4_0 };

// Apple GPU families (MTLGPUFamilyApple7 ...), in order: a device of one
// family supports every earlier one. apple7: M1 / A14, apple8: M2 / A15-A16,
// apple9: M3, M4 / A17-A18, apple10: M5 / A19. none: a device of none of
// them (no simdgroup_matrix: no mfagen kernel runs there); never required.
enum class GpuFamily : uint8_t { none = 0, apple7 = 7, apple8, apple9, apple10 };

// What a kernel needs. The default is what every simdgroup_matrix kernel
// needs (and what a manifest without "requires" means): Metal 3.1, Apple7.
struct KernelRequirements {
  MetalVersion metal = MetalVersion::v3_1;
  GpuFamily gpu_family = GpuFamily::apple7;
  bool tensor_ops = false;  // mpp::tensor_ops (MetalPerformancePrimitives)
  bool operator==(const KernelRequirements&) const = default;
};

// What a device offers. The default is the baseline every kernel mfagen
// generates without TensorOps runs on (Metal 3.1, Apple7, no TensorOps);
// all() satisfies every requirement a manifest can state.
struct DeviceCapabilities {
  MetalVersion metal = MetalVersion::v3_1;
  GpuFamily gpu_family = GpuFamily::apple7;
  bool tensor_ops = false;  // TensorOps compile and run (Metal 4 and the OS's MetalPerformancePrimitives)

  static constexpr DeviceCapabilities all() { return {MetalVersion::v4_0, GpuFamily::apple10, true}; }
  constexpr bool satisfies(const KernelRequirements& r) const noexcept {
    return metal >= r.metal && gpu_family >= r.gpu_family && (tensor_ops || !r.tensor_ops);
  }
  bool operator==(const DeviceCapabilities&) const = default;
};

// The manifest's spellings: "3.1", "apple10".
inline constexpr std::array<std::pair<std::string_view, MetalVersion>, 4> kMetalVersionNames{
    {{"3.0", MetalVersion::v3_0}, {"3.1", MetalVersion::v3_1}, {"3.2", MetalVersion::v3_2}, {"4.0", MetalVersion::v4_0}}};
inline constexpr std::array<std::pair<std::string_view, GpuFamily>, 4> kGpuFamilyNames{
    {{"apple7", GpuFamily::apple7}, {"apple8", GpuFamily::apple8}, {"apple9", GpuFamily::apple9},
     {"apple10", GpuFamily::apple10}}};

constexpr std::string_view to_string(MetalVersion v) {
  for (const auto& [name, value] : kMetalVersionNames)
    if (value == v) return name;
  return "unknown";
}
constexpr std::string_view to_string(GpuFamily f) {
  for (const auto& [name, value] : kGpuFamilyNames)
    if (value == f) return name;
  return "none";
}

}  // namespace mfagen
