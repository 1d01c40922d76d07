#include "loaded_module.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>

namespace mfagen::cpu {
namespace {

struct ImageQuery {
  uintptr_t base;
  std::vector<std::pair<uintptr_t, uintptr_t>>* ranges;
};

int collect_segments(dl_phdr_info* info, size_t, void* data) {
  auto* query = static_cast<ImageQuery*>(data);
  if (info->dlpi_addr != query->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    query->ranges->emplace_back(begin, begin + ph.p_memsz);
  }
  return 1;
}

}  // namespace

const KernelParam* KernelSignature::buffer(uint32_t index) const {
  for (const KernelParam& p : params)
    if (p.kind == KernelParam::Kind::buffer && p.index == index) return &p;
  return nullptr;
}

const KernelSignature* Module::find(std::string_view name) const {
  for (const KernelSignature& k : kernels())
    if (k.name == name) return &k;
  return nullptr;
}

LoadedModule::LoadedModule(void* handle, std::vector<KernelSignature> kernels, std::vector<FunctionConstant> constants,
                           std::vector<std::string> constants_true, bool instrumented)
    : handle_(handle),
      kernels_(std::move(kernels)),
      constants_(std::move(constants)),
      constants_true_(std::move(constants_true)),
      instrumented_(instrumented),
      profile_(ProfileTable::read(handle)) {
  if (kernels_.empty()) return;
  Dl_info info{};
  void* symbol = dlsym(handle_, (std::string(abi::kEntryPrefix) + kernels_.front().name).c_str());
  if (symbol && dladdr(symbol, &info)) {
    ImageQuery query{reinterpret_cast<uintptr_t>(info.dli_fbase), &image_ranges_};
    // dlpi_addr is the load bias; for a shared object it equals the base.
    dl_iterate_phdr(collect_segments, &query);
  }
}

LoadedModule::~LoadedModule() { dlclose(handle_); }

abi::EntryFn LoadedModule::entry(std::string_view name) const {
  return reinterpret_cast<abi::EntryFn>(dlsym(handle_, (std::string(abi::kEntryPrefix) + std::string(name)).c_str()));
}

bool LoadedModule::parameter_present(const KernelParam& param) const {
  return param.function_constant.empty() ||
         std::find(constants_true_.begin(), constants_true_.end(), param.function_constant) != constants_true_.end();
}

}  // namespace mfagen::cpu
