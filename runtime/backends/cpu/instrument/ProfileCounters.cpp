// ProfileCountersPass: what `mfagen profile` counts (docs/profile.md).
//
// Runs at the start of the optimizer pipeline (Plugin.cpp): kernels are
// inlined and scalar-simplified, nothing is vectorized for x86 yet. For each
// basic block it records the GPU operations the block issues, per simdgroup:
//
// * The Metal stand-in's built-ins that are one GPU operation but many IR
//   instructions here (simdgroup_matrix load/store/multiply, simd
//   collectives, barriers, float -> bfloat) carry a marker,
//   `__builtin_annotation(payload, "mfagen.op")`, in profiling compiles
//   only. The marker says which op (and how many); every instruction that
//   was inlined from that built-in's body (found through the debug-location
//   inlining chain) is not counted on its own. The markers are removed.
// * Everything else is classified instruction by instruction (classify()),
//   each vector element counting once (Apple GPUs are scalar per thread).
//   Free: register moves and casts, phis, branches, fneg/fabs (source
//   modifiers), accesses to the thread's own memory (registers on a GPU),
//   and address arithmetic that folds into a load or store.
//
// Each block that issues anything gets a counter: `counters[i] += 1`, where
// `counters` = __mf_profile_counters(function) at function entry is the
// calling thread's array for that function. The executor takes, per block,
// the maximum count over the lanes of a simdgroup: a simdgroup issues a
// block as often as its busiest lane runs it, whichever lanes are active.
//
// The module exports its tables for the executor (kernel_abi.h, "profile
// tables"): per function its name, counted blocks and a register estimate;
// per block its (op, count) entries.
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "mfagen/cpu/kernel_abi.h"
#include "mfagen/cpu/profile_ops.h"
#include "passes.h"

using namespace llvm;
using mfagen::cpu::profile::Op;

namespace {

constexpr const char* kProfileModeMarker = "__mf_profile_mode";
constexpr const char* kProfiledMarker = "mfagen.profiled";

using OpList = std::map<uint32_t, uint64_t>;  // op -> count, ordered (deterministic tables)

void add(OpList& ops, Op op, uint64_t n) {
  if (n) ops[static_cast<uint32_t>(op)] += n;
}

// Elements of a value of type T: a <4 x float> op is 4 GPU instructions.
uint64_t elements(Type* T) {
  if (auto* V = dyn_cast<FixedVectorType>(T)) return V->getNumElements();
  return 1;
}

Type* scalar(Type* T) { return T->getScalarType(); }

bool isHalf(Type* T) { return scalar(T)->isHalfTy() || scalar(T)->isBFloatTy(); }


// True if `Pointer` points into the thread's own memory (an alloca, maybe
// through GEPs and address-space casts): registers on a GPU. So are the
// launch arguments an entry thunk (__mf_kernel_NAME) reads: on a GPU the
// thread position and buffer addresses arrive in registers.
bool isPrivate(const Value* Pointer) {
  const Value* Object = getUnderlyingObject(Pointer);
  if (isa<AllocaInst>(Object)) return true;
  const auto* Arg = dyn_cast<Argument>(Object);
  return Arg && Arg->getParent()->getName().startswith(mfagen::cpu::abi::kEntryPrefix);
}

// The address space of a pointer type; 0 (the thread's own memory) for anything else.
unsigned addressSpace(Type* T) { return T->isPointerTy() ? T->getPointerAddressSpace() : 0; }

// True if every user of a GEP is a load or store addressing through it:
// Apple GPUs fold base + scaled index into the memory instruction. A cast of
// the pointer to another address space (the stand-in's member functions take
// `this` as a generic pointer) is looked through: the GPU compiler infers the
// space and the cast vanishes (inferredAddressSpace below).
bool foldsIntoMemoryAccess(const Value& Pointer) {
  for (const User* U : Pointer.users()) {
    if (const auto* L = dyn_cast<LoadInst>(U); L && L->getPointerOperand() == &Pointer) continue;
    if (const auto* S = dyn_cast<StoreInst>(U); S && S->getPointerOperand() == &Pointer) continue;
    if (isa<AddrSpaceCastInst>(U) || isa<BitCastInst>(U)) {
      if (foldsIntoMemoryAccess(*U)) continue;
    }
    return false;
  }
  return true;
}

// The address space of an access through a generic pointer whose one
// underlying object lives in a specific space (a kernel's device or
// threadgroup argument, cast to generic on its way into the stand-in's
// member functions): GPU compilers infer it (LLVM's InferAddressSpaces
// pass) and issue that space's instruction, so the access counts as one.
// A pointer of unknown origin (loaded from memory, chosen between objects)
// stays generic.
unsigned inferredAddressSpace(const Value* Pointer) {
  const unsigned AS = addressSpace(Pointer->getType());
  if (AS != mfagen::cpu::abi::kSpaceGeneric) return AS;
  const unsigned Origin = addressSpace(getUnderlyingObject(Pointer)->getType());
  return Origin != 0 ? Origin : AS;
}

Op floatOp(Type* T, Op f32, Op f16) { return isHalf(T) ? f16 : f32; }

// Payload of a marker call, if I is one.
std::optional<uint32_t> markerPayload(const Instruction& I) {
  const auto* II = dyn_cast<IntrinsicInst>(&I);
  if (!II || II->getIntrinsicID() != Intrinsic::annotation) return std::nullopt;
  const auto* Tag = dyn_cast<GlobalVariable>(II->getArgOperand(1)->stripPointerCasts());
  if (!Tag || !Tag->hasInitializer()) return std::nullopt;
  const auto* Text = dyn_cast<ConstantDataSequential>(Tag->getInitializer());
  if (!Text || !Text->isCString() || Text->getAsCString() != mfagen::cpu::profile::kMarkerTag) return std::nullopt;
  const auto* Payload = dyn_cast<ConstantInt>(II->getArgOperand(0));
  if (!Payload) return std::nullopt;
  return static_cast<uint32_t>(Payload->getZExtValue());
}

// One inlined instance of a function: its subprogram and where it was inlined.
using InstanceKey = std::pair<const DISubprogram*, const DILocation*>;

class BlockCounter {
 public:
  explicit BlockCounter(Module& M) : M(M), Ctx(M.getContext()) {}

  void run() {
    collectMarkers();
    for (Function& F : M) {
      if (F.isDeclaration()) continue;
      countFunction(F);
    }
    includeCalleesInEntryThunks();
    for (Instruction* I : Markers) {
      I->replaceAllUsesWith(cast<CallBase>(I)->getArgOperand(0));
      I->eraseFromParent();
    }
    emitTables();
  }

 private:
  struct FunctionRecord {
    std::string name;
    uint32_t firstBlock = 0, blocks = 0, registers = 0;
  };

  // Marker calls, and the built-in instances they stand for.
  void collectMarkers() {
    for (Function& F : M)
      for (Instruction& I : instructions(F)) {
        const auto Payload = markerPayload(I);
        if (!Payload) continue;
        Markers.push_back(&I);
        const bool Frame = (*Payload & ((1u << mfagen::cpu::profile::kMarkerOpBits) - 1)) ==
                           mfagen::cpu::profile::kEmulationFrameOp;
        if (const DILocation* L = I.getDebugLoc().get())
          (Frame ? FrameInstances : MarkedInstances).insert({L->getScope()->getSubprogram(), L->getInlinedAt()});
      }
  }

  // True if I was inlined from the body of a marked built-in or of an
  // emulation frame (kEmulationFrameOp).
  bool insideMarkedBuiltin(const Instruction& I) const {
    for (const DILocation* L = I.getDebugLoc().get(); L; L = L->getInlinedAt())
      if (FrameInstances.count({L->getScope()->getSubprogram(), L->getInlinedAt()})) return true;
    return insideMarkedFrame(I.getDebugLoc().get());
  }
  bool insideMarkedFrame(const DILocation* From) const {
    for (const DILocation* L = From; L; L = L->getInlinedAt())
      if (MarkedInstances.count({L->getScope()->getSubprogram(), L->getInlinedAt()})) return true;
    return false;
  }

  // A marker counts unless it sits inside another marked built-in: the
  // outer built-in is the GPU's one operation, and what its emulation here
  // calls (matmul2d's float products widening bfloat elements, each a
  // marked widening) is not the kernel's. Only frames outside the marker's
  // own are checked; in a marked built-in kept out of line, only the
  // function's own markers count.
  bool markerCounts(const Instruction& Marker, bool WholeBuiltin) const {
    const DILocation* L = Marker.getDebugLoc().get();
    if (!L) return true;
    if (WholeBuiltin) return L->getInlinedAt() == nullptr;
    return !insideMarkedFrame(L->getInlinedAt());
  }

  void countFunction(Function& F) {
    FunctionRecord Record;
    Record.name = F.getName().str();
    Record.firstBlock = static_cast<uint32_t>(BlockOps.size());
    Record.registers = estimateRegisters(F);
    // A marked built-in kept out of line (profiling compiles) is its one op
    // as a whole, including what the optimizer left without a debug
    // location (merged or hoisted index arithmetic).
    const bool WholeBuiltin = F.getSubprogram() && MarkedInstances.count({F.getSubprogram(), nullptr});
    // An emulation frame kept out of line: none of its own instructions
    // count, the markers of what it calls do.
    const bool WholeFrame = F.getSubprogram() && FrameInstances.count({F.getSubprogram(), nullptr});
    SmallVector<std::pair<BasicBlock*, uint32_t>, 64> Counted;
    for (BasicBlock& BB : F) {
      OpList Ops;
      Pending.clear();
      for (Instruction& I : BB) {
        if (auto Payload = markerPayload(I)) {
          if (!markerCounts(I, WholeBuiltin)) continue;
          uint32_t Op = *Payload & ((1u << mfagen::cpu::profile::kMarkerOpBits) - 1);
          if (Op < mfagen::cpu::profile::kOpCount) Ops[Op] += *Payload >> mfagen::cpu::profile::kMarkerOpBits;
          continue;
        }
        if (WholeBuiltin || WholeFrame || insideMarkedBuiltin(I)) continue;
        classify(I, Ops);
      }
      countMergedAccesses(Ops);
      if (Ops.empty()) continue;
      Counted.push_back({&BB, static_cast<uint32_t>(BlockOps.size() - Record.firstBlock)});
      BlockOps.push_back(std::move(Ops));
    }
    Record.blocks = static_cast<uint32_t>(Counted.size());
    const uint32_t Index = static_cast<uint32_t>(Functions.size());
    Functions.push_back(Record);
    if (Counted.empty()) return;

    // counters = __mf_profile_counters(index) at entry; counters[i] += 1 per counted block.
    PointerType* PtrTy = PointerType::get(Ctx, 0);
    Type* I32 = Type::getInt32Ty(Ctx);
    FunctionCallee Hook = M.getOrInsertFunction("__mf_profile_counters", FunctionType::get(PtrTy, {I32}, false));
    IRBuilder<> Entry(&*F.getEntryBlock().getFirstInsertionPt());
    Value* Counters = Entry.CreateCall(Hook, {ConstantInt::get(I32, Index)}, "mf.counters");
    for (auto [BB, Local] : Counted) {
      Instruction* At = &*BB->getFirstInsertionPt();
      if (BB == &F.getEntryBlock()) At = cast<Instruction>(Counters)->getNextNode();
      IRBuilder<> B(At);
      Value* Slot = B.CreateConstInBoundsGEP1_32(I32, Counters, Local);
      Value* Old = B.CreateLoad(I32, Slot);
      B.CreateStore(B.CreateAdd(Old, ConstantInt::get(I32, 1)), Slot);
    }
  }

  // An entry thunk (__mf_kernel_NAME) calls the kernel function, which clang
  // does not always inline (large kernels, templated [[host_name]] kernels):
  // the kernel's register estimate is the largest of the thunk and what it
  // calls.
  void includeCalleesInEntryThunks() {
    StringMap<uint32_t> Registers;
    for (const FunctionRecord& R : Functions) Registers[R.name] = R.registers;
    for (FunctionRecord& R : Functions) {
      if (!StringRef(R.name).startswith(mfagen::cpu::abi::kEntryPrefix)) continue;
      const Function* Thunk = M.getFunction(R.name);
      if (!Thunk) continue;
      for (const Instruction& I : instructions(*Thunk))
        if (const auto* C = dyn_cast<CallBase>(&I))
          if (const Function* Callee = C->getCalledFunction(); Callee && !Callee->isDeclaration())
            R.registers = std::max(R.registers, Registers.lookup(Callee->getName()));
    }
  }

  // The GPU operations of one IR instruction (not a marker, not inside a
  // marked built-in). Free: register moves, casts between integer widths,
  // vector element access, phis, branches, private (register) memory.
  void classify(Instruction& I, OpList& Ops) {
    Type* T = I.getType();
    const uint64_t N = elements(T);
    switch (I.getOpcode()) {
      case Instruction::FAdd:
      case Instruction::FSub:
        return add(Ops, floatOp(T, Op::f32_add, Op::f16_add), N);
      case Instruction::FMul:
        return add(Ops, floatOp(T, Op::f32_mul, Op::f16_mul), N);
      case Instruction::FDiv:
        return classifyDivide(cast<BinaryOperator>(I), Ops);
      case Instruction::FRem:
        return add(Ops, Op::transcendental_other, N);
      case Instruction::FNeg:
        return;  // a source modifier on Apple GPUs
      case Instruction::FCmp:
        // Apple GPUs compare and select in one instruction: a compare whose
        // only users are selects is paid by them.
        if (onlySelectUsers(I)) return;
        return add(Ops, floatOp(I.getOperand(0)->getType(), Op::f32_cmp_select, Op::f16_cmp_select),
                   elements(I.getOperand(0)->getType()));
      case Instruction::ICmp:
        if (onlySelectUsers(I)) return;
        return add(Ops, Op::int_cmp_select, elements(I.getOperand(0)->getType()));
      case Instruction::Select:
        if (scalar(T)->isFloatingPointTy()) return add(Ops, floatOp(T, Op::f32_cmp_select, Op::f16_cmp_select), N);
        if (scalar(T)->isIntegerTy(1)) return add(Ops, Op::int_logic, N);
        return add(Ops, Op::int_cmp_select, N * (T->isPointerTy() ? 2 : 1));  // a pointer is two registers
      // Integer operations count once whatever their width: on x86 clang
      // widens 32-bit index arithmetic to 64 bits for addressing, which a GPU
      // compiler keeps in 32 bits; genuinely 64-bit arithmetic is rare in kernels.
      case Instruction::Add:
      case Instruction::Sub:
        return add(Ops, Op::int_add, N);
      case Instruction::Mul:
        return add(Ops, Op::int_mul, N);
      case Instruction::UDiv:
      case Instruction::SDiv:
      case Instruction::URem:
      case Instruction::SRem:
        if (divideByConstant(cast<BinaryOperator>(I), Ops, N)) return;
        return add(Ops, Op::int_divide, N);
      case Instruction::LShr:
      case Instruction::AShr:
        if (extractsSubRegister(cast<BinaryOperator>(I))) return;
        return add(Ops, Op::int_logic, N);
      case Instruction::And:
      case Instruction::Or:
      case Instruction::Xor:
      case Instruction::Shl:
        return add(Ops, Op::int_logic, N);
      case Instruction::FPTrunc:
      case Instruction::SIToFP:
      case Instruction::UIToFP:
      case Instruction::FPToSI:
      case Instruction::FPToUI:
        return add(Ops, Op::convert, N);
      case Instruction::FPExt:
        return add(Ops, Op::widen, N);
      case Instruction::GetElementPtr:
        if (!cast<GetElementPtrInst>(I).hasAllConstantIndices() && addressSpace(I.getType()) != 0 &&
            !isPrivate(&I) && !foldsIntoMemoryAccess(I))
          add(Ops, Op::address, 1);
        return;
      case Instruction::Load:
        return classifyAccess(cast<LoadInst>(I).getPointerOperand(), T, /*store=*/false,
                              cast<LoadInst>(I).isAtomic(), Ops);
      case Instruction::Store:
        return classifyAccess(cast<StoreInst>(I).getPointerOperand(), cast<StoreInst>(I).getValueOperand()->getType(),
                              /*store=*/true, cast<StoreInst>(I).isAtomic(), Ops);
      case Instruction::AtomicRMW:
        return add(Ops, atomicOp(cast<AtomicRMWInst>(I).getPointerOperand()), 1);
      case Instruction::AtomicCmpXchg:
        return add(Ops, atomicOp(cast<AtomicCmpXchgInst>(I).getPointerOperand()), 1);
      case Instruction::Call:
        return classifyCall(cast<CallInst>(I), Ops);
      default:
        return;
    }
  }

  // True if a right shift only moves a 16- or 32-bit lane of a wider value
  // down for truncation: x86 clang loads a packed_half4 as one i64 and
  // shifts each half out of it, where a GPU reads the 16-bit halves of its
  // 32-bit registers directly (a register access, not an instruction).
  // Narrower lanes (bytes of a char4) stay counted: extracting them takes
  // a bitfield instruction.
  static bool extractsSubRegister(const BinaryOperator& Shift) {
    const auto* Amount = dyn_cast<ConstantInt>(Shift.getOperand(1));
    if (!Amount || Shift.getType()->isVectorTy() || Shift.use_empty()) return false;
    const uint64_t Bits = Amount->getZExtValue();
    for (const User* U : Shift.users()) {
      const auto* Trunc = dyn_cast<TruncInst>(U);
      if (!Trunc) return false;
      const unsigned Width = Trunc->getType()->getScalarSizeInBits();
      if ((Width != 16 && Width != 32) || Bits % Width != 0) return false;
    }
    return true;
  }

  // An integer divide or remainder by a constant is no divide on any
  // compiler's output: LLVM's IR keeps `udiv x, 20` until instruction
  // selection, where TargetLowering::BuildUDIV/BuildSDIV turn it into a
  // multiply-high and shifts (Granlund and Montgomery, "Division by
  // invariant integers using multiplication", PLDI 1994), or a shift for a
  // power of two. Counted as that sequence: unsigned x / c is a multiply-high
  // and a shift, x % c adds a multiply and a subtract; signed adds a sign
  // fix-up (a shift and an add). Powers of two: one shift or mask unsigned,
  // three instructions signed.
  static bool divideByConstant(const BinaryOperator& I, OpList& Ops, uint64_t N) {
    const auto* C = dyn_cast<Constant>(I.getOperand(1));
    if (C && C->getType()->isVectorTy()) C = C->getSplatValue();
    const auto* Divisor = dyn_cast_or_null<ConstantInt>(C);
    if (!Divisor || Divisor->isZero()) return false;
    const bool Signed = I.getOpcode() == Instruction::SDiv || I.getOpcode() == Instruction::SRem;
    const bool Remainder = I.getOpcode() == Instruction::URem || I.getOpcode() == Instruction::SRem;
    if (Divisor->getValue().abs().isPowerOf2()) {
      add(Ops, Op::int_logic, N * (Signed ? 2 : 1));
      if (Signed) add(Ops, Op::int_add, N);
      return true;
    }
    add(Ops, Op::int_mul, N * (Remainder ? 2 : 1));
    add(Ops, Op::int_logic, N * (Signed ? 2 : 1));
    add(Ops, Op::int_add, N * ((Remainder ? 1 : 0) + (Signed ? 1 : 0)));
    return true;
  }

  static bool onlySelectUsers(const Instruction& I) {
    if (I.use_empty()) return false;
    for (const User* U : I.users()) {
      const auto* S = dyn_cast<SelectInst>(U);
      if (!S || S->getCondition() != &I) return false;
    }
    return true;
  }

  // 1/sqrt(x) is one rsqrt, 1/x one reciprocal, a/b a divide.
  void classifyDivide(BinaryOperator& I, OpList& Ops) {
    const uint64_t N = elements(I.getType());
    const auto* One = dyn_cast<ConstantFP>(I.getOperand(0));
    if (auto* C = dyn_cast<Constant>(I.getOperand(0)); C && !One && C->getType()->isVectorTy())
      One = dyn_cast_or_null<ConstantFP>(C->getSplatValue());
    if (!One || !One->isExactlyValue(1.0)) return add(Ops, Op::divide, N);
    if (auto* Sqrt = dyn_cast<IntrinsicInst>(I.getOperand(1));
        Sqrt && Sqrt->getIntrinsicID() == Intrinsic::sqrt && Sqrt->hasOneUse()) {
      SqrtFoldedIntoRsqrt.insert(Sqrt);
      return add(Ops, Op::rsqrt, N);
    }
    add(Ops, Op::reciprocal, N);
  }

  static Op accessOp(unsigned AS, bool Store) {
    using namespace mfagen::cpu::abi;
    if (AS == kSpaceThreadgroup) return Store ? Op::threadgroup_store : Op::threadgroup_load;
    if (AS == kSpaceGeneric) return Store ? Op::generic_store : Op::generic_load;
    return Store ? Op::device_store : Op::device_load;
  }

  // Loads and stores: Apple GPUs move up to four 32-bit values per memory
  // instruction (Dougall Johnson's G13 reference: device_load takes a mask of
  // up to four components), and their compiler merges adjacent accesses of a
  // basic block into such vector accesses, as LLVM's LoadStoreVectorizer does
  // for GPU targets. So accesses are collected per block, by base pointer and
  // constant byte offset, and counted after merging (countMergedAccesses): one
  // instruction per contiguous run of at most 16 bytes, whatever the element
  // width. Address space 0 is the thread's own memory: registers on a GPU,
  // not counted.
  void classifyAccess(Value* Pointer, Type* ValueType, bool Store, bool Atomic, OpList& Ops) {
    const unsigned AS = inferredAddressSpace(Pointer);
    if (AS == 0 || isPrivate(Pointer)) return;
    if (Atomic) return add(Ops, atomicOp(Pointer), 1);
    const uint64_t Bytes = M.getDataLayout().getTypeStoreSize(ValueType).getFixedValue();
    const auto [Base, Index, Offset] = splitConstantOffset(Pointer);
    Pending.push_back({accessOp(AS, Store), Base, Index, Offset, Bytes});
  }

  // A pointer as base + variable index + constant byte offset: constant
  // offsets are stripped from GEPs, and a GEP whose one index is `i + c`
  // (through a sign or zero extension) becomes (its pointer, i, c x element
  // size), so p[4t], p[4t + 1], ... share (p, 4t).
  struct SplitPointer {
    const Value* base;
    const Value* index;
    int64_t offset;
  };
  SplitPointer splitConstantOffset(Value* Pointer) const {
    const DataLayout& DL = M.getDataLayout();
    int64_t Offset = 0;
    Value* Base = GetPointerBaseWithConstantOffset(Pointer, Offset, DL);
    auto* Gep = dyn_cast<GetElementPtrInst>(Base);
    if (!Gep || Gep->getNumIndices() != 1) return {Base, nullptr, Offset};
    Value* Index = Gep->getOperand(1);
    if (auto* Ext = dyn_cast<CastInst>(Index); Ext && (isa<SExtInst>(Ext) || isa<ZExtInst>(Ext)))
      Index = Ext->getOperand(0);
    auto* Add = dyn_cast<BinaryOperator>(Index);
    const bool Adds = Add && (Add->getOpcode() == Instruction::Add ||
                              (Add->getOpcode() == Instruction::Or && haveNoCommonBitsSet(Add->getOperand(0),
                                                                                          Add->getOperand(1), DL)));
    const auto* Constant = Adds ? dyn_cast<ConstantInt>(Add->getOperand(1)) : nullptr;
    if (!Constant) return {Gep->getPointerOperand(), Index, Offset};
    const int64_t Element = static_cast<int64_t>(DL.getTypeAllocSize(Gep->getSourceElementType()).getFixedValue());
    return {Gep->getPointerOperand(), Add->getOperand(0), Offset + Constant->getSExtValue() * Element};
  }

  // Counts a block's collected accesses: per (op, base), sorted by offset,
  // contiguous or overlapping accesses join one instruction while the run
  // stays within 16 bytes.
  void countMergedAccesses(OpList& Ops) {
    std::sort(Pending.begin(), Pending.end(), [](const Access& A, const Access& B) {
      if (A.op != B.op) return A.op < B.op;
      if (A.base != B.base) return std::less<const Value*>()(A.base, B.base);
      if (A.index != B.index) return std::less<const Value*>()(A.index, B.index);
      return A.offset < B.offset;
    });
    constexpr int64_t kBytesPerInstruction = 16;
    for (size_t I = 0; I < Pending.size();) {
      const Access& First = Pending[I];
      int64_t Start = First.offset, End = First.offset + static_cast<int64_t>(First.bytes);
      size_t J = I + 1;
      for (; J < Pending.size(); ++J) {
        const Access& Next = Pending[J];
        if (Next.op != First.op || Next.base != First.base || Next.index != First.index) break;
        const int64_t NextEnd = Next.offset + static_cast<int64_t>(Next.bytes);
        if (Next.offset > End || std::max(End, NextEnd) - Start > kBytesPerInstruction) break;
        End = std::max(End, NextEnd);
      }
      add(Ops, First.op, static_cast<uint64_t>((End - Start + kBytesPerInstruction - 1) / kBytesPerInstruction));
      I = J;
    }
    Pending.clear();
  }

  static Op atomicOp(Value* Pointer) {
    return inferredAddressSpace(Pointer) == mfagen::cpu::abi::kSpaceThreadgroup ? Op::atomic_threadgroup
                                                                                  : Op::atomic_device;
  }

  void classifyCall(CallInst& C, OpList& Ops) {
    const uint64_t N = elements(C.getType());
    Type* T = C.getType();
    if (auto* II = dyn_cast<IntrinsicInst>(&C)) {
      switch (II->getIntrinsicID()) {
        case Intrinsic::fma:
        case Intrinsic::fmuladd:
          return add(Ops, floatOp(T, Op::f32_fma, Op::f16_fma), N);
        case Intrinsic::minnum:
        case Intrinsic::maxnum:
        case Intrinsic::minimum:
        case Intrinsic::maximum:
          return add(Ops, floatOp(T, Op::f32_minmax, Op::f16_minmax), N);
        case Intrinsic::fabs:
          return;  // a source modifier
        case Intrinsic::copysign:
        case Intrinsic::floor:
        case Intrinsic::ceil:
        case Intrinsic::trunc:
        case Intrinsic::rint:
        case Intrinsic::nearbyint:
        case Intrinsic::round:
        case Intrinsic::roundeven:
          return add(Ops, floatOp(T, Op::f32_other, Op::f16_other), N);
        case Intrinsic::exp2:
          return add(Ops, Op::exp2, N);
        case Intrinsic::log2:
          return add(Ops, Op::log2, N);
        case Intrinsic::exp:
          return add(Ops, Op::exp, N);
        case Intrinsic::log:
          return add(Ops, Op::log, N);
        case Intrinsic::sqrt:
          if (SqrtFoldedIntoRsqrt.count(&C)) return;
          return add(Ops, Op::sqrt, N);
        case Intrinsic::pow:
        case Intrinsic::powi:
        case Intrinsic::sin:
        case Intrinsic::cos:
        case Intrinsic::log10:
          return add(Ops, Op::transcendental_other, N);
        case Intrinsic::smax:
        case Intrinsic::smin:
        case Intrinsic::umax:
        case Intrinsic::umin:
        case Intrinsic::abs:
          return add(Ops, Op::int_cmp_select, N);
        case Intrinsic::ctpop:
        case Intrinsic::ctlz:
        case Intrinsic::cttz:
        case Intrinsic::bitreverse:
        case Intrinsic::bswap:
        case Intrinsic::fshl:
        case Intrinsic::fshr:
          return add(Ops, Op::int_logic, N);
        case Intrinsic::memcpy:
        case Intrinsic::memmove:
        case Intrinsic::memset:
        case Intrinsic::memcpy_inline:
        case Intrinsic::memset_inline:
          return classifyMemIntrinsic(cast<MemIntrinsic>(*II), Ops);
        default:
          return;  // lifetime, debug, assume, annotation, ...: not GPU work
      }
    }
    const Function* Callee = C.getCalledFunction();
    if (!Callee || !Callee->isDeclaration()) return;  // a call to kernel code: its blocks count themselves
    StringRef Name = Callee->getName();
    if (Name.startswith("__mf_")) return;  // executor hooks: special registers and built-ins counted by markers
    if (Name == "tanhf" || Name == "tanh") return add(Ops, Op::tanh, N);
    if (Name == "expf" || Name == "exp") return add(Ops, Op::exp, N);
    if (Name == "exp2f" || Name == "exp2") return add(Ops, Op::exp2, N);
    if (Name == "logf" || Name == "log") return add(Ops, Op::log, N);
    if (Name == "log2f" || Name == "log2") return add(Ops, Op::log2, N);
    if (Name == "sqrtf" || Name == "sqrt") return add(Ops, Op::sqrt, N);
    add(Ops, Op::transcendental_other, N);  // libm: sinf, powf, atan2f, fmodf, ...
  }

  void classifyMemIntrinsic(MemIntrinsic& MI, OpList& Ops) {
    const auto* Length = dyn_cast<ConstantInt>(MI.getLength());
    const uint64_t Instructions = Length ? (Length->getZExtValue() + 15) / 16 : 1;
    if (auto* Transfer = dyn_cast<MemTransferInst>(&MI)) {
      if (const unsigned AS = inferredAddressSpace(Transfer->getRawSource()); AS != 0 && !isPrivate(Transfer->getRawSource()))
        add(Ops, accessOp(AS, false), Instructions);
    }
    if (const unsigned AS = inferredAddressSpace(MI.getRawDest()); AS != 0 && !isPrivate(MI.getRawDest()))
      add(Ops, accessOp(AS, true), Instructions);
  }

  // 32-bit registers a value occupies: 16-bit values take half of one,
  // pointers two, i1 predicates none.
  double registerUnits(Type* T) const {
    if (T->isVoidTy() || T->isLabelTy() || T->isMetadataTy() || T->isTokenTy()) return 0;
    if (T->isPointerTy()) return 2;
    Type* S = scalar(T);
    if (S->isIntegerTy(1)) return 0;
    if (S->isPointerTy()) return 2.0 * elements(T);
    if (!S->isIntegerTy() && !S->isFloatingPointTy()) return 0;
    const double Bits = S->getPrimitiveSizeInBits().getFixedValue();
    return elements(T) * (Bits <= 16 ? 0.5 : Bits / 32);
  }

  // Peak number of 32-bit registers live at once (SSA values across the
  // function, by liveness), a lower bound on what the GPU compiler
  // allocates; private arrays kept in memory here are not included.
  uint32_t estimateRegisters(Function& F) {
    DenseMap<const BasicBlock*, DenseSet<const Value*>> LiveIn, LiveOut;
    auto tracked = [&](const Value* V) {
      return (isa<Instruction>(V) || isa<Argument>(V)) && registerUnits(V->getType()) > 0;
    };
    bool Changed = true;
    while (Changed) {
      Changed = false;
      // Backwards over the blocks: liveness converges in fewer rounds.
      std::vector<const BasicBlock*> Order;
      for (const BasicBlock& BB : F) Order.push_back(&BB);
      for (auto It = Order.rbegin(); It != Order.rend(); ++It) {
        const BasicBlock& BB = **It;
        DenseSet<const Value*> Out;
        for (const BasicBlock* Succ : successors(&BB)) {
          for (const Value* V : LiveIn[Succ])
            if (!(isa<PHINode>(V) && cast<PHINode>(V)->getParent() == Succ)) Out.insert(V);
          for (const PHINode& Phi : Succ->phis()) {
            const Value* In = Phi.getIncomingValueForBlock(&BB);
            if (In && tracked(In)) Out.insert(In);
          }
        }
        DenseSet<const Value*> In = Out;
        for (auto I = BB.rbegin(); I != BB.rend(); ++I) {
          In.erase(&*I);
          if (isa<PHINode>(*I)) {
            In.insert(&*I);  // defined at block entry
            continue;
          }
          for (const Value* Operand : I->operands())
            if (tracked(Operand)) In.insert(Operand);
        }
        if (Out.size() != LiveOut[&BB].size()) LiveOut[&BB] = Out, Changed = true;
        if (In.size() != LiveIn[&BB].size()) LiveIn[&BB] = In, Changed = true;
      }
    }
    double Peak = 0;
    for (const BasicBlock& BB : F) {
      DenseSet<const Value*> Live = LiveOut[&BB];
      auto pressure = [&] {
        double Sum = 0;
        for (const Value* V : Live) Sum += registerUnits(V->getType());
        return Sum;
      };
      Peak = std::max(Peak, pressure());
      for (auto I = BB.rbegin(); I != BB.rend(); ++I) {
        Live.erase(&*I);
        if (!isa<PHINode>(*I))
          for (const Value* Operand : I->operands())
            if (tracked(Operand)) Live.insert(Operand);
        Peak = std::max(Peak, pressure());
      }
    }
    return static_cast<uint32_t>(Peak + 0.999);
  }

  // kernel_abi.h, "profile tables".
  void emitTables() {
    Type* I32 = Type::getInt32Ty(Ctx);
    PointerType* PtrTy = PointerType::get(Ctx, 0);
    StructType* FnTy = StructType::get(Ctx, {PtrTy, I32, I32, I32, I32});
    std::vector<Constant*> FnRecords;
    for (const FunctionRecord& R : Functions) {
      Constant* Name = ConstantDataArray::getString(Ctx, R.name);
      auto* NameVar = new GlobalVariable(M, Name->getType(), true, GlobalValue::PrivateLinkage, Name, "__mf_prof_name");
      FnRecords.push_back(ConstantStruct::get(
          FnTy, {ConstantExpr::getPointerBitCastOrAddrSpaceCast(NameVar, PtrTy), ConstantInt::get(I32, R.firstBlock),
                 ConstantInt::get(I32, R.blocks), ConstantInt::get(I32, R.registers), ConstantInt::get(I32, 0)}));
    }
    std::vector<uint32_t> Begins, Entries;
    for (const OpList& Ops : BlockOps) {
      Begins.push_back(static_cast<uint32_t>(Entries.size() / 2));
      for (auto [Op, Count] : Ops) {
        Entries.push_back(Op);
        Entries.push_back(static_cast<uint32_t>(std::min<uint64_t>(Count, UINT32_MAX)));
      }
    }
    Begins.push_back(static_cast<uint32_t>(Entries.size() / 2));
    exportConstant("__mf_profile_function_count", ConstantInt::get(I32, Functions.size()));
    exportConstant("__mf_profile_functions", ConstantArray::get(ArrayType::get(FnTy, FnRecords.size()), FnRecords));
    exportConstant("__mf_profile_block_begin", ConstantDataArray::get(Ctx, Begins));
    exportConstant("__mf_profile_entries", ConstantDataArray::get(Ctx, Entries));
  }

  void exportConstant(StringRef Name, Constant* Value) {
    // External with default visibility: kept by global DCE, found by dlsym.
    auto* GV = new GlobalVariable(M, Value->getType(), true, GlobalValue::ExternalLinkage, Value, Name);
    GV->setVisibility(GlobalValue::DefaultVisibility);
  }

  // One load or store of a block, before merging.
  struct Access {
    Op op;
    const Value* base;
    const Value* index;  // variable part of the address beside base, or null
    int64_t offset;
    uint64_t bytes;
  };

  Module& M;
  LLVMContext& Ctx;
  std::vector<Access> Pending;  // the current block's loads and stores
  std::vector<Instruction*> Markers;
  DenseSet<InstanceKey> MarkedInstances;
  DenseSet<InstanceKey> FrameInstances;  // emulation frames: their markers' callees still count
  DenseSet<const Instruction*> SqrtFoldedIntoRsqrt;
  std::vector<FunctionRecord> Functions;
  std::vector<OpList> BlockOps;
};

}  // namespace

PreservedAnalyses ProfileCountersPass::run(Module& M, ModuleAnalysisManager&) {
  if (!M.getNamedGlobal(kProfileModeMarker) || M.getNamedMetadata(kProfiledMarker)) return PreservedAnalyses::all();
  M.getOrInsertNamedMetadata(kProfiledMarker);
  BlockCounter(M).run();
  return PreservedAnalyses::none();
}
