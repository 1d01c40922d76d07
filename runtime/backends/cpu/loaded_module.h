// A compiled kernel module loaded into the process (internal to the backend).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mfagen/cpu/backend.h"
#include "mfagen/cpu/kernel_abi.h"
#include "profile_table.h"

namespace mfagen::cpu {

class LoadedModule final : public Module {
 public:
  LoadedModule(void* handle, std::vector<KernelSignature> kernels, std::vector<FunctionConstant> constants,
               std::vector<std::string> constants_defined, bool instrumented);
  ~LoadedModule() override;
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;

  const std::vector<KernelSignature>& kernels() const override { return kernels_; }
  const std::vector<FunctionConstant>& function_constants() const override { return constants_; }
  bool instrumented() const override { return instrumented_; }
  bool profiled() const override { return profile_.has_value(); }

  abi::EntryFn entry(std::string_view name) const;
  bool parameter_present(const KernelParam& param) const override;
  // Address ranges of the module's own image (program-scope `constant` data).
  const std::vector<std::pair<uintptr_t, uintptr_t>>& image_ranges() const { return image_ranges_; }
  // The block tables of a module compiled for profiling, else null.
  const ProfileTable* profile_table() const { return profile_ ? &*profile_ : nullptr; }

 private:
  void* handle_;
  std::vector<KernelSignature> kernels_;
  std::vector<FunctionConstant> constants_;
  std::vector<std::string> constants_true_;
  bool instrumented_;
  std::vector<std::pair<uintptr_t, uintptr_t>> image_ranges_;
  std::optional<ProfileTable> profile_;
};

}  // namespace mfagen::cpu
