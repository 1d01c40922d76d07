// mfagen_instrument: an LLVM 16 pass plugin that reports kernel memory
// accesses to the cpu backend's executor.
//
// Loaded by `clang-16 -fpass-plugin=mfagen_instrument.so` when a kernel module
// is compiled (C++ for OpenCL, `-Xclang -ffake-address-space-map`). Every
// load, store, atomic and memcpy/memmove/memset that goes through a device
// (1), constant (2), threadgroup (3) or generic (4) pointer %p becomes
//
//   %a = addrspacecast ptr addrspace(N) %p to ptr
//   %r = call ptr @__mf_access(ptr %a, i64 SIZE, i32 FLAGS, ptr @"file:line:col")
//   %q = addrspacecast ptr %r to ptr addrspace(N)
//   load/store/... through %q instead of %p
//
// (see runtime/backends/cpu/include/mfagen/cpu/kernel_abi.h). The executor
// uses these calls for its detectors: out-of-bounds accesses, threadgroup
// data races and reads of uninitialized threadgroup memory. It returns the
// address itself, or a scratch area for an out-of-bounds access so that a
// buggy kernel cannot corrupt the host while the finding is reported.
//
// Address space 0 is private memory (the thread's own stack) and is never
// reported: no detector cares about it, and instrumenting it would cost a
// call per spill.
//
// The call's shape is kept in step with kernel_abi.h by hand (the flag values
// come from the header itself); bump kAbiVersion there on any change.

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"

#include <string>

#include "mfagen/cpu/kernel_abi.h"
#include "passes.h"

using namespace llvm;

namespace {

using mfagen::cpu::abi::kAtomic;
using mfagen::cpu::abi::kRead;
using mfagen::cpu::abi::kSpaceMask;
using mfagen::cpu::abi::kWrite;

constexpr const char* kHookName = "__mf_access";

// A module that carries this named metadata has already been instrumented.
// The pass can meet a module twice: the plugin given twice on one command
// line (dlopen hands back the same library, whose callback is then registered
// twice), or bitcode that was instrumented when emitted and is compiled again
// with the plugin. The marker makes the second run a no-op instead of
// reporting every access twice.
constexpr const char* kInstrumentedMarker = "mfagen.instrumented";

// Defined by modules compiled without detectors (`mfagen exec --no-detectors`):
// no hooks, only the alignment relaxation below, so they run like the rest.
constexpr const char* kAlignmentOnlyMarker = "__mf_alignment_only";

// Address spaces clang's fake address space map gives OpenCL's
// __global (1), __constant (2), __local (3) and generic (4) pointers; the
// same numbers as the ABI's kSpace* values.
static_assert(mfagen::cpu::abi::kSpaceDevice == 1 && mfagen::cpu::abi::kSpaceConstant == 2 &&
              mfagen::cpu::abi::kSpaceThreadgroup == 3 && mfagen::cpu::abi::kSpaceGeneric == 4);
bool isReportedSpace(unsigned AS) { return AS >= 1 && AS <= 4; }

class Instrumenter {
 public:
  explicit Instrumenter(Module& M)
      : M(M),
        DL(M.getDataLayout()),
        Ctx(M.getContext()),
        PtrTy(PointerType::get(Ctx, 0)),
        I64Ty(Type::getInt64Ty(Ctx)),
        I32Ty(Type::getInt32Ty(Ctx)) {
    // const void* __mf_access(const void*, uint64_t, uint32_t, const char*)
    Hook = M.getOrInsertFunction(kHookName, FunctionType::get(PtrTy, {PtrTy, I64Ty, I32Ty, PtrTy}, false));
    AlignmentOnly = M.getNamedGlobal(kAlignmentOnlyMarker) != nullptr;
  }

  // Returns true if the module changed.
  bool run() {
    bool Changed = false;
    for (Function& F : M) {
      if (F.isDeclaration() || F.getName() == kHookName) continue;
      // Collect first: inserting calls while iterating would visit them.
      SmallVector<Instruction*, 64> Work;
      for (Instruction& I : instructions(F))
        if (isa<LoadInst, StoreInst, AtomicRMWInst, AtomicCmpXchgInst, MemIntrinsic>(I))
          Work.push_back(&I);
      for (Instruction* I : Work) Changed |= instrument(*I);
    }
    return Changed;
  }

 private:
  bool instrument(Instruction& I) {
    // Loads and stores: atomic ones (atomic_load/atomic_store) carry kAtomic
    // so the race detector can tell them from plain accesses.
    if (auto* LI = dyn_cast<LoadInst>(&I))
      return report(I, LoadInst::getPointerOperandIndex(), storeSize(LI->getType()),
                    kRead | (LI->isAtomic() ? kAtomic : 0));
    if (auto* SI = dyn_cast<StoreInst>(&I))
      return report(I, StoreInst::getPointerOperandIndex(), storeSize(SI->getValueOperand()->getType()),
                    kWrite | (SI->isAtomic() ? kAtomic : 0));
    // Read-modify-write atomics both read and write the location.
    if (auto* RMW = dyn_cast<AtomicRMWInst>(&I))
      return report(I, AtomicRMWInst::getPointerOperandIndex(), storeSize(RMW->getValOperand()->getType()),
                    kRead | kWrite | kAtomic);
    if (auto* CX = dyn_cast<AtomicCmpXchgInst>(&I))
      return report(I, AtomicCmpXchgInst::getPointerOperandIndex(),
                    storeSize(CX->getCompareOperand()->getType()), kRead | kWrite | kAtomic);
    // memcpy, memmove, memset and their .inline variants. Clang emits these
    // for aggregate copies and zero-initialisation, so a struct assignment
    // between device and threadgroup memory shows up here, not as loads and
    // stores. One report per pointer operand (source first), each covering
    // the whole length.
    if (auto* MI = dyn_cast<MemIntrinsic>(&I)) {
      // The length is i32 or i64; a constant one folds to an i64 constant.
      Value* Size = IRBuilder<>(&I).CreateZExtOrTrunc(MI->getLength(), I64Ty);
      bool Changed = false;
      if (isa<MemTransferInst>(MI)) Changed |= report(I, kMemSourceArg, Size, kRead);
      Changed |= report(I, kMemDestArg, Size, kWrite);
      return Changed;
    }
    return false;
  }

  // Operand numbers of the pointers of llvm.mem{cpy,move,set}[.inline].
  static constexpr unsigned kMemDestArg = 0;
  static constexpr unsigned kMemSourceArg = 1;

  // The number of bytes a load or store of `T` touches (2 for half, 16 for
  // <4 x float>); never a scalable vector on the CPU target.
  Constant* storeSize(Type* T) { return ConstantInt::get(I64Ty, DL.getTypeStoreSize(T).getFixedValue()); }

  // If operand `PtrOp` of `I` is a pointer in a reported address space:
  // inserts the __mf_access call right before `I` and makes `I` access the
  // address the call returns. The access mode bits are `Mode`; the space is
  // added here.
  bool report(Instruction& I, unsigned PtrOp, Value* Size, uint32_t Mode) {
    Value* Ptr = I.getOperand(PtrOp);
    unsigned AS = Ptr->getType()->getPointerAddressSpace();
    if (!isReportedSpace(AS)) return false;
    if (AlignmentOnly) return relaxAlignment(I);
    // The builder takes I's debug location, so the call gets a valid !dbg
    // (the verifier wants one in functions with debug info).
    IRBuilder<> B(&I);
    // The same numeric address in every space: the CPU target maps all fake
    // address spaces to the one flat host address space, so the casts are free.
    Value* Addr = B.CreatePointerBitCastOrAddrSpaceCast(Ptr, PtrTy);
    Value* Checked =
        B.CreateCall(Hook, {Addr, Size, ConstantInt::get(I32Ty, (AS & kSpaceMask) | Mode), location(I)});
    // Only this operand: the same pointer may also be I's stored value or the
    // other operand of a memcpy, which must stay (or be checked) on its own.
    I.setOperand(PtrOp, B.CreatePointerBitCastOrAddrSpaceCast(Checked, Ptr->getType()));
    relaxAlignment(I);
    return true;
  }

  // Shipped MSL accesses vectors at addresses aligned only to their elements
  // (llama.cpp's mul_mm stores float4 rows at 8-byte offsets; how Apple GPUs
  // treat that is not measured here), where the aligned SSE moves clang picks
  // for a 16-byte-aligned float4 would fault and take the process down.
  static bool relaxAlignment(Instruction& I) {
    if (auto* LI = dyn_cast<LoadInst>(&I); LI && !LI->isAtomic() && LI->getAlign() > 1) {
      LI->setAlignment(Align(1));
      return true;
    }
    if (auto* SI = dyn_cast<StoreInst>(&I); SI && !SI->isAtomic() && SI->getAlign() > 1) {
      SI->setAlignment(Align(1));
      return true;
    }
    return false;
  }

  // True for the Metal stand-in's own headers: a finding inside one of its
  // helpers (simdgroup_load, ...) belongs to the user's call site.
  static bool isStandinFile(StringRef File) {
    return File.contains("mfagen_standin/") || File.ends_with("/metal_stdlib") || File.contains("metal_standin/");
  }

  // "file:line:col" of I, or "" without a debug location. After inlining, the
  // innermost frame that is not a stand-in helper (walking inlinedAt).
  Constant* location(const Instruction& I) {
    std::string Text;
    const DILocation* Loc = I.getDebugLoc().get();
    while (Loc && isStandinFile(Loc->getFilename()) && Loc->getInlinedAt()) Loc = Loc->getInlinedAt();
    if (Loc)
      Text = (Loc->getFilename() + ":" + Twine(Loc->getLine()) + ":" + Twine(Loc->getColumn())).str();
    // One string per distinct location per module: a kernel has thousands of
    // accesses but far fewer distinct source positions.
    Constant*& Slot = Locs[Text];
    if (!Slot) {
      auto* GV = new GlobalVariable(M, ArrayType::get(Type::getInt8Ty(Ctx), Text.size() + 1),
                                    /*isConstant=*/true, GlobalValue::PrivateLinkage,
                                    ConstantDataArray::getString(Ctx, Text), "__mf_loc");
      GV->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
      GV->setAlignment(Align(1));
      Slot = ConstantExpr::getPointerBitCastOrAddrSpaceCast(GV, PtrTy);
    }
    return Slot;
  }

  Module& M;
  const DataLayout& DL;
  LLVMContext& Ctx;
  PointerType* PtrTy;
  IntegerType* I64Ty;
  IntegerType* I32Ty;
  FunctionCallee Hook;
  bool AlignmentOnly = false;
  StringMap<Constant*> Locs;
};

}  // namespace

PreservedAnalyses MemAccessInstrumentPass::run(Module& M, ModuleAnalysisManager&) {
  if (M.getNamedMetadata(kInstrumentedMarker)) return PreservedAnalyses::all();
  M.getOrInsertNamedMetadata(kInstrumentedMarker);
  bool Changed = Instrumenter(M).run();
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
