// Metal 4 TensorOps through the checker (DESIGN.md sections 6 and 15):
// kernels that include <metal_tensor>, <metal_cooperative_tensor> and
// MetalPerformancePrimitives pass every rule and keep their signatures (with
// the execution_simdgroups<N> scopes of their tensor operations); the tensor
// rules (tensor_rules.h) and the manifest cross-check report misuse the
// source shows; the API's static rules come from the stand-in as compile
// errors with Apple's messages. Every snippet is checked with the
// precompiled stand-in and with the stand-in parsed for the file, alike.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "check/check.h"
#include "check/manifest_check.h"
#include "check/rules.h"
#include "result_text.h"

namespace mfagen::check {
namespace {

const std::string kHeader =
    "#include <metal_stdlib>\n"
    "#include <metal_tensor>\n"
    "#include <metal_cooperative_tensor>\n"
    "#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>\n"
    "using namespace metal;\n"
    "using namespace mpp::tensor_ops;\n";

unsigned line_of(const std::string& source, const std::string& marker) {
  size_t at = source.find(marker);
  EXPECT_NE(at, std::string::npos) << marker;
  unsigned line = 1;
  for (size_t i = 0; i < at && i < source.size(); ++i) line += source[i] == '\n';
  return line;
}

std::string dump(const CheckResult& r) {
  std::string out;
  for (const Diagnostic& d : r.diagnostics) out += d.to_string() + "\n";
  return out;
}

CheckResult check_both_ways(const std::string& source, std::string_view name) {
  CheckResult fast = check_msl(source, name);
  CheckOptions per_file;
  per_file.precompiled_standin = false;
  CheckResult slow = check_msl(source, name, per_file);
  EXPECT_TRUE(fast.used_precompiled_standin) << name;
  EXPECT_EQ(test::result_text(fast), test::result_text(slow)) << "precompiled stand-in vs per-file parse of " << name;
  return fast;
}

// A diagnostic of `rule` on the line of `marker` whose message holds `says`.
void expect_rule(const std::string& body, std::string_view rule, const std::string& says,
                 const std::string& marker = "// HERE") {
  const std::string source = kHeader + body;
  CheckResult r = check_both_ways(source, "snippet.metal");
  const unsigned line = line_of(source, marker);
  bool found = false;
  for (const Diagnostic& d : r.diagnostics)
    found |= d.rule == rule && d.line == line && d.file == "snippet.metal" && d.message.find(says) != std::string::npos;
  EXPECT_TRUE(found) << "expected [" << rule << "] '" << says << "' on line " << line << ", got:\n" << dump(r);
}

// A static_assert of the stand-in: a compile error located in its header,
// saying `says`, whose note names the line of `marker` in the snippet (where
// the template was instantiated).
void expect_static_assert(const std::string& body, const std::string& says, const std::string& marker = "// HERE") {
  const std::string source = kHeader + body;
  CheckResult r = check_both_ways(source, "snippet.metal");
  const std::string note = "(note: " + std::to_string(line_of(source, marker)) + ":";
  bool found = false;
  for (const Diagnostic& d : r.diagnostics)
    found |= d.rule == rules::kCompileError && d.message.find(says) != std::string::npos &&
             d.message.find(note) != std::string::npos;
  EXPECT_TRUE(found) << "expected a compile error '" << says << "' noting " << note << ", got:\n" << dump(r);
}

CheckResult expect_clean(const std::string& body) {
  CheckResult r = check_both_ways(kHeader + body, "near_miss.metal");
  EXPECT_TRUE(r.ok()) << dump(r);
  return r;
}

// A kernel as Apple's MetalPerformancePrimitives header and WWDC examples
// write them: a program-scope descriptor, tensors by class template
// argument deduction, slices, four SIMD groups on one product and one per
// row block for two more (cooperative destinations zeroed under `#pragma
// unroll`, a row reduction, a destination converted into a left input when
// compatible, through threadgroup memory otherwise). (`#pragma unroll full`,
// which Apple's header comment shows, does not compile with Metal's
// compiler, nor here.)
const std::string kTensorKernel = R"(
constant constexpr auto kFirst = matmul2d_descriptor(64, 32, static_cast<int>(dynamic_extent));
constant constexpr int kRows = 16;

struct Sizes {
  int m, n, k;
};

template <class CT>
void clear(thread CT& ct) {
#pragma unroll
  for (ushort i = 0; i < ct.get_capacity(); ++i)
    if (ct.is_valid_element(i)) ct[i] = 0.0f;
}

kernel void two_products(device half* a [[buffer(0)]], device half* b [[buffer(1)]], device half* d [[buffer(2)]],
                         device float* c [[buffer(3)]], device float* out [[buffer(4)]],
                         device float* row_max [[buffer(5)]], constant Sizes& sizes [[buffer(6)]],
                         uint2 tgid [[threadgroup_position_in_grid]],
                         ushort sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup half staged[4][kRows * 32];
  auto A = tensor(a, dextents<int, 2>{sizes.k, sizes.m}, array<int, 2>{1, sizes.k});
  auto B = tensor(b, dextents<int, 2>{sizes.n, sizes.k}, array<int, 2>{1, sizes.n});
  auto C = tensor(c, dextents<int, 2>{sizes.n, sizes.m}, array<int, 2>{1, sizes.n});
  matmul2d<kFirst, execution_simdgroups<4>> first;  // FIRST
  auto tileA = A.slice(0, int(tgid.y) * 64);
  auto tileB = B.slice(int(tgid.x) * 32, 0);
  auto tileC = C.slice(int(tgid.x) * 32, int(tgid.y) * 64);
  first.run(tileA, tileB, tileC);  // (run takes lvalues: no temporaries)

  constexpr auto second_desc = matmul2d_descriptor(kRows, 32, 32);
  matmul2d<second_desc, execution_simdgroup> second;
  auto mA = A.slice<32, kRows>(0, int(tgid.y) * 64 + sg * kRows);
  auto D = tensor(d, extents<int, 32, 32>());
  auto p = second.get_destination_cooperative_tensor<decltype(mA), decltype(D), half>();
  clear(p);
  second.run(mA, D, p);
  auto o = second.get_destination_cooperative_tensor<decltype(mA), decltype(D), float>();
  clear(o);
  second.run(mA, D, o);
  auto rows = second.get_row_reduction_destination_cooperative_tensor<decltype(mA), decltype(D), float>();
  reduce_rows(o, rows, reduction_operation::max, -INFINITY);
  auto maxima = tensor(row_max + sg * kRows, dextents<int, 1>{kRows});
  rows.store(maxima);
  if (second.is_compatible_as_left_input<half, half, float>(p)) {
    auto left = second.get_left_input_cooperative_tensor<half, half, float>(p);
    second.run(left, D, o);
  } else {
    auto tile = tensor(staged[sg], extents<int, 32, kRows>());
    p.store(tile);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    second.run(tile, D, o);
  }
  auto result = tensor(out + sg * kRows * 32, extents<int, 32, kRows>());
  o.store(result);
}
)";

TEST(CheckTensorOps, AppleStyleKernelPassesAndKeepsItsSignature) {
  CheckResult r = expect_clean(kTensorKernel);
  const std::string source = kHeader + kTensorKernel;
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelSignature& k = r.kernels[0];
  EXPECT_EQ(k.name, "two_products");
  EXPECT_EQ(k.buffers.size(), 7u);
  ASSERT_NE(k.buffer(5), nullptr);
  EXPECT_EQ(k.buffer(5)->metal_type(), "device float*");
  EXPECT_EQ(k.buffer(6)->metal_type(), "constant Sizes&");
  EXPECT_EQ(k.builtins.size(), 2u);
  EXPECT_EQ(k.threadgroup_memory_bytes, 4u * 16 * 32 * 2);
  ASSERT_EQ(k.tensor_op_scopes.size(), 1u) << "execution_simdgroup needs no particular threadgroup size";
  EXPECT_EQ(k.tensor_op_scopes[0].simdgroups, 4u);
  EXPECT_EQ(k.tensor_op_scopes[0].line, line_of(source, "// FIRST"));
}

// The cpu backend's TensorOps test kernels (every operation of the API,
// default defines: all kernels) check clean, every kernel with its signature.
TEST(CheckTensorOps, CpuTestKernelsCheckClean) {
  const std::filesystem::path file = std::filesystem::path(MFAGEN_SOURCE_DIR) / "tests/cpu/kernels/tensor_ops.metal";
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty()) << file;
  CheckResult r = check_both_ways(text.str(), "tensor_ops.metal");
  EXPECT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.kernels.size(), 19u) << test::result_text(r);
  ASSERT_NE(r.kernel("scope_mismatch"), nullptr);
  ASSERT_EQ(r.kernel("scope_mismatch")->tensor_op_scopes.size(), 1u);
  EXPECT_EQ(r.kernel("scope_mismatch")->tensor_op_scopes[0].simdgroups, 4u);
  ASSERT_NE(r.kernel("matmul_tensors"), nullptr);
  EXPECT_EQ(r.kernel("matmul_tensors")->buffer(0)->metal_type(), "device const half*");
}

TEST(CheckTensorOps, IncludesOfTheTensorHeaders) {
  expect_clean("kernel void k(device float* out [[buffer(0)]]) { out[0] = 1.0f; }\n");
  expect_rule(
      "#include <MetalPerformancePrimitives/MPPTensorOpsMatMul2d.h>  // HERE\n", rules::kInclude,
      "only <metal_stdlib>, the <metal_*> headers, <MetalPerformancePrimitives/MetalPerformancePrimitives.h> and "
      "the file's own headers may be included");
}

// A scope's SIMD groups reached through helper functions and templated
// kernels: each instantiation has its own.
TEST(CheckTensorOps, ScopesOfTemplatedKernelsAndHelpers) {
  const std::string body = R"(
constant constexpr auto kDesc = matmul2d_descriptor(32, 32, 16);
template <class Op, class A, class B, class C>
void product(thread const Op& op, A a, B b, C c) {
  op.run(a, b, c);  // RUN
}
template <int N>
kernel void scaled(device half* a [[buffer(0)]], device half* b [[buffer(1)]], device half* c [[buffer(2)]]) {
  auto A = tensor(a, extents<int, 16, 32>());
  auto B = tensor(b, extents<int, 32, 16>());
  auto C = tensor(c, extents<int, 32, 32>());
  matmul2d<kDesc, execution_simdgroups<N>> op;  // OP
  product(op, A, B, C);
}
template [[host_name("scaled_2")]] kernel void scaled<2>(device half*, device half*, device half*);
template [[host_name("scaled_8")]] kernel void scaled<8>(device half*, device half*, device half*);
)";
  CheckResult r = expect_clean(body);
  const std::string source = kHeader + body;
  ASSERT_EQ(r.kernels.size(), 2u) << test::result_text(r);
  for (const auto& [name, n] : {std::pair{"scaled_2", 2u}, std::pair{"scaled_8", 8u}}) {
    const KernelSignature* k = r.kernel(name);
    ASSERT_NE(k, nullptr) << name;
    ASSERT_EQ(k->tensor_op_scopes.size(), 1u) << name;
    EXPECT_EQ(k->tensor_op_scopes[0].simdgroups, n) << name;
    EXPECT_EQ(k->tensor_op_scopes[0].line, line_of(source, "// OP")) << name;
  }
}

// ---- cooperative-tensor-space ----

const std::string kDestination =
    "constant constexpr auto kDesc = matmul2d_descriptor(16, 16, 16);\n"
    "typedef matmul2d<kDesc, execution_simdgroup> Op;\n"
    "typedef tensor<device half, dextents<int, 2>, tensor_inline> Operand;\n"
    "typedef Op::cooperative_tensor_destination_t<Operand, Operand, float> Destination;\n"
    "struct Holder { Destination d; int count; };\n";

TEST(CheckTensorOps, CooperativeTensorInThreadgroupMemory) {
  expect_rule(kDestination +
                  "kernel void k(device float* out [[buffer(0)]]) {\n"
                  "  threadgroup Destination shared;  // HERE\n"
                  "  (void)shared.get_capacity();\n}\n",
              rules::kCooperativeTensorSpace, "'shared' puts a cooperative tensor in threadgroup memory");
}

TEST(CheckTensorOps, StructHoldingACooperativeTensorInThreadgroupMemory) {
  expect_rule(kDestination +
                  "kernel void k(device float* out [[buffer(0)]]) {\n"
                  "  threadgroup Holder holders[4];  // HERE\n"
                  "  out[0] = holders[0].count;\n}\n",
              rules::kCooperativeTensorSpace, "'holders' puts a cooperative tensor in threadgroup memory");
}

TEST(CheckTensorOps, PointerToACooperativeTensorInThreadgroupMemory) {
  expect_rule(kDestination + "void fill(threadgroup Destination* d) {  // HERE\n  (void)d;\n}\n",
              rules::kCooperativeTensorSpace, "'d' points to a cooperative tensor in threadgroup memory");
}

TEST(CheckTensorOps, CooperativeTensorCastOntoDeviceMemory) {
  expect_rule(kDestination +
                  "kernel void k(device float* out [[buffer(0)]]) {\n"
                  "  device Destination& d = *(device Destination*)out;  // HERE\n"
                  "  (void)d;\n}\n",
              rules::kCooperativeTensorSpace, "refers to a cooperative tensor in device memory");
  expect_rule(kDestination +
                  "kernel void k(device float* out [[buffer(0)]]) {\n"
                  "  auto d = (device Destination*)out;  // HERE\n"
                  "  (void)d;\n}\n",
              rules::kCooperativeTensorSpace, "a cast points to a cooperative tensor in device memory");
}

// Cooperative tensors in thread memory, by value, reference or pointer, in
// structs and arrays; tensors over threadgroup memory.
TEST(CheckTensorOps, CooperativeTensorNearMisses) {
  expect_clean(kDestination + R"(
void zero(thread Destination& d) {
  for (ushort i = 0; i < d.get_capacity(); ++i)
    if (d.is_valid_element(i)) d[i] = 0.0f;
}
void zero_all(thread Destination* d, int count) {
  for (int i = 0; i < count; ++i) zero(d[i]);
}
kernel void k(device half* a [[buffer(0)]], device float* out [[buffer(1)]]) {
  threadgroup float tile[16 * 16];
  Op op;
  Operand A(a, dextents<int, 2>(16, 16));
  Holder holder{op.get_destination_cooperative_tensor<Operand, Operand, float>(), 1};
  Destination pair[2];
  zero_all(pair, 2);
  zero(holder.d);
  op.run(A, A, holder.d);
  auto t = tensor(tile, extents<int, 16, 16>());
  holder.d.store(t);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  pair[0].load(t);
  pair[0].store(tensor(out, extents<int, 16, 16>()));
}
)");
}

// ---- tensor-op-scope ----

TEST(CheckTensorOps, ScopeLargerThanAThreadgroup) {
  expect_rule(
      "kernel void k(device half* a [[buffer(0)]]) {\n"
      "  constexpr auto desc = matmul2d_descriptor(64, 64, 64);\n"
      "  matmul2d<desc, execution_simdgroups<40>> op;  // HERE\n"
      "  auto A = tensor(a, extents<int, 64, 64>());\n"
      "  op.run(A, A, A);\n}\n",
      rules::kTensorOpScope, "execution_simdgroups<40> needs 1280 threads per threadgroup");
}

TEST(CheckTensorOps, ScopeLargerThanTheKernelsMaximum) {
  expect_rule(
      "template <class Op, class T> void product(thread const Op& op, T a) {\n"
      "  op.run(a, a, a);  // HERE\n}\n"
      "[[max_total_threads_per_threadgroup(64)]]\n"
      "kernel void k(device half* a [[buffer(0)]]) {\n"
      "  constexpr auto desc = matmul2d_descriptor(64, 64, 64);\n"
      "  matmul2d<desc, execution_simdgroups<4>> op;\n"
      "  product(op, tensor(a, extents<int, 64, 64>()));\n}\n",
      rules::kTensorOpScope,
      "execution_simdgroups<4> needs 128 threads per threadgroup but kernel 'k' has at most 64 "
      "([[max_total_threads_per_threadgroup(64)]])");
}

TEST(CheckTensorOps, ScopeNearMisses) {
  expect_clean(
      "[[max_total_threads_per_threadgroup(128)]]\n"
      "kernel void k(device half* a [[buffer(0)]], ushort sg [[simdgroup_index_in_threadgroup]]) {\n"
      "  constexpr auto desc = matmul2d_descriptor(64, 64, 64);\n"
      "  auto A = tensor(a, extents<int, 64, 64>());\n"
      "  matmul2d<desc, execution_simdgroups<4>> all;\n"
      "  all.run(A, A, A);\n"
      "  matmul2d<desc, execution_simdgroup> each;\n"
      "  matmul2d<desc, execution_thread> alone;\n"
      "  if (sg == 0) each.run(A, A, A);\n"
      "  alone.run(A, A, A);\n}\n");
}

// The manifest's threads per threadgroup against the scopes.
TEST(CheckTensorOps, ManifestThreadsAgainstTheScope) {
  const std::string source = kHeader + kTensorKernel;
  CheckResult r = check_msl(source, "two_products.metal");
  ASSERT_TRUE(r.ok()) << dump(r);
  auto manifest = [](int threads) {
    return fmt::format(R"({{"kernels": [{{"name": "two_products", "file": "two_products.metal",
      "buffers": [{{"index": 0, "name": "a", "type": "device half*", "access": "write"}},
                  {{"index": 1, "name": "b", "type": "device half*", "access": "write"}},
                  {{"index": 2, "name": "d", "type": "device half*", "access": "write"}},
                  {{"index": 3, "name": "c", "type": "device float*", "access": "write"}},
                  {{"index": 4, "name": "out", "type": "device float*", "access": "write"}},
                  {{"index": 5, "name": "row_max", "type": "device float*", "access": "write"}},
                  {{"index": 6, "name": "sizes", "type": "constant Sizes&", "access": "read"}}],
      "dispatch": {{"threads_per_threadgroup": {}, "threadgroup_memory_bytes": 4096}}}}]}})",
                       threads);
  };
  EXPECT_TRUE(check_manifest({r}, manifest(128), "manifest.json").empty());
  std::vector<Diagnostic> wrong = check_manifest({r}, manifest(64), "manifest.json");
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_EQ(wrong[0].rule, rules::kManifest);
  EXPECT_EQ(wrong[0].line, line_of(source, "// FIRST"));
  EXPECT_NE(wrong[0].message.find("kernel 'two_products' runs a tensor operation over execution_simdgroups<4>, which "
                                  "needs 128 threads per threadgroup, but the manifest dispatches 64"),
            std::string::npos)
      << wrong[0].to_string();
}

// ---- the API's static rules, from the stand-in ----

TEST(CheckTensorOps, StaticRulesOfTheApiAreCompileErrors) {
  const std::string op =
      "kernel void k(device half* a [[buffer(0)]], device float* c [[buffer(1)]]) {\n"
      "  auto A = tensor(a, extents<int, 16, 16>());\n"
      "  auto C = tensor(c, extents<int, 16, 16>());\n";
  // Cooperative inputs need one SIMD group and a static k.
  expect_static_assert(op + "  constexpr auto desc = matmul2d_descriptor(16, 16, 16);\n"
                            "  matmul2d<desc, execution_simdgroups<2>> two;\n"
                            "  auto left = two.get_left_input_cooperative_tensor<half, half, float>();  // HERE\n"
                            "  (void)left;\n}\n",
                       "Input cooperative tensors require a single SIMD group");
  expect_static_assert(op + "  constexpr auto desc = matmul2d_descriptor(16, 16);\n"
                            "  matmul2d<desc, execution_simdgroup> one;\n"
                            "  auto left = one.get_left_input_cooperative_tensor<half, half, float>();  // HERE\n"
                            "  (void)left;\n}\n",
                       "Inner dimension cannot be dynamic with input cooperative tensors");
  // Element types Apple's table does not list.
  expect_static_assert(
      op + "  constexpr auto desc = matmul2d_descriptor(16, 16, 16);\n"
           "  matmul2d<desc, execution_simdgroup> one;\n"
           "  auto d = one.get_destination_cooperative_tensor<decltype(A), decltype(C), half>();  // HERE\n"
           "  (void)d;\n}\n",
      "unsupported combination of left, right and destination element types");
  // A cooperative tensor of another op.
  expect_static_assert(op + "  constexpr auto desc = matmul2d_descriptor(16, 16, 16);\n"
                            "  constexpr auto other = matmul2d_descriptor(16, 16, 8);\n"
                            "  matmul2d<desc, execution_simdgroup> one;\n"
                            "  matmul2d<other, execution_simdgroup> two;\n"
                            "  auto d = two.get_destination_cooperative_tensor<decltype(A), decltype(A), float>();\n"
                            "  one.run(A, A, d);  // HERE\n}\n",
                       "the destination cooperative tensor must come from this op");
}

}  // namespace
}  // namespace mfagen::check
