// The passes of the mfagen_instrument plugin (registered in Plugin.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace llvm {
class Module;
}

// Reports device/constant/threadgroup/generic memory accesses to the
// executor (__mf_access) for its detectors and traffic counters.
struct MemAccessInstrumentPass : llvm::PassInfoMixin<MemAccessInstrumentPass> {
  llvm::PreservedAnalyses run(llvm::Module& M, llvm::ModuleAnalysisManager&);
  // Run even on functions clang marks optnone at -O0.
  static bool isRequired() { return true; }
};

// `mfagen profile`: counts the GPU operations of every basic block and
// inserts per-thread block counters (ProfileCounters.cpp). Only in modules
// compiled for profiling (they define __mf_profile_mode).
struct ProfileCountersPass : llvm::PassInfoMixin<ProfileCountersPass> {
  llvm::PreservedAnalyses run(llvm::Module& M, llvm::ModuleAnalysisManager&);
  static bool isRequired() { return true; }
};
