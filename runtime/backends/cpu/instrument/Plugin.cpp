// mfagen_instrument's entry point: registers its passes in clang's pipeline.
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"

#include "passes.h"

using namespace llvm;

// Entry point clang looks up in the plugin. Default visibility so it stays
// exported even when the enclosing project builds with -fvisibility=hidden.
extern "C" LLVM_ATTRIBUTE_WEAK __attribute__((visibility("default"))) PassPluginLibraryInfo
llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "mfagen_instrument", "1", [](PassBuilder& PB) {
            // Counting for `mfagen profile` happens at the start of the
            // optimizer pipeline: after the module simplification pipeline
            // (always-inliner, the CGSCC inliner with SROA, InstCombine, GVN,
            // LICM and full unrolling), before the loop and SLP vectorizers
            // and anything target-specific (docs/profile.md).
            PB.registerOptimizerEarlyEPCallback(
                [](ModulePassManager& MPM, OptimizationLevel) { MPM.addPass(ProfileCountersPass()); });
            // Access reports after all optimisation: instrumenting earlier
            // would pin every access behind an opaque call and block
            // promotion, vectorisation and load/store forwarding, so the
            // checked code would no longer be the code that runs unchecked.
            // In LLVM 16 the -O0 pipeline (buildO0DefaultPipeline) invokes
            // these callbacks as well, right after the always-inliner, so no
            // second extension point is needed (checked with -Xclang
            // -fdebug-pass-manager).
            PB.registerOptimizerLastEPCallback(
                [](ModulePassManager& MPM, OptimizationLevel) { MPM.addPass(MemAccessInstrumentPass()); });
          }};
}
