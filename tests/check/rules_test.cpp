// Every Metal-subset rule of the checker (generator/check/rules.h): a small
// MSL snippet that breaks it (the diagnostic's rule and line are asserted)
// and a near miss that is valid Metal and passes clean. Every snippet is
// checked twice, with the precompiled stand-in and parsing the stand-in for
// the file, and both must report the same, byte for byte.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "check/check.h"
#include "check/rules.h"
#include "result_text.h"

namespace mfagen::check {
namespace {

const std::string kHeader = "#include <metal_stdlib>\nusing namespace metal;\n";

// 1-based line of the first line containing `marker`.
unsigned line_of(const std::string& source, const std::string& marker) {
  size_t at = source.find(marker);
  EXPECT_NE(at, std::string::npos) << marker;
  unsigned line = 1;
  for (size_t i = 0; i < at; ++i) line += source[i] == '\n';
  return line;
}

std::string dump(const CheckResult& r) {
  std::string out;
  for (const Diagnostic& d : r.diagnostics) out += d.to_string() + "\n";
  return out;
}

// The check of `source` with the precompiled stand-in (the default), after
// asserting that the slow path (the stand-in parsed for this file) finds
// exactly the same diagnostics, signatures and function constants.
CheckResult check_both_ways(const std::string& source, std::string_view name) {
  CheckResult fast = check_msl(source, name);
  CheckOptions per_file;
  per_file.precompiled_standin = false;
  CheckResult slow = check_msl(source, name, per_file);
  EXPECT_TRUE(fast.used_precompiled_standin) << name;
  EXPECT_FALSE(slow.used_precompiled_standin) << name;
  EXPECT_EQ(test::result_text(fast), test::result_text(slow)) << "precompiled stand-in vs per-file parse of " << name;
  return fast;
}

// The source must give a diagnostic of `rule` on the line marked `// HERE`.
void expect_rule(const std::string& body, std::string_view rule, const std::string& marker = "// HERE") {
  const std::string source = kHeader + body;
  CheckResult r = check_both_ways(source, "snippet.metal");
  unsigned line = line_of(source, marker);
  bool found = false;
  for (const Diagnostic& d : r.diagnostics)
    if (d.rule == rule && d.line == line && d.file == "snippet.metal") found = true;
  EXPECT_TRUE(found) << "expected [" << rule << "] on line " << line << ", got:\n" << dump(r);
}

void expect_clean(const std::string& body) {
  CheckResult r = check_both_ways(kHeader + body, "near_miss.metal");
  EXPECT_TRUE(r.ok()) << dump(r);
}

// `body` is valid Metal and its kernel `name` has `bytes` of static
// threadgroup memory.
void expect_clean_with_threadgroup_bytes(const std::string& body, const std::string& name, uint32_t bytes) {
  CheckResult r = check_both_ways(kHeader + body, "threadgroup.metal");
  ASSERT_TRUE(r.ok()) << dump(r);
  const KernelSignature* k = r.kernel(name);
  ASSERT_NE(k, nullptr) << dump(r);
  EXPECT_EQ(k->threadgroup_memory_bytes, bytes);
}

// The cpu backend lowers `thread` to the generic address space (so that MLX's
// and llama.cpp's `thread` methods and references compile); the checker keeps
// Metal's rule that a device pointer is no thread pointer.
TEST(CheckRules, DevicePointerPassedAsThreadPointer) {
  expect_rule(
      "void bump(thread float* x) { *x += 1.0f; }\n"
      "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  bump(a + i);  // HERE\n"
      "}\n",
      rules::kCompileError);
}

// Recursion is valid Metal in a compute pass (generator/check/rules.h says
// where Apple documents it; MLX's reduce kernels recurse), directly or
// through another function.
TEST(CheckRules, RecursionIsValidMetal) {
  expect_clean(
      "uint depth(uint n) {\n  return n == 0 ? 0 : 1 + depth(n - 1);\n}\n"
      "uint odd(uint n);\n"
      "uint even(uint n) { return n == 0 ? 1 : odd(n - 1); }\n"
      "uint odd(uint n) { return n == 0 ? 0 : even(n - 1); }\n"
      "kernel void k(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = depth(i) + even(i);\n}\n");
}

TEST(CheckRules, CompileTimeRecursionAndCallChains) {
  expect_clean(
      "template <uint N> uint sum() { return N + sum<N - 1>(); }\n"
      "template <> uint sum<0>() { return 0; }\n"
      "uint twice(uint x) { return 2 * x; }\n"
      "uint quad(uint x) { return twice(twice(x)); }\n"
      "kernel void k(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = quad(sum<4>());\n}\n");
}

// Metal 2.3 and later support function pointers (MSL specification 4,
// section 1.5.4; section 2.16 passes `float (*fnptr[3])(float)` to a
// function and calls through it). The cpu backend compiles and runs them
// (clang's __cl_clang_function_pointers, enabled by both lowerings), so the
// checker accepts them as well; what neither models is the [[visible]]
// attribute and a pipeline's linked functions (section 5.1.4).
TEST(CheckRules, RunTimeFunctionPointersAreValidMetal) {
  expect_clean(
      "float twice(float x) { return 2 * x; }\n"
      "float square(float x) { return x * x; }\n"
      "float apply(float (*f)(float), float x) { return f(x); }\n"
      "float first(float (&f)(float), float x) { return f(x); }\n"
      "float pick(float (*fs[2])(float), uint i, float x) { return fs[i % 2](x); }\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float (*table[2])(float) = {twice, square};\n"
      "  out[i] = apply(twice, out[i]) + first(square, out[i]) + pick(table, i, out[i]);\n}\n");
}

TEST(CheckRules, FunctionPointerNearMiss) {
  expect_clean(
      "float twice(float x) { return 2 * x; }\n"
      "template <typename F> float apply(F f, float x) { return f.run(x); }\n"
      "struct Twice { float run(float x) const { return twice(x); } };\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = apply(Twice(), out[i]);\n}\n");
}

TEST(CheckRules, VirtualFunction) {
  expect_rule("struct Op {\n  virtual float run(float x) const { return x; }  // HERE\n};\n", rules::kVirtualFunction);
}

TEST(CheckRules, VirtualFunctionNearMiss) {
  expect_clean(
      "struct Op { float scale; float run(float x) const { return scale * x; } };\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  Op op{2.0f};\n  out[i] = op.run(out[i]);\n}\n");
}

// The undocumented Metal metal-flash-attention v1 is built on (the cpu
// backend runs the same constructs: tests/cpu/metal_internals_test.cpp):
// the simdgroup async copies of <metal_simdgroup_future>, the 8x8 multiply
// builtin on vec<T, 64>, vectors direct-initialized, and a
// visible_function_table taken by value with [[buffer(n)]].
TEST(CheckRules, MetalFlashAttentionInternalsAreValidMetal) {
  expect_clean(
      "#include <metal_simdgroup_future>\n"
      "constant bool fused [[function_constant(0)]];\n"
      "kernel void k(device const half* a [[buffer(0)]], device float* out [[buffer(1)]],\n"
      "              visible_function_table<float(float)> table [[buffer(2), function_constant(fused)]],\n"
      "              threadgroup half* tile [[threadgroup(0)]]) {\n"
      "  ushort2 origin(8, 8);\n"
      "  __metal_simdgroup_event_t e = __metal_simdgroup_async_copy_2d(sizeof(half), alignof(half), tile, 8, 1,\n"
      "      ulong2(origin), a, 8, 1, ulong2(origin), long2(0), 0);\n"
      "  __metal_wait_simdgroup_events(1, &e);\n"
      "  vec<half, 64> x = tile[0];\n"
      "  vec<float, 64> d = __metal_simdgroup_matrix_8x8_multiply_accumulate(x, x, vec<float, 64>(0), vec<float, 64>());\n"
      "  out[0] = fused ? table[0](d[0]) : d[0];\n"
      "}\n");
}

TEST(CheckRules, MetalFlashAttentionInternalsNearMiss) {
  // By value, only a function table is a buffer; the builtin takes no
  // half x float -> half product.
  expect_rule("struct P { float s; };\nkernel void k(P p [[buffer(0)]]) {}  // HERE\n",
              rules::kKernelParameterAttribute);
  CheckResult r = check_both_ways(kHeader +
                                      "kernel void k(device float* out [[buffer(0)]]) {\n"
                                      "  vec<half, 64> h = 1.0h; vec<float, 64> f = 1.0f;\n"
                                      "  out[0] = __metal_simdgroup_matrix_8x8_multiply_accumulate(h, f, h, "
                                      "vec<half, 64>())[0];\n"
                                      "}\n",
                                  "builtin.metal");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(dump(r).find("half, bfloat or float operands into a float accumulator"), std::string::npos) << dump(r);
}

TEST(CheckRules, ExceptionsThrow) {
  expect_rule("float checked(float x) {\n  if (x < 0) throw 1;  // HERE\n  return x;\n}\n", rules::kExceptions);
}

TEST(CheckRules, ExceptionsTry) {
  expect_rule("float guarded(float x) {\n  try {  // HERE\n  } catch (...) {\n  }\n  return x;\n}\n",
              rules::kExceptions);
}

TEST(CheckRules, ExceptionsNearMiss) {
  expect_clean(
      "bool checked(float x, thread float& out) { if (x < 0) return false; out = x; return true; }\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float y = 0;\n  if (!checked(out[i], y)) return;\n  out[i] = y;\n}\n");
}

TEST(CheckRules, DynamicAllocationNew) {
  expect_rule("void f() {\n  int* p = new int;  // HERE\n  (void)p;\n}\n", rules::kDynamicAllocation);
}

TEST(CheckRules, DynamicAllocationDelete) {
  expect_rule("void f(thread int* p) {\n  delete p;  // HERE\n}\n", rules::kDynamicAllocation);
}

TEST(CheckRules, DynamicAllocationMalloc) {
  expect_rule("void f() {\n  thread void* p = malloc(16);  // HERE\n  (void)p;\n}\n", rules::kDynamicAllocation);
}

TEST(CheckRules, DynamicAllocationNearMiss) {
  expect_clean(
      "uint allocate_slot(thread uint& next) { return next++; }\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float scratch[4] = {1, 2, 3, 4};\n  uint next = 0;\n"
      "  out[i] = scratch[allocate_slot(next)];\n}\n");
}

TEST(CheckRules, Goto) {
  expect_rule(
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  if (i > 4) goto done;  // HERE\n  out[i] = 1;\ndone:\n  return;\n}\n",
      rules::kGoto);
}

TEST(CheckRules, GotoNearMiss) {
  expect_clean(
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  for (uint j = 0; j < 8; ++j) {\n    if (j == i) continue;\n    if (j > 6) break;\n"
      "    out[i] += 1;\n  }\n}\n");
}

TEST(CheckRules, StdLibrary) {
  expect_rule("float smaller(float a, float b) {\n  return std::min(a, b);  // HERE\n}\n", rules::kStdLibrary);
}

TEST(CheckRules, StdLibraryNearMiss) {
  expect_clean(
      "float smaller(float a, float b) { return metal::min(a, b); }\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  const float std_dev = 2;\n  out[i] = smaller(out[i], std_dev);\n}\n");
}

TEST(CheckRules, Include) {
  expect_rule("#include <vector>  // HERE\nfloat f(float x) { return x; }\n", rules::kInclude);
  expect_rule("#include \"helpers.h\"  // HERE\nfloat f(float x) { return x; }\n", rules::kInclude);
}

TEST(CheckRules, IncludeNearMiss) {
  expect_clean(
      "#include <metal_math>\n#include <metal_simdgroup_matrix>\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = exp2(out[i]);\n}\n");
}

TEST(CheckRules, ThreadPointerEscape) {
  expect_rule(
      "struct Slot { ulong address; };\n"
      "kernel void k(device Slot* slots [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float local_value = 1.0f;\n"
      "  slots[i].address = (ulong)&local_value;  // HERE\n}\n",
      rules::kThreadPointerEscape);
}

TEST(CheckRules, ThreadPointerEscapeThroughPointerVariable) {
  expect_rule(
      "struct Holder { thread float* p; };\n"
      "kernel void k(device ulong* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float x = 1.0f;\n  thread float* p = &x;\n"
      "  out[i] = (ulong)p;  // HERE\n}\n",
      rules::kThreadPointerEscape);
}

TEST(CheckRules, ThreadPointerEscapeNearMiss) {
  // Values and device pointers may be stored to device memory.
  expect_clean(
      "struct Link { device float* next; float value; };\n"
      "kernel void k(device Link* links [[buffer(0)]], device float* data [[buffer(1)]],\n"
      "              uint i [[thread_position_in_grid]]) {\n"
      "  float x = 1.0f;\n  thread float* p = &x;\n"
      "  links[i].next = data + i;\n  links[i].value = *p;\n}\n");
}

TEST(CheckRules, GenericPointerFromDevice) {
  expect_rule(
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float* p = out;  // HERE\n  p[i] = 1.0f;\n}\n",
      rules::kGenericPointer);
}

TEST(CheckRules, GenericPointerFromThreadgroup) {
  expect_rule(
      "void fill(float* p) { p[0] = 1.0f; }\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  threadgroup float tile[32];\n"
      "  fill(tile);  // HERE\n  out[i] = tile[0];\n}\n",
      rules::kGenericPointer);
}

TEST(CheckRules, GenericPointerAssignment) {
  expect_rule(
      "kernel void k(constant float* in [[buffer(0)]], device float* out [[buffer(1)]],\n"
      "              uint i [[thread_position_in_grid]]) {\n"
      "  const float* p;\n  p = out;  // HERE\n  out[i] = p[0] + in[0];\n}\n",
      rules::kGenericPointer);
}

TEST(CheckRules, GenericPointerNearMiss) {
  expect_clean(
      "void fill(threadgroup float* p) { p[0] = 1.0f; }\n"
      "float first(const device float& x) { return x; }\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  threadgroup float tile[32];\n  device float* p = out + i;\n  float x = 2.0f;\n  float* t = &x;\n"
      "  fill(tile);\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  *p = tile[0] + *t + first(out[0]);\n}\n");
}

TEST(CheckRules, KernelParameterWithoutAttribute) {
  expect_rule(
      "kernel void k(device float* out [[buffer(0)]],\n"
      "              uint count) {  // HERE\n  out[0] = count;\n}\n",
      rules::kKernelParameterAttribute);
}

// llama.cpp's kernels leave [[buffer(n)]] off device and constant pointers
// and references; Metal binds them to the lowest indices no other parameter
// names, in declaration order, as the cpu backend does. Valid, and the
// signature says where each one is bound.
TEST(CheckRules, ImplicitBufferIndicesAreTheLowestFreeInDeclarationOrder) {
  const std::string source = kHeader +
                             "struct Args { int n; };\n"
                             "kernel void k(constant Args& args, device const float* src [[buffer(0)]],\n"
                             "              device float* dst, uint i [[thread_position_in_grid]]) {\n"
                             "  if (int(i) < args.n) dst[i] = src[i];\n}\n";
  CheckResult r = check_both_ways(source, "implicit.metal");
  EXPECT_TRUE(r.ok()) << dump(r);
  ASSERT_EQ(r.kernels.size(), 1u);
  std::map<std::string, uint32_t> index;
  for (const BufferParam& b : r.kernels[0].buffers) index[b.name] = b.index;
  EXPECT_EQ(index, (std::map<std::string, uint32_t>{{"src", 0u}, {"args", 1u}, {"dst", 2u}}));
}

TEST(CheckRules, KernelParameterBufferOnValue) {
  expect_rule(
      "kernel void k(device float* out [[buffer(0)]],\n"
      "              uint count [[buffer(1)]]) {  // HERE\n  out[0] = count;\n}\n",
      rules::kKernelParameterAttribute);
}

TEST(CheckRules, DuplicateBufferIndex) {
  expect_rule(
      "kernel void k(device float* a [[buffer(2)]],\n"
      "              device float* b [[buffer(2)]]) {  // HERE\n  a[0] = b[0];\n}\n",
      rules::kDuplicateBindingIndex);
}

TEST(CheckRules, BindingNearMiss) {
  // buffer(0) and threadgroup(0) are different tables; builtins need no index.
  expect_clean(
      "struct Params { uint n; };\n"
      "kernel void k(device float* a [[buffer(0)]], constant Params& params [[buffer(1)]],\n"
      "              threadgroup float* scratch [[threadgroup(0)]],\n"
      "              uint3 group [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {\n"
      "  scratch[lane] = a[group.x];\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  if (lane < params.n) a[lane] = scratch[0];\n}\n");
}

TEST(CheckRules, KernelReturnType) {
  expect_rule("kernel float k(device float* a [[buffer(0)]]) {  // HERE\n  return a[0];\n}\n",
              rules::kKernelReturnType);
  expect_rule("[[kernel]] uint k2(device float* a [[buffer(0)]]) {  // HERE\n  return 0;\n}\n",
              rules::kKernelReturnType);
}

TEST(CheckRules, KernelReturnTypeNearMiss) {
  expect_clean(
      "float load(device float* a, uint i) { return a[i]; }\n"
      "[[kernel]] void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  a[i] = load(a, i) + 1;\n}\n");
}

TEST(CheckRules, Double) {
  expect_rule("float widen(float x) {\n  double wide = x;  // HERE\n  return float(wide);\n}\n", rules::kDouble);
  expect_rule("float cast(float x) {\n  return float((double)x * 2);  // HERE\n}\n", rules::kDouble);
}

// Metal types an unsuffixed floating literal as float (MSL section 2.1 has
// no double; mfagen/msl/literal_types.h), so ggml's `0.5*x` is valid Metal.
TEST(CheckRules, UnsuffixedFloatingLiteralsAreValidMetal) {
  expect_clean(
      "kernel void k(device float4* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float4 x = out[i];\n  float4 v(0.0);\n"
      "  out[i] = 0.5*x + fmin(1, x.x/6 + 0.5) + v + 16777217.0 - 1e-3;\n}\n");
  expect_clean(
      "kernel void k(device half* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = out[i] * 1e-3;\n}\n");
}

// ggml writes attributes right after the parameter's name.
TEST(CheckRules, AttributeListWithoutASpaceBeforeIt) {
  expect_clean(
      "kernel void k(device float* out[[buffer(0)]], uint3 tgpig[[threadgroup_position_in_grid]],\n"
      "              ushort tiisg[[thread_index_in_simdgroup]]) {\n"
      "  out[tgpig.x * 32 + tiisg] = 1.0f;\n}\n");
}

// MLX's rope and binary kernels: array kernel parameters (pointers to their
// first element) and braced lists for vector parameters, which Metal
// list-initializes and the cpu backend runs; a list with more elements than
// the vector is what Metal rejects, an error here as in the cpu backend.
TEST(CheckRules, ArrayParametersAndBracedListsForVectorsAreValidMetal) {
  expect_clean(
      "template <typename I>\nI at(uint3 e, constant const int64_t* s) { return I(e.x * s[0] + e.y + e.z); }\n"
      "float scaled(float2 xy) { return xy.x * 10.0f + xy.y; }\n"
      "kernel void k(device float* out [[buffer(0)]], constant const int64_t strides[2] [[buffer(1)]],\n"
      "              uint2 pos [[thread_position_in_grid]]) {\n"
      "  out[at<int>({2 * pos.x, pos.y, 0u}, strides)] = scaled({1.0f, float(pos.y)});\n}\n");
  expect_rule(
      "float scaled(float2 xy) { return xy.x * 10.0f + xy.y; }\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = scaled({1.0f, 2.0f, 3.0f});  // HERE\n}\n",
      rules::kCompileError);
}

// MLX's layer_norm: a threadgroup variable with an initializer is valid
// Metal (Apple's compiler accepts it); the cpu backend accepts it without
// applying it. An array sized by its initializer is what it cannot lower.
TEST(CheckRules, ThreadgroupInitializerIsValidMetal) {
  expect_clean(
      "kernel void k(device float* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]]) {\n"
      "  threadgroup float partial[32] = {0}, other[2] = {1.0f, 2.0f};\n"
      "  partial[lid] = other[lid % 2];\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  out[lid] = partial[31 - lid];\n}\n");
  expect_rule(
      "kernel void k(device float* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]]) {\n"
      "  threadgroup float seed[] = {1.0f, 2.0f};  // HERE\n"
      "  out[lid] = seed[lid % 2];\n}\n",
      rules::kCpuLowering);
}

// MLX's fence.metal: metal::thread_scope before any #include (Apple's
// compiler declares it) and Metal 3.2's `coherent(system)` buffers.
TEST(CheckRules, ThreadScopeWithoutIncludeAndCoherentBuffersAreValidMetal) {
  // Not starting with #include <metal_stdlib>, the file is parsed without the precompiled stand-in.
  CheckResult r = check_msl(
      "namespace metal {\n"
      "constexpr constant metal::thread_scope widest = static_cast<thread_scope>(3);\n}\n"
      "#include <metal_atomic>\n"
      "[[kernel]] void k(volatile coherent(system) device uint* p [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  p[i] = p[i] + 1u;\n"
      "  metal::atomic_thread_fence(metal::mem_flags::mem_device, metal::memory_order_seq_cst, metal::widest);\n}\n",
      "fence_style.metal");
  EXPECT_TRUE(r.ok()) << dump(r);
}

// MLX's fft/readwrite.h: a class template partially specialized on
// vec<T, 2> is valid Metal (vec<T, n> names the builtin vector types, MSL
// specification section 2.2), used for float2, half2, bool2 and int2 with T
// their element type; the kernel of the cpu backend's
// PeerConstructs.PartialSpecializationOnVecDeducesTheElement. Both lowerings
// share the rewrite (mfagen/msl/vec_partial_specializations.h), so a bfloat
// vector, which it cannot deduce, is an error in both.
TEST(CheckRules, PartialSpecializationOnVecIsValidMetal) {
  const std::string traits =
      "template <typename storage_T>\n"
      "struct PeerScalarOf {\n"
      "  using scalar_T = storage_T;\n"
      "  static constexpr constant int lanes = 1;\n"
      "};\n"
      "template <typename T>\n"
      "struct PeerScalarOf<vec<T, 2>> {\n"
      "  using scalar_T = T;\n"
      "  static constexpr constant int lanes = 2;\n"
      "};\n";
  expect_clean(traits +
               "kernel void vec_partial_specialization(device int* out [[buffer(0)]]) {\n"
               "  out[0] = PeerScalarOf<float2>::lanes;\n"
               "  out[1] = int(sizeof(PeerScalarOf<half2>::scalar_T));\n"
               "  out[2] = int(is_same_v<PeerScalarOf<bool2>::scalar_T, bool>);\n"
               "  out[3] = int(is_same_v<PeerScalarOf<metal::vec<int, 2>>::scalar_T, int>);\n"
               "  out[4] = PeerScalarOf<float4>::lanes;\n"
               "  out[5] = PeerScalarOf<float>::lanes;\n}\n");
  expect_rule(traits +
                  "kernel void k(device int* out [[buffer(0)]]) {\n"
                  "  out[0] = PeerScalarOf<bfloat2>::lanes;  // HERE\n}\n",
              rules::kCompileError);
}

// MLX's fft/readwrite.h: `complex_T(x, -y)` and `(complex_T)i` with `using
// complex_T = vec<scalar_T, 2>;` in a class template are Metal's vector
// constructor and cast (the kernel of
// PeerConstructs.ConstructorsAndCastsThroughVectorAliases). Both lowerings
// share the rewrite (mfagen/msl/vector_syntax.h); before it, both reported
// clang's "excess elements in scalar initializer". A constructor with more
// elements than the vector stays an error in both.
TEST(CheckRules, ConstructorsThroughVectorAliasesAreValidMetal) {
  const std::string conj =
      "template <typename T>\n"
      "struct PeerConj {\n"
      "  using scalar_T = T;\n"
      "  using complex_T = vec<scalar_T, 2>;\n"
      "  bool inv;\n"
      "  complex_T post(complex_T e) const thread { return inv ? complex_T(e.x, -e.y) : e; }\n"
      "  complex_T make(scalar_T a) const thread { return complex_T(a, 0); }\n"
      "  complex_T cast(int2 i) const thread { return (complex_T)i; }\n"
      "  complex_T wide(scalar_T a) const thread { return complex_T(a, a, a); }  // HERE\n"
      "};\n";
  expect_clean(conj +
               "kernel void vector_alias_constructors(device float* out [[buffer(0)]]) {\n"
               "  PeerConj<float> c{true};\n"
               "  float2 a = c.post(float2(1.5f, 2.5f)), b = c.make(3.0f), d = c.cast(int2(7, -9));\n"
               "  PeerConj<half> h{true};\n"
               "  half2 e = h.post(half2(0.25h, -4.0h));\n"
               "  typedef float4 peer_quad;\n"
               "  peer_quad q = peer_quad(a, b);\n"
               "  out[0] = a.x + b.y + d.x + float(e.x) + q.w;\n}\n");
  // The stand-in's static_assert reports it, at the stand-in's line, with
  // the instantiation noted at the marked line.
  const std::string wide = kHeader + conj +
                           "kernel void k(device float2* out [[buffer(0)]]) {\n"
                           "  PeerConj<float> c{true};\n"
                           "  out[0] = c.wide(1.0f);\n}\n";
  CheckResult r = check_both_ways(wide, "wide.metal");
  const std::string noted = fmt::format("{}:", line_of(wide, "// HERE"));
  bool found = false;
  for (const Diagnostic& d : r.diagnostics)
    found |= d.rule == rules::kCompileError && d.message.find("Metal vector constructor") != std::string::npos &&
             d.message.find("(note: " + noted) != std::string::npos;
  EXPECT_TRUE(found) << dump(r);
}

// Functions given as template arguments (MSL specification 4, sections
// 1.5.2 and 1.5.4; MLX and llama.cpp ship them): MLX's fft.h passes
// `radix2<T>` for a template parameter of type `RadixFunc<T>`, an alias
// template of a pointer to function, and llama.cpp passes its dequantizers
// for `void (*dequantize_func)(...)` parameters. The cpu backend runs both
// (PeerConstructs.FunctionPointerAliasTemplateParameters,
// ThirdPartyStyle.*); the checker lowers them with the same pass
// (mfagen/msl/function_pointers.h). It reported both
// (`function-pointer`, then "invalid explicitly-specified argument").
TEST(CheckRules, FunctionPointerTemplateParametersAreValidMetal) {
  expect_clean(
      "template <typename T>\n"
      "using PeerButterfly = void (*)(thread vec<T, 2>*, thread vec<T, 2>*);\n"
      "template <typename T>\n"
      "METAL_FUNC void peer_radix2(thread vec<T, 2>* x, thread vec<T, 2>* y) {\n"
      "  y[0] = x[0] + x[1];\n  y[1] = x[0] - x[1];\n}\n"
      "template <typename T, PeerButterfly<T> butterfly>\n"
      "void peer_step(thread vec<T, 2>* x, thread vec<T, 2>* y) { butterfly(x, y); }\n"
      "void peer_dequantize(device const uchar* src, short il, thread float4& out) {\n"
      "  out = float4(src[il], src[il + 1], src[il + 2], src[il + 3]) * 0.5f;\n}\n"
      "template <typename block_q, short nl, void (*dequantize_func)(device const block_q*, short, thread float4&)>\n"
      "kernel void peer_get_rows(device const block_q* src [[buffer(0)]], device float4* dst [[buffer(1)]],\n"
      "                          uint i [[thread_position_in_grid]]) {\n"
      "  float4 v;\n  dequantize_func(src, short(i % nl) * 4, v);\n  dst[i] = v;\n}\n"
      "typedef decltype(peer_get_rows<uchar, 2, peer_dequantize>) get_rows_t;\n"
      "template [[host_name(\"peer_get_rows_u8\")]] kernel get_rows_t peer_get_rows<uchar, 2, peer_dequantize>;\n"
      "kernel void k(device float2* io [[buffer(0)]]) {\n"
      "  float2 x[2] = {io[0], io[1]}, y[2];\n"
      "  peer_step<float, peer_radix2<float>>(x, y);\n"
      "  io[0] = y[0], io[1] = y[1];\n}\n");
}

// An argument written `&f` is valid C++ for a pointer-to-function template
// parameter, but does not bind to the reference both lowerings make of it:
// an error in both (the cpu backend's CompileErrors.AddressOfFunctionAsTemplateArgument),
// not a different result. MLX and llama.cpp name the function.
TEST(CheckRules, AddressOfFunctionAsTemplateArgument) {
  expect_rule(
      "float twice(float x) { return 2 * x; }\n"
      "template <float (*op)(float)> float apply(float x) { return op(x); }\n"
      "kernel void k(device float* out [[buffer(0)]]) {\n"
      "  out[0] = apply<&twice>(out[0]);  // HERE\n}\n",
      rules::kCompileError);
}

// MLX's conv.metal redeclares its constexpr static members in the constant
// space after the class, without an initializer (C++14's required
// definition, redundant in C++17): valid Metal, dropped by both lowerings
// (mfagen/msl/redundant_constexpr_definitions.h); before, both reported
// "variable in constant address space must be initialized". A constant
// variable without an initializer that is no such member stays that error.
TEST(CheckRules, RedundantConstexprMemberDefinitionsAreValidMetal) {
  expect_clean(
      "struct PeerTable {\n"
      "  static constant constexpr const float w[2][3] = {{1.5f, 2, 3}, {4, 5, -6}};\n"
      "  static constant constexpr const int n = 7;\n"
      "};\n"
      "constant constexpr const float PeerTable::w[2][3];\n"
      "constant constexpr const int PeerTable::n;\n"
      "template <int N>\n"
      "struct PeerTwice {\n"
      "  static constant constexpr const int k = N * 2;\n"
      "};\n"
      "template <int N>\n"
      "constexpr constant const int PeerTwice<N>::k;\n"
      "kernel void constexpr_member_definitions(device float* out [[buffer(0)]],\n"
      "                                         uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = PeerTable::w[i / 3][i % 3] * PeerTable::n + PeerTwice<5>::k;\n}\n");
  expect_rule(
      "constant const float peer_unset[2];  // HERE\n"
      "kernel void k(device float* out [[buffer(0)]]) { out[0] = peer_unset[1]; }\n",
      rules::kCompileError);
}

// A long double literal is what Metal rejects (no long double).
TEST(CheckRules, LongDoubleLiteral) {
  expect_rule(
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = out[i] * 0.5L;  // HERE\n}\n",
      rules::kDouble);
  expect_rule(
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = out[i] + 1e-3l;  // HERE\n}\n",
      rules::kDouble);
}

TEST(CheckRules, SuffixedFloatingLiteralsNearMiss) {
  expect_clean(
      "constant float kEps = 1e-6f;\n"
      "kernel void k(device half* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = out[i] * 0.5h + half(2.5F * kEps) + half(1);\n}\n");
}

TEST(CheckRules, DoubleNearMiss) {
  expect_clean(
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float doubled = out[i] * 2.0f;\n  half h = half(doubled);\n  out[i] = float(h);\n}\n");
}

TEST(CheckRules, StaticLocal) {
  expect_rule("uint counter() {\n  static uint calls = 0;  // HERE\n  return ++calls;\n}\n", rules::kStaticLocal);
}

TEST(CheckRules, StaticLocalNearMiss) {
  expect_clean(
      "constant float kTable[4] = {1, 2, 3, 4};\n"
      "constant constexpr uint kCount = 4;\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  const float scale = 2.0f;\n  out[i] = kTable[i % kCount] * scale;\n}\n");
}

// Valid Metal the cpu backend (where the tests run kernels) cannot lower:
// the vector-cast rewrite would negate its helper, not the value. The cast
// stays as written, so the finding is the only diagnostic.
TEST(CheckRules, CpuLoweringUnaryOperatorBeforeVectorCast) {
  const std::string source = kHeader + "float4 negate(int4 i) {\n  return -(float4)i;  // HERE\n}\n";
  CheckResult r = check_both_ways(source, "cast.metal");
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r);
  EXPECT_EQ(r.diagnostics[0].rule, rules::kCpuLowering);
  EXPECT_EQ(r.diagnostics[0].line, line_of(source, "// HERE"));
}

TEST(CheckRules, CpuLoweringNearMiss) {
  expect_clean("float4 negate(int4 i, float4 x) {\n  return -float4(i) + x - (float4)i + -x;\n}\n");
}

// OpenCL keywords are identifiers in Metal; a member named `global` is
// renamed where it is declared and where it is used.
TEST(CheckRules, OpenClKeywordsAsNamesNearMiss) {
  expect_clean(
      "struct Range { uint global; uint local; };\n"
      "kernel void k(device float* out [[buffer(0)]], constant Range& r [[buffer(1)]],\n"
      "              uint i [[thread_position_in_grid]]) {\n"
      "  uint local = r.local;\n  out[i] = float(r.global + local);\n}\n");
}

TEST(CheckRules, ColumnsAreThoseOfTheOriginalText) {
  // Address spaces and attributes are rewritten before parsing; positions
  // must still be those of the file as written.
  const std::string source = kHeader +
                             "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                             "{ device float* p = out; double d = 1; out[i] = d; }\n";
  CheckResult r = check_both_ways(source, "columns.metal");
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r);
  const std::string line3 = source.substr(source.find("kernel"));
  EXPECT_EQ(r.diagnostics[0].rule, rules::kDouble);
  EXPECT_EQ(r.diagnostics[0].line, 3u);
  EXPECT_EQ(r.diagnostics[0].column, line3.find("double") + 1);
}

TEST(CheckRules, ClangErrorsKeepTheirLocation) {
  const std::string source = kHeader +
                             "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                             "  out[i] = 1.0f\n}\n";
  CheckResult r = check_both_ways(source, "broken.metal");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].rule, rules::kCompileError);
  EXPECT_EQ(r.diagnostics[0].to_string(), "broken.metal:4:16: error: expected ';' after expression [compile-error]");
}

TEST(CheckRules, AddressSpaceMismatchIsAnError) {
  // Metal's address spaces are clang address spaces: mixing them is an error
  // in Metal's spelling.
  const std::string source = kHeader +
                             "void store(device float* p) { p[0] = 1; }\n"
                             "kernel void k(device float* out [[buffer(0)]]) {\n"
                             "  threadgroup float tile[4];\n  store(tile);\n  out[0] = tile[0];\n}\n";
  CheckResult r = check_both_ways(source, "spaces.metal");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].line, 6u) << dump(r);
  EXPECT_NE(r.diagnostics[0].message.find("threadgroup"), std::string::npos) << dump(r);
}

TEST(CheckSignatures, BuffersBuiltinsConstantsAndThreadgroupMemory) {
  const std::string source = kHeader +
                             "struct Params { uint n; float scale; };\n"
                             "constant bool has_bias [[function_constant(3)]];\n"
                             "constant uint tile_rows [[function_constant(0)]];\n"
                             "kernel void scale(device const half* in [[buffer(0)]],\n"
                             "                  device float* out [[buffer(2)]],\n"
                             "                  constant Params& params [[buffer(1)]],\n"
                             "                  threadgroup float* scratch [[threadgroup(0)]],\n"
                             "                  uint3 group [[threadgroup_position_in_grid]],\n"
                             "                  ushort lane [[thread_index_in_simdgroup]]) {\n"
                             "  threadgroup float a[64];\n"
                             "  threadgroup half b[2][16];\n"
                             "  a[lane] = float(in[group.x]) * params.scale;\n"
                             "  b[0][lane % 16] = half(a[0]);\n"
                             "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                             "  if (has_bias && is_function_constant_defined(has_bias)) scratch[lane] = 1;\n"
                             "  out[group.x] = a[lane] + float(b[0][0]) + tile_rows;\n"
                             "}\n";
  CheckResult r = check_both_ways(source, "sig.metal");
  ASSERT_TRUE(r.ok()) << dump(r);
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelSignature& k = r.kernels[0];
  EXPECT_EQ(k.name, "scale");
  EXPECT_EQ(k.line, 6u);
  EXPECT_EQ(k.threadgroup_memory_bytes, 64u * 4 + 2 * 16 * 2);
  ASSERT_EQ(k.buffers.size(), 3u);
  EXPECT_EQ(k.buffers[0].index, 0u);
  EXPECT_EQ(k.buffers[0].name, "in");
  EXPECT_EQ(k.buffers[0].space, AddressSpace::device);
  EXPECT_EQ(k.buffers[0].element_type, "half");
  EXPECT_TRUE(k.buffers[0].is_const);
  EXPECT_EQ(k.buffers[0].metal_type(), "device const half*");
  EXPECT_EQ(k.buffers[1].metal_type(), "device float*");
  EXPECT_EQ(k.buffers[1].index, 2u);
  EXPECT_EQ(k.buffers[2].metal_type(), "constant Params&");
  EXPECT_TRUE(k.buffers[2].is_reference);
  ASSERT_EQ(k.threadgroup_buffers.size(), 1u);
  EXPECT_EQ(k.threadgroup_buffers[0].metal_type(), "threadgroup float*");
  ASSERT_EQ(k.builtins.size(), 2u);
  EXPECT_EQ(k.builtins[0].attribute, "threadgroup_position_in_grid");
  EXPECT_EQ(k.builtins[0].type, "uint3");
  EXPECT_EQ(k.builtins[1].type, "ushort");
  ASSERT_EQ(r.function_constants.size(), 2u);
  EXPECT_EQ(r.function_constants[0].index, 0u);
  EXPECT_EQ(r.function_constants[0].name, "tile_rows");
  EXPECT_EQ(r.function_constants[0].type, "uint");
  EXPECT_EQ(r.function_constants[1].index, 3u);
  EXPECT_EQ(r.function_constants[1].type, "bool");
}

// Gaps closed from earlier notes: generic pointers in return statements and
// as the implicit object of a member call; thread pointers escaping through
// struct copies and aggregate initialization.
TEST(CheckRules, GenericPointerReturned) {
  expect_rule(
      "float* at(device float* p, uint i) {\n  return p + i;  // HERE\n}\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  *at(out, i) = 1.0f;\n}\n",
      rules::kGenericPointer);
}

TEST(CheckRules, GenericPointerReturnedNearMiss) {
  expect_clean(
      "device float* at(device float* p, uint i) { return p + i; }\n"
      "thread float* pick(thread float* a, thread float* b, bool first) { return first ? a : b; }\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float x = 1.0f, y = 2.0f;\n  *at(out, i) = *pick(&x, &y, i % 2 == 0);\n}\n");
}

TEST(CheckRules, MemberCallOnDeviceObjectWithThreadThis) {
  expect_rule(
      "struct Acc { float v; float twice() const { return 2.0f * v; } };\n"
      "kernel void k(device Acc* acc [[buffer(0)]], device float* out [[buffer(1)]],\n"
      "              uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = acc[i].twice();  // HERE\n}\n",
      rules::kGenericPointer);
}

// clang itself refuses a constant object for a generic `this`, as Metal does.
TEST(CheckRules, MemberCallOnConstantObjectThroughArrow) {
  expect_rule(
      "struct Table { float scale; float at(uint i) const { return scale * float(i); } };\n"
      "kernel void k(constant Table* t [[buffer(0)]], device float* out [[buffer(1)]],\n"
      "              uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = t->at(i);  // HERE\n}\n",
      rules::kCompileError);
}

TEST(CheckRules, MemberOperatorOnThreadgroupObject) {
  expect_rule(
      "struct Sum { float v; void operator+=(float x) { v += x; } };\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  threadgroup Sum total;\n"
      "  total += 1.0f;  // HERE\n  out[0] = total.v;\n}\n",
      rules::kGenericPointer);
}

TEST(CheckRules, MemberCallNearMiss) {
  // Methods declared for the object's address space, called on thread
  // objects, and compiler-made copies are all valid Metal.
  expect_clean(
      "struct Acc {\n  float v;\n  float twice() const device { return 2.0f * v; }\n"
      "  float thrice() const { return 3.0f * v; }\n};\n"
      "kernel void k(device Acc* acc [[buffer(0)]], device float* out [[buffer(1)]],\n"
      "              uint i [[thread_position_in_grid]]) {\n"
      "  Acc local = acc[i];\n  acc[i] = local;\n"
      "  out[i] = acc[i].twice() + local.thrice();\n}\n");
}

TEST(CheckRules, ThreadPointerEscapeThroughStructCopy) {
  expect_rule(
      "struct Holder { thread float* p; float w; };\n"
      "kernel void k(device Holder* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float x = 1.0f;\n  Holder h;\n  h.p = &x;\n  h.w = 2.0f;\n"
      "  out[i] = h;  // HERE\n}\n",
      rules::kThreadPointerEscape);
}

TEST(CheckRules, ThreadPointerEscapeThroughAggregateInitialization) {
  expect_rule(
      "struct Holder { thread float* p; };\n"
      "struct Outer { float w; Holder inner[2]; };\n"
      "kernel void k(device Outer* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float x = 1.0f;\n"
      "  out[i] = Outer{2.0f, {Holder{&x}, Holder{&x}}};  // HERE\n}\n",
      rules::kThreadPointerEscape);
}

TEST(CheckRules, ThreadPointerEscapeThroughStructNearMiss) {
  // Structs holding device pointers may be stored; thread pointers in a
  // struct that stays in the thread are fine.
  expect_clean(
      "struct Link { device float* next; float w; };\n"
      "struct Holder { thread float* p; };\n"
      "kernel void k(device Link* links [[buffer(0)]], device float* data [[buffer(1)]],\n"
      "              uint i [[thread_position_in_grid]]) {\n"
      "  float x = 1.0f;\n  Holder h = {&x};\n"
      "  links[i] = Link{data + i, *h.p};\n}\n");
}

// Metal's templated kernels, instantiated under host names (MLX's style and
// the explicit signature): entry points with the instantiated types.
TEST(CheckSignatures, TemplatedKernelsAreEntryPointsUnderTheirHostNames) {
  const std::string source = kHeader +
                             "template <typename T, int N>\n"
                             "[[kernel]] void copy_n(device const T* in [[buffer(0)]], device T* out [[buffer(1)]],\n"
                             "                       uint i [[thread_position_in_grid]]) {\n"
                             "  for (int j = 0; j < N; ++j) out[i * N + j] = in[i * N + j];\n"
                             "}\n"
                             "template [[host_name(\"copy_f32_4\")]] [[kernel]] decltype(copy_n<float, 4>) "
                             "copy_n<float, 4>;\n"
                             "template [[host_name(\"copy_f16_2\")]] kernel void copy_n<half, 2>(device const half*, "
                             "device half*, uint);\n";
  CheckResult r = check_both_ways(source, "templated.metal");
  ASSERT_TRUE(r.ok()) << dump(r);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].name, "copy_f32_4");
  EXPECT_EQ(r.kernels[1].name, "copy_f16_2");
  ASSERT_EQ(r.kernels[1].buffers.size(), 2u);
  EXPECT_EQ(r.kernels[1].buffers[0].metal_type(), "device const half*");
  EXPECT_EQ(r.kernels[1].buffers[1].metal_type(), "device half*");
  EXPECT_EQ(r.kernels[0].buffers[1].metal_type(), "device float*");
}

TEST(CheckRules, TemplatedKernelsAreChecked) {
  expect_rule(
      "template <typename T>\n"
      "kernel void scale(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  double wide = 2;  // HERE\n  out[i] = T(float(out[i]) * float(wide));\n}\n"
      "template [[host_name(\"scale_f32\")]] kernel void scale<float>(device float*, uint);\n",
      rules::kDouble);
  expect_rule(
      "template <typename T>\n"
      "[[kernel]] T first(device T* out [[buffer(0)]]) {  // HERE\n  return out[0];\n}\n"
      "template [[host_name(\"first_f32\")]] [[kernel]] float first<float>(device float*);\n",
      rules::kKernelReturnType);
}

// MLX's conv.metal multiplies simdgroup matrices with `*` (`(G * g) * Gt`):
// the MSL specification lists operator* among the SIMD-group matrix
// operations, one element type for both operands, and no + or -. The
// stand-in defines exactly that (PeerConstructs.SimdgroupMatrixOperatorMultiply),
// so a sum and a product of two element types are errors in both.
TEST(CheckRules, SimdgroupMatrixProductIsValidMetal) {
  const std::string loads =
      "kernel void k(const device float* a [[buffer(0)]], const device half* h [[buffer(1)]],\n"
      "              device float* out [[buffer(2)]]) {\n"
      "  simdgroup_float8x8 A, B;\n"
      "  simdgroup_half8x8 H;\n"
      "  simdgroup_load(A, a);\n"
      "  simdgroup_load(B, a + 64);\n"
      "  simdgroup_load(H, h);\n";
  expect_clean(loads +
               "  simdgroup_float8x8 D = (A * B) * A;\n"
               "  simdgroup_half8x8 HH = H * H;\n"
               "  simdgroup_store(D, out);\n}\n");
  expect_rule(loads +
                  "  simdgroup_float8x8 D = A + B;  // HERE\n"
                  "  simdgroup_store(D, out);\n}\n",
              rules::kCompileError);
  expect_rule(loads +
                  "  simdgroup_float8x8 D = A * H;  // HERE\n"
                  "  simdgroup_store(D, out);\n}\n",
              rules::kCompileError);
}

// MLX's conv.metal: a conditional between a threadgroup bfloat element and a
// bfloat prvalue (`c ? Ws[...][c] : T(0)`), and MLX's fft/radix.h: `x[0] -
// 0.5 * a_1` with a half2 a_1 (the float literal converts to half, MSL
// section 2.13). Valid Metal that clang rejects; the cpu backend and the
// checker repair both alike (diagnostic_repair.h, collect_operand_repairs):
// PeerConstructs.ConditionalBetweenAThreadgroupBfloatAndAPrvalue and
// PeerConstructs.FloatScalarTimesHalfVectorConvertsTheScalar. Arms of two
// different classes stay an error in both.
TEST(CheckRules, ConditionalAcrossAddressSpacesAndScalarTimesHalfVectorAreValidMetal) {
  expect_clean(
      "template <typename T>\n"
      "float peer_pick(threadgroup T* tg, bool c, int i) { return float(c ? tg[i] : T(0)); }\n"
      "template <typename T>\n"
      "void peer_scaled_difference(thread vec<T, 2>* x, thread vec<T, 2>* y) {\n"
      "  vec<T, 2> a = x[1] + x[2];\n"
      "  y[0] = x[0] - 0.7 * a;\n"
      "  y[1] = 0.5 * a - x[0];\n"
      "}\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_threadgroup]]) {\n"
      "  threadgroup bfloat tg[4];\n"
      "  threadgroup float tf[4];\n"
      "  tg[i] = bfloat(out[i]);\n"
      "  tf[i] = out[i];\n"
      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  half2 h[3] = {half2(1.0h), half2(0.5h), half2(0.25h)}, hy[2];\n"
      "  peer_scaled_difference<half>(h, hy);\n"
      "  float2 f[3] = {float2(1.0f), float2(0.5f), float2(0.25f)}, fy[2];\n"
      "  peer_scaled_difference<float>(f, fy);\n"
      "  out[i] = peer_pick<bfloat>(tg, i % 2 == 0, i) + peer_pick<float>(tf, true, i) + float(hy[0].x) + fy[1].y;\n"
      "}\n");
  expect_rule(
      "struct PeerOther { float v; };\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_threadgroup]]) {\n"
      "  threadgroup bfloat tg[4];\n"
      "  tg[i] = bfloat(out[i]);\n"
      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  PeerOther o = {1.0f};\n"
      "  out[i] = float(i % 2 ? tg[i] : o);  // HERE\n"
      "}\n",
      rules::kCompileError);
}

// llama.cpp's ggml-metal.metal: casts and constructors to a template
// parameter that is a vector (`(type4)(*src)`, `(q4_t) q4[i]`, `s2_t(x)`),
// short vector brace lists (`float4 acc = {0.f};`), a `constant` array passed
// for a `constant T*` parameter (Metal's constant space is read-only, so the
// pointee is const) and a float times a half vector in a template. The cpu
// backend runs each (the same passes, mfagen/msl/dependent_casts.h and
// short_vector_braces.h); a cast between vectors of different lengths stays
// an error in both.
TEST(CheckRules, DependentVectorCastsShortBracesAndConstantArraysAreValidMetal) {
  expect_clean(
      "constant float table[4] = {0.5f, 1.0f, 2.0f, 4.0f};\n"
      "float pick(int n, constant float * values, float x) { return values[n % 4] * x; }\n"
      "template <typename type4>\n"
      "void widen(device const half4 * src, thread type4 & reg) { reg = (type4)(*(src)); }\n"
      "template <typename q4_t, typename s2_t>\n"
      "float mix(device const float4 * q4, float slope) {\n"
      "  q4_t q = (q4_t) q4[0];\n"
      "  s2_t s = s2_t(q.xy) * slope;\n"
      "  q4_t scaled = q * slope;\n"
      "  return float(s.x + scaled.w);\n"
      "}\n"
      "kernel void k(device const half4* h [[buffer(0)]], device const float4* f [[buffer(1)]],\n"
      "              device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {\n"
      "  float4 acc = {0.f};\n"
      "  float2 sum = {0}, other{1.0f};\n"
      "  widen<float4>(h, acc);\n"
      "  out[i] = acc.x + sum.y + other.y + pick(int(i), table, 2.0f) + mix<half4, float2>(f, 0.5f);\n"
      "}\n");
  // Reported where the stand-in's conversion asserts, with the instantiation in the note.
  const CheckResult narrowing = check_both_ways(kHeader +
                                                    "template <typename type4>\n"
                                                    "void narrow(device const half4 * src, thread type4 & reg) "
                                                    "{ reg = (type4)(*(src)); }\n"
                                                    "kernel void k(device const half4* h [[buffer(0)]], device "
                                                    "float* out [[buffer(1)]],\n"
                                                    "              uint i [[thread_position_in_grid]]) {\n"
                                                    "  float2 r;\n"
                                                    "  narrow<float2>(h, r);\n"
                                                    "  out[i] = r.x;\n"
                                                    "}\n",
                                                "snippet.metal");
  EXPECT_TRUE(std::any_of(narrowing.diagnostics.begin(), narrowing.diagnostics.end(), [](const Diagnostic& d) {
    return d.rule == rules::kCompileError && d.message.find("same number of components") != std::string::npos;
  })) << dump(narrowing);
}

// A template kernel's kernel-scope threadgroup variables (llama.cpp's
// kernel_lightning_indexer, MLX's steel kernels): valid Metal, run by the
// cpu backend as references to the threadgroup's storage; the checker lowers
// them alike (OpenCL forbids local variables outside kernels, and a template
// kernel is a plain function to clang) and still counts their bytes.
TEST(CheckRules, ThreadgroupVariablesOfTemplateKernelsAreValidMetal) {
  expect_clean_with_threadgroup_bytes(
      "template <typename T, short N>\n"
      "kernel void tile(device const T* in [[buffer(0)]], device T* out [[buffer(1)]],\n"
      "                 ushort lane [[thread_index_in_simdgroup]]) {\n"
      "  const int base = 0;\n"
      "  threadgroup T staged[N];\n"
      "  threadgroup float sums [4];\n"
      "  threadgroup T * alias = (threadgroup T *) staged;\n"
      "  staged[lane % N] = in[base + lane];\n"
      "  sums[lane % 4] = 1.0f;\n"
      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  out[lane] = alias[(lane + 1) % N] + T(sums[0]);\n"
      "}\n"
      "template [[host_name(\"tile_half_16\")]] kernel void tile<half, 16>(device const half*, "
      "device half*, ushort);\n",
      "tile_half_16", 16u * 2 + 4 * 4);
}

// Two more forms of a template kernel's threadgroup variables (MLX's fft.h
// and layer_norm.metal, which `xcrun metal` builds): a template argument
// list with a comma in the type, and an initializer, which the cpu backend
// accepts and does not apply (docs/verification.md says why).
TEST(CheckRules, TemplateKernelThreadgroupVariablesWithTemplateTypesAndInitializersAreValidMetal) {
  expect_clean_with_threadgroup_bytes(
      "template <typename T, int N>\n"
      "[[kernel]] void pairs(device const T* in [[buffer(0)]], device T* out [[buffer(1)]],\n"
      "                      ushort lane [[thread_index_in_simdgroup]]) {\n"
      "  threadgroup vec<T, 2> staged[N];\n"
      "  threadgroup float sums[4] = {0};\n"
      "  staged[lane % N] = vec<T, 2>(in[lane], in[lane]);\n"
      "  sums[lane % 4] = 1.0f;\n"
      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  out[lane] = staged[(lane + 1) % N].y + T(sums[0]);\n"
      "}\n"
      "template [[host_name(\"pairs_float_8\")]] [[kernel]] void pairs<float, 8>(device const float*, "
      "device float*, ushort);\n",
      "pairs_float_8", 8u * 8 + 4 * 4);
}

// MLX's reduction kernels: `static constexpr constant U init = U(0);` and
// `= Limits<U>::max;` with U a class (its complex64_t), copied out as Metal
// copies from any space (mfagen/msl/constexpr_constants.h), and a template
// kernel's threadgroup array declared in a nested block (reduce_col.h).
TEST(CheckRules, ConstexprConstantsAndNestedThreadgroupArraysAreValidMetal) {
  expect_clean_with_threadgroup_bytes(
      "struct Pair {\n"
      "  float re, im;\n"
      "  constexpr Pair(float r, float i) thread : re(r), im(i) {}\n"
      "};\n"
      "template <typename T> struct Lim;\n"
      "template <> struct Lim<Pair> { static constexpr constant Pair max = Pair(2, 1); };\n"
      "template <> struct Lim<float> { static constexpr constant float max = 3; };\n"
      "template <typename U> struct MaxOp {\n"
      "  static constexpr constant U init = Lim<U>::max;\n"
      "  static constexpr constant U zero = U(0);\n"
      "};\n"
      "template <typename T, int N>\n"
      "[[kernel]] void reduce(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {\n"
      "  Pair p = MaxOp<Pair>::init;\n"
      "  if (lid < N) {\n"
      "    threadgroup T shared[N];\n"
      "    shared[lid] = MaxOp<T>::init + MaxOp<T>::zero;\n"
      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "    out[lid] = shared[(lid + 1) % N] + p.re;\n"
      "  }\n"
      "}\n"
      "template [[host_name(\"reduce_float_32\")]] [[kernel]] void reduce<float, 32>(device float*, uint);\n",
      "reduce_float_32", 32u * 4);
}

// bfloat converts to bool as a builtin scalar (MLX's reduce_row.h assigns
// `const device bfloat` elements to bool values), and an `if` on a bfloat
// finds one conversion.
TEST(CheckRules, BfloatToBoolIsValidMetal) {
  expect_clean(
      "template <typename T, typename U>\n"
      "void truth(const device T* row, device U* out) { U v = row[0]; out[0] = v; }\n"
      "kernel void k(const device bfloat* row [[buffer(0)]], device bool* out [[buffer(1)]]) {\n"
      "  truth(row, out);\n"
      "  bool b = row[1];\n"
      "  bfloat x = row[2];\n"
      "  if (x) out[1] = b;\n"
      "}\n");
}

// A kernel's buffer of a class OpenCL would refuse as a kernel parameter
// (not trivial: it has constructors), as MLX binds `device complex64_t*`.
TEST(CheckRules, BuffersOfNonTrivialClassesAreValidMetal) {
  expect_clean(
      "struct Pair {\n"
      "  float re, im;\n"
      "  Pair() thread = default;\n"
      "  constexpr Pair(float r, float i) thread : re(r), im(i) {}\n"
      "};\n"
      "kernel void k(const device Pair* in [[buffer(0)]], device Pair* out [[buffer(1)]],\n"
      "              constant Pair& c [[buffer(2)]], uint i [[thread_position_in_grid]]) {\n"
      "  out[i] = Pair(in[i].re + c.re, in[i].im);\n"
      "}\n");
}

// A `thread const` reference binds a temporary (MLX's steel gemm.h passes an
// int for `thread const short& lbk`); an object in device memory bound to
// it is still the generic-pointer finding.
TEST(CheckRules, ThreadConstReferencesBindTemporaries) {
  const std::string source = kHeader +
                             "float twice(thread const short& s) { return 2.0f * s; }\n"
                             "float first(thread const float& f) { return f; }\n"
                             "kernel void k(device float* out [[buffer(0)]], device const float* in [[buffer(1)]],\n"
                             "              uint i [[thread_position_in_grid]]) {\n"
                             "  int n = int(i);\n"
                             "  float local = in[i];\n"
                             "  out[i] = twice(n) + twice(short(3)) + first(local);\n"
                             "  out[i] += first(in[i]);  // HERE\n"
                             "}\n";
  CheckResult r = check_both_ways(source, "const_refs.metal");
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r);
  EXPECT_EQ(r.diagnostics[0].rule, rules::kGenericPointer);
  EXPECT_EQ(r.diagnostics[0].line, line_of(source, "// HERE"));
}

// A function template's parameter spelled through an alias over vec
// deduces (MLX's `thread dtype_frag_t<T>&`), and `decltype` of a local
// names its type without __private (MLX's integral_constant operators).
TEST(CheckRules, VecAliasParametersAndDecltypeOfLocalsAreValidMetal) {
  expect_clean(
      "template <typename T, T v> struct constant_of {\n"
      "  static constexpr constant T value = v;\n"
      "};\n"
      "template <typename T, T a, typename U, U b>\n"
      "constexpr auto operator&&(constant_of<T, a>, constant_of<U, b>) {\n"
      "  constexpr auto res = a && b;\n"
      "  return constant_of<metal::remove_addrspace_t<decltype(res)>, res>{};\n"
      "}\n"
      "template <typename U> using frag_t = typename metal::vec<U, 2>;\n"
      "template <typename T> T first(thread frag_t<T>& f) { return f[0]; }\n"
      "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  constexpr constant_of<bool, true> yes{};\n"
      "  float2 f = float2(1.0f, 2.0f);\n"
      "  if constexpr (decltype(yes && yes)::value) out[i] = first(f);\n"
      "}\n");
}

// Metal's constructs inside macros (MLX's instantiate_kernel and
// bf16_math.h): the checker reads the file before preprocessing, so a
// #define's body is lowered like code. The kernel takes the name the
// stringified host_name gives it; a `thread`-qualified constructor (MLX's
// complex_t; MLX's MMATile, after a specifier macro) constructs the objects
// it is called for, and a `thread` method returns a thread reference to a
// member (MLX's steel fragments' frag_at).
TEST(CheckRules, MetalInsideMacrosAndThreadConstructorsAreValidMetal) {
  const std::string source = kHeader +
                             "#define instantiate_kernel(name, func, ...) \\\n"
                             "  template [[host_name(                     \\\n"
                             "      name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;\n"
                             "#define split_func(type) \\\n"
                             "  float split_##type(type x, thread int& whole) {                 \\\n"
                             "    whole = int(x); return float(x) - whole; }\n"
                             "split_func(float)\n"
                             "struct pair_t {\n"
                             "  float re, im;\n"
                             "  constexpr pair_t(float r, float i) thread : re(r), im(i) {}\n"
                             "  thread float& first() thread { return re; }\n"
                             "};\n"
                             "#define SPEC_FUNC inline\n"
                             "struct tile_t {\n"
                             "  float v[2];\n"
                             "  SPEC_FUNC tile_t() thread {}\n"
                             "};\n"
                             "struct holder_t { tile_t t; float sum() thread { return t.v[0]; } };\n"
                             "template <typename T>\n"
                             "[[kernel]] void scale(device T* out [[buffer(0)]],\n"
                             "                      uint i [[thread_position_in_grid]]) {\n"
                             "  int whole;\n"
                             "  pair_t p{split_float(float(out[i]), whole), 1.0f};\n"
                             "  p.first() += 1.0f;\n"
                             "  holder_t h;\n"
                             "  h.t.v[0] = 0.0f;\n"
                             "  p.first() += h.sum();\n"
                             "  out[i] = T(p.re + p.im + whole);\n"
                             "}\n"
                             "#define instantiate_scale(tname, type) \\\n"
                             "  instantiate_kernel(\"scale_\" #tname, scale, type)\n"
                             "instantiate_scale(float32, float)\n"
                             "instantiate_scale(float16, half)\n";
  CheckResult r = check_both_ways(source, "macros.metal");
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_NE(r.kernel("scale_float32"), nullptr) << dump(r);
  EXPECT_NE(r.kernel("scale_float16"), nullptr) << dump(r);
}

// MLX's steel loaders copy a struct from device into threadgroup memory with
// its implicit copy assignment (`*((threadgroup V*)dst) = *((const device
// V*)src);`): valid Metal, and the cpu backend runs it. A function of the
// file that takes a reference without an address space is still the
// generic-pointer finding.
TEST(CheckRules, ImplicitCopyAssignmentAcrossAddressSpacesIsValidMetal) {
  expect_clean(
      "struct alignas(8) Pair { half a, b, c, d; };\n"
      "kernel void k(device const half* src [[buffer(0)]], device half* out [[buffer(1)]],\n"
      "              uint i [[thread_position_in_threadgroup]]) {\n"
      "  threadgroup half dst[64];\n"
      "  *((threadgroup Pair*)(&dst[4 * (i % 16)])) = *((const device Pair*)(&src[4 * (i % 16)]));\n"
      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  out[i] = dst[i % 64];\n"
      "}\n");
  expect_rule(
      "struct Pair { half a, b; };\n"
      "void copy_pair(thread Pair& to, const Pair& from) { to = from; }\n"
      "kernel void k(device const Pair* src [[buffer(0)]], device half* out [[buffer(1)]], uint i "
      "[[thread_position_in_grid]]) {\n"
      "  Pair p;\n"
      "  copy_pair(p, src[i]);  // HERE\n"
      "  out[i] = p.a;\n"
      "}\n",
      rules::kGenericPointer);
}

}  // namespace
}  // namespace mfagen::check
