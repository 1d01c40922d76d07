// Constructs of ggml's and MLX's current kernels (issue 35), written for
// these tests in kernels/peer_constructs.metal: each compiles unchanged and
// computes what Metal computes, checked exactly against plain C++.
#include <gtest/gtest.h>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

std::shared_ptr<const cpu::Module> compile_constructs() { return compile_kernel("peer_constructs.metal"); }

TEST(PeerConstructs, UnsuffixedFloatingLiteralsAreFloat) {
  auto module = compile_constructs();
  std::vector<float> in = {1.0f, 2.0f, 3.0f, 4.5f, 1.5f, 0.0f, 13.0f}, out(5, -1.0f);
  auto result = run(*module, "float_literals", {1, 1, 1}, {1, 1, 1}, {bind(0, in), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out[0], 5.25f) << "0.5*x with a float4 x";
  EXPECT_EQ(out[1], std::fmin(1.0f, 1.5f / 6.0f + 0.5f)) << "fmin(1, y/6 + 0.5)";
  EXPECT_EQ(out[2], 0.0f) << "float4 v(0.0)";
  // 16777217.0 is the float 16777216 in Metal: 0 + 16777216 - 16777216.
  EXPECT_EQ(out[3], 0.0f) << "the literal was computed in double";
  // The float nearest 0.1, times 13 in float (one rounding), is 1.3000001;
  // 13 times the double 0.1, rounded to float, is 1.2999999.
  const float expected = float(double(0.1f) * 13.0);
  ASSERT_NE(expected, float(0.1 * 13.0)) << "the case does not tell float from double";
  EXPECT_EQ(out[4], expected);
}

TEST(PeerConstructs, PackedChar4ReadsSignedBytesAtAnyOffset) {
  auto module = compile_constructs();
  std::vector<int8_t> bytes = {99, 99, -128, -1, 0, 1, 127, -64, 5, -5};
  std::vector<float> out(9, 1000.0f);
  auto result = run(*module, "packed_char4_reads", {1, 1, 1}, {1, 1, 1}, {bind(0, bytes), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], float(bytes[2 + i])) << "byte " << i;
  EXPECT_EQ(out[8], 250.0f - 7.0f + 9.0f) << "packed_uchar4, packed_short2";
}

TEST(PeerConstructs, PragmaUnrollArgumentIsMacroExpanded) {
  auto module = compile_constructs();
  std::vector<float> a = {1, 2, 4, 8, 16, 32}, out(1, 0.0f);
  auto result = run(*module, "unroll_with_macro", {1, 1, 1}, {1, 1, 1}, {bind(0, a), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out[0], 63.0f);
}

TEST(PeerConstructs, PointerPlusEqualsIntegralConstant) {
  auto module = compile_constructs();
  std::vector<float> a = {1, 2, 4, 8, 16, 32, 64, 128}, out(2, 0.0f);
  auto result = run(*module, "pointer_plus_integral_constant", {1, 1, 1}, {8, 1, 1}, {bind(0, a), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out[0], 1.0f + 2.0f + 4.0f + 100.0f * 16.0f) << "device pointer";
  EXPECT_EQ(out[1], 2.0f * (4.0f + 8.0f + 16.0f + 100.0f * 64.0f)) << "threadgroup pointer";
}

TEST(PeerConstructs, ConditionalBetweenALocalAndAPrvalueOfAManyWayClass) {
  auto module = compile_constructs();
  std::vector<float> x = {1, 2, 3, 4}, out(8, 9.0f);
  auto result = run(*module, "conditional_of_a_many_way_class", {1, 1, 1}, {2, 1, 1}, {bind(0, x), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<float>{1, 2, 0, 0, 0, 0, 3, 4}));
}

TEST(PeerConstructs, ArrayParametersAndBracedVectorArguments) {
  auto module = compile_constructs();
  // 3 columns x 2 rows of output from an 8-wide input read at even columns.
  std::vector<float> in(20), out(6, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i);
  std::vector<int32_t> offset = {1};
  std::vector<int64_t> strides = {8, 1}, out_strides = {3, 1};
  std::vector<float> pair = {0.0f, 2.0f, 5.0f, 0.0f};
  auto result = run(*module, "array_parameters_float", {3, 2, 1}, {1, 1, 1},
                    {bind(0, in), bind(1, out), bind(2, offset), bind(3, strides), bind(4, out_strides),
                     bind(5, pair)});
  EXPECT_TRUE(IsClean(result));
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x)
      EXPECT_EQ(out[y * 3 + x], in[1 + 2 * x + 8 * y] * 3.0f + 25.0f) << "x " << x << " y " << y;
}

TEST(PeerConstructs, ThreadgroupInitializerAcceptedAndNotApplied) {
  auto module = compile_constructs();
  std::vector<float> x(96), out(1, -1.0f);
  double expected = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = float(i % 7) - 2.5f;
    expected += x[i];
  }
  auto result = run(*module, "threadgroup_initializer_then_zeroed", {1, 1, 1}, {96, 1, 1}, {bind(0, x), bind(1, out)});
  EXPECT_TRUE(IsClean(result)) << "writes before reads: nothing depends on the initializer";
  EXPECT_EQ(double(out[0]), expected);

  std::vector<float> read(1, -1.0f);
  auto reads_initial = run(*module, "threadgroup_initializer_read", {1, 1, 1}, {4, 1, 1}, {bind(0, read)});
  ASSERT_FALSE(reads_initial.findings.empty()) << "the initial value was read without a finding";
  EXPECT_EQ(reads_initial.findings[0].kind, cpu::FindingKind::uninitialized_read) << describe(reads_initial);
}

TEST(PeerConstructs, ThreadScopeWithoutIncludeAndCoherentBuffers) {
  auto module = compile_kernel("peer_constructs_fence.metal");
  std::vector<uint32_t> data = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<uint32_t> n = {6};
  auto result = run(*module, "coherent_update", {1, 1, 1}, {8, 1, 1}, {bind(0, data), bind(1, n)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(data, (std::vector<uint32_t>{1, 3, 5, 7, 9, 11, 6, 7}));
}

TEST(PeerConstructs, FunctionConstantsWithStaticConstexprConst) {
  cpu::CompileOptions options;
  options.constants = {{0, cpu::parse_constant_value("true", "bool")}, {2, cpu::parse_constant_value("6", "int")}};
  auto module = cpu::compile_file(kernel_file("peer_constructs_function_constants.metal"), options);
  std::vector<float> x = {1.5f}, out(1, 0.0f);
  auto result = run(*module, "specialized", {1, 1, 1}, {1, 1, 1}, {bind(0, x), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out[0], -9.0f);
}

TEST(PeerConstructs, QuadgroupIndices) {
  auto module = compile_constructs();
  std::vector<uint32_t> out(72, 0);
  auto result = run(*module, "quadgroup_indices", {1, 1, 1}, {72, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t t = 0; t < 72; ++t) {
    const uint32_t quad = t / 4, first = 4 * quad;
    EXPECT_EQ(out[t], 100 * quad + 10 * (t % 4) + (4 * first + 6) / 2) << "thread " << t;
  }
}

TEST(PeerConstructs, ConstantBfloatCopiesAndConversions) {
  auto module = compile_constructs();
  std::vector<float> out(3, 0.0f);
  auto result = run(*module, "constant_bfloat_copies", {1, 1, 1}, {1, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  const float bfloat_max = std::bit_cast<float>(uint32_t{0x7f7f0000u});  // largest finite bfloat
  EXPECT_EQ(out, (std::vector<float>{bfloat_max, bfloat_max, -bfloat_max}));
}

// MLX's gemv_masked.h with T = bfloat: `T(mask)` for a class converting to
// bool, and integer-valued classes cast to bfloat (one rounding from int).
TEST(PeerConstructs, BfloatFromClassesConvertingToBoolOrInteger) {
  auto module = compile_constructs();
  std::vector<uint8_t> flags = {0, 1};  // PeerFlag is one bool
  std::vector<float> out(5, -1.0f);
  auto result = run(*module, "bfloat_from_converting_classes", {1, 1, 1}, {1, 1, 1}, {bind(0, out), bind(1, flags)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<float>{0.0f, 1.0f, 3.0f, 16777216.0f, 2.0f}));
}

// MLX's steel_gemm_masked.h with T = bfloat: a bfloat member assigned from a
// device mask element of a class converting to bool, or from a bool.
TEST(PeerConstructs, BfloatAssignedFromClassesConvertingToBool) {
  auto module = compile_constructs();
  std::vector<uint8_t> flags = {0, 1};  // PeerFlag is one bool
  std::vector<uint8_t> bools = {0, 1};
  std::vector<float> out(4, -1.0f);
  auto result = run(*module, "bfloat_assigned_from_converting_classes", {1, 1, 1}, {1, 1, 1},
                    {bind(0, out), bind(1, flags), bind(2, bools)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<float>{0.0f, 1.0f, 1.0f, 3.0f}));
}

// MLX's conv.metal: `template [[host_name(...)]] [[kernel]] void f(const
// device T* ..., const constant Params<N>* ...);` with T and N deduced from
// the parameter types, three instantiations to a macro line.
TEST(PeerConstructs, ExplicitInstantiationsDeduceTheirTemplateArguments) {
  auto module = compile_constructs();
  std::vector<int32_t> dims = {5, 7, 11};
  std::vector<float> x = {1.5f, -2.0f}, y(2, 0.0f);
  auto result = run(*module, "deduced_dims_float32_2", {2, 1, 1}, {1, 1, 1}, {bind(0, x), bind(1, y), bind(2, dims)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(y, (std::vector<float>{1.5f * 2 + 12, -2.0f * 2 + 12}));
  std::vector<int32_t> a = {4, -3}, b(2, 0);
  result = run(*module, "deduced_dims_int32_3", {2, 1, 1}, {1, 1, 1}, {bind(0, a), bind(1, b), bind(2, dims)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(b, (std::vector<int32_t>{4 * 3 + 23, -3 * 3 + 23}));
  result = run(*module, "deduced_dims_int32_1", {2, 1, 1}, {1, 1, 1}, {bind(0, a), bind(1, b), bind(2, dims)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(b, (std::vector<int32_t>{4 + 5, -3 + 5}));
}

// MLX's fft/readwrite.h: `template <typename T> struct Traits<vec<T, 2>>`
// is used for float2, half2, bool2 and int2 with T their element type.
TEST(PeerConstructs, PartialSpecializationOnVecDeducesTheElement) {
  auto module = compile_constructs();
  std::vector<int32_t> out(6, -1);
  auto result = run(*module, "vec_partial_specialization", {1, 1, 1}, {1, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<int32_t>{2, 2, 1, 1, 1, 1}));
}

// MLX's fft/readwrite.h: `complex_T(elem.x, -elem.y)` with `using complex_T =
// vec<scalar_T, 2>;` a member of a class template (and a cast to it, and a
// typedef of float4 constructed from two float2s).
TEST(PeerConstructs, ConstructorsAndCastsThroughVectorAliases) {
  auto module = compile_constructs();
  std::vector<float> out(9, -100.0f);
  auto result = run(*module, "vector_alias_constructors", {1, 1, 1}, {1, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<float>{1.5f, -2.5f, 3.0f, 0.0f, 0.25f, 4.0f, 7.0f, -9.0f, 1.5f - 2.5f + 3.0f}));
}

// MLX's fft.h: `RadixFunc<T> radix_func` template parameters, RadixFunc an
// alias template of a pointer to function, given `radix2<T>`.
TEST(PeerConstructs, FunctionPointerAliasTemplateParameters) {
  auto module = compile_constructs();
  std::vector<float> x = {1.0f, 2.0f, 0.5f, -3.0f};
  std::vector<int32_t> i = {5, -7, 2, 11};
  auto result = run(*module, "function_pointer_alias_template_arguments", {1, 1, 1}, {1, 1, 1},
                    {bind(0, x), bind(1, i)});
  EXPECT_TRUE(IsClean(result));
  // (a, b) -> (a + b, a - b) three times is (2a + 2b, 2a - 2b).
  EXPECT_EQ(x, (std::vector<float>{3.0f, -2.0f, 1.0f, 10.0f}));
  EXPECT_EQ(i, (std::vector<int32_t>{7, 4, 3, -18}));
}

// Run-time function pointers run as Metal 2.3 and later runs them (MSL
// section 1.5.4), and `mfagen check` accepts the same kernel
// (CheckRules.RunTimeFunctionPointersAreValidMetal).
TEST(PeerConstructs, RunTimeFunctionPointers) {
  auto module = compile_constructs();
  std::vector<float> out = {1.5f, -3.0f, 0.5f, 4.0f};
  std::vector<float> expected;
  for (size_t i = 0; i < out.size(); ++i) {
    float x = out[i];
    expected.push_back(2.0f * x + x * x + (i % 2 == 0 ? 2.0f * x : x * x));
  }
  auto result = run(*module, "run_time_function_pointers", {1, 1, 1}, {4, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, expected);
}

// MLX's conv.metal: `constant constexpr const float
// WinogradTransforms<6, 3, 8>::wt_transform[8][8];` after the class.
TEST(PeerConstructs, RedundantConstexprMemberDefinitions) {
  auto module = compile_constructs();
  std::vector<float> out(6, -100.0f);
  auto result = run(*module, "constexpr_member_definitions", {6, 1, 1}, {1, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<float>{1.5f * 7 + 10, 2 * 7 + 10, 3 * 7 + 10, 4 * 7 + 10, 5 * 7 + 10, -6 * 7 + 10}));
}

// MLX's conv.metal: `(G * g) * Gt`, the product of simdgroup_matrix values
// with operator* (the MSL specification's SIMD-group matrix operations): the
// matrix product, as simdgroup_multiply computes it. Small integers (and
// quarters for half) make every product exact.
TEST(PeerConstructs, SimdgroupMatrixOperatorMultiply) {
  auto module = compile_constructs();
  std::vector<float> a(64), b(64), out(192, -1000.0f);
  std::vector<uint16_t> h(64), hout(64, 0);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      a[r * 8 + c] = float((r * 3 + c) % 5 - 2);
      b[r * 8 + c] = float((r + 2 * c) % 7 - 3);
      h[r * 8 + c] = to_half_bits(((r + c) % 4) * 0.75 - 1.25);
    }
  auto product = [](const std::vector<double>& x, const std::vector<double>& y) {
    std::vector<double> p(64, 0.0);
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c)
        for (int k = 0; k < 8; ++k) p[r * 8 + c] += x[r * 8 + k] * y[k * 8 + c];
    return p;
  };
  std::vector<double> A(a.begin(), a.end()), B(b.begin(), b.end()), H(64);
  for (int i = 0; i < 64; ++i) H[i] = half_to_double(h[i]);
  const std::vector<double> AB = product(A, B), ABA = product(AB, A), HH = product(H, H);
  auto result = run(*module, "simdgroup_matrix_products", {1, 1, 1}, {32, 1, 1},
                    {bind(0, a), bind(1, b), bind(2, h), bind(3, out), bind(4, hout)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(double(out[i]), AB[i]) << "A * B at " << i;
    EXPECT_EQ(double(out[64 + i]), ABA[i]) << "(A * B) * A at " << i;
    EXPECT_EQ(out[128 + i], out[i]) << "simdgroup_multiply at " << i;
    EXPECT_EQ(half_to_double(hout[i]), HH[i]) << "H * H at " << i;
  }
}

// MLX's conv.metal: `c ? Ws[...][c] : T(0)` with a threadgroup bfloat array
// (and the same template for float): the element when c holds, else 0.
TEST(PeerConstructs, ConditionalBetweenAThreadgroupBfloatAndAPrvalue) {
  auto module = compile_constructs();
  std::vector<float> in = {1.5f, -2.25f, 3.0078125f, 7.0f}, out(4, -100.0f);
  auto result = run(*module, "conditional_threadgroup_bfloat", {1, 1, 1}, {4, 1, 1}, {bind(0, in), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  // bfloat(3.0078125) is 3 (a tie, to even); odd threads take the float arm.
  EXPECT_EQ(out, (std::vector<float>{1.5f, -4.5f, 3.0f, 14.0f}));
}

// MLX's fft/radix.h: `x[0] - 0.5 * a_1` with a half2 a_1 in a template also
// instantiated for float. The float literal converts to half (MSL section
// 2.13): 1 - half(0.7) is 0.2998046875, where widening the vector to float
// would give 0.300048828125.
TEST(PeerConstructs, FloatScalarTimesHalfVectorConvertsTheScalar) {
  auto module = compile_constructs();
  std::vector<float> out(8, -100.0f);
  auto result = run(*module, "scalar_literal_times_half_vector", {1, 1, 1}, {1, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  const double h07 = round_half(double(0.7f));
  ASSERT_EQ(round_half(1.0 - h07), 0.2998046875);
  EXPECT_EQ(double(out[0]), round_half(1.0 - h07));
  EXPECT_EQ(double(out[1]), round_half(2.0 - h07));
  EXPECT_EQ(out[2], -0.5f);
  EXPECT_EQ(out[3], -1.5f);
  const float f07 = 0.7f;
  EXPECT_EQ(out[4], 1.0f - f07);
  EXPECT_EQ(out[5], 2.0f - f07);
  EXPECT_EQ(out[6], -0.5f);
  EXPECT_EQ(out[7], -1.5f);
}

// Two kernel templates of one name (MLX's block_masked_gemm): each explicit
// instantiation takes the overload its template arguments name, with that
// overload's parameter list.
TEST(PeerConstructs, OverloadedKernelTemplatesAreToldApartByTheirArguments) {
  auto module = compile_constructs();
  std::vector<float> out(2, 0.0f);
  std::vector<uint16_t> mask = {0x4000};  // half 2.0
  auto result = run(*module, "overloaded_typed_mask", {1, 1, 1}, {1, 1, 1}, {bind(0, out), bind(1, mask)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<float>{1.0f, 6.0f}));
  int unused = 0;
  for (auto [entry, scale] : {std::pair{"overloaded_values", 5.0f}, std::pair{"overloaded_values_twice", 10.0f}}) {
    std::fill(out.begin(), out.end(), 0.0f);
    result = run(*module, entry, {1, 1, 1}, {1, 1, 1}, {bind(0, out), bind_scalar(2, unused)});
    EXPECT_TRUE(IsClean(result)) << entry;
    EXPECT_EQ(out, (std::vector<float>{2.0f, scale})) << entry;
  }
}

// MLX's `static constexpr constant U init = U(0);` (reduction/ops.h): a
// template parameter's constructor and cast stay constant expressions.
TEST(PeerConstructs, ConstexprInitializersThroughATemplateParameter) {
  auto module = compile_constructs();
  std::vector<float> out(3, -1.0f);
  auto result = run(*module, "constexpr_dependent_constructors", {1, 1, 1}, {1, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<float>{13.0f, 13.0f, 4.0f}));
}

// MLX's Limits<complex64_t>: a class object copied out of a constexpr
// constant (lowered to the default space, mfagen/msl/constexpr_constants.h).
TEST(PeerConstructs, ClassObjectsCopiedOutOfConstexprConstants) {
  auto module = compile_constructs();
  std::vector<float> out(4, 0.0f);
  auto result = run(*module, "constexpr_class_constants", {1, 1, 1}, {1, 1, 1}, {bind(0, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<float>{2.5f, -1.0f, -1.0f, 2.5f}));
}

// MLX's And/Or reductions of bfloat rows: bfloat converts to bool as the
// builtin scalar does, nonzero (NaN too) is true, -0 is false.
TEST(PeerConstructs, BfloatConvertsToBool) {
  auto module = compile_constructs();
  // bfloat bits: 0, 0.5, -2, -0, 0 (local), NaN
  std::vector<uint16_t> row = {0x0000, 0x3f00, 0xc000, 0x8000, 0x0000, 0x7fc0};
  std::vector<uint32_t> out(6, 7u);
  auto result = run(*module, "bfloat_truth_values", {1, 1, 1}, {1, 1, 1}, {bind(0, row), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<uint32_t>{0, 1, 1, 0, 0, 1}));
}

// MLX's sort.h and scan.h: a reference-to-array parameter of a thread array
// (its elements swapped through `thread T&`), and `sizeof(T) < 8` inside a
// template argument list.
TEST(PeerConstructs, ThreadArrayReferencesAndComparisonsInTemplateArguments) {
  auto module = compile_constructs();
  std::vector<uint32_t> in = {7, 3, 9, 1}, out(6, 0u);
  auto result = run(*module, "thread_array_references", {1, 1, 1}, {1, 1, 1}, {bind(0, in), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 3, 7, 9, 4, 8}));
}

// MLX's sort.h: a threadgroup bfloat assigned to a uint output converts as
// the builtin scalar does (toward zero), in a template whose float
// instantiation is untouched.
TEST(PeerConstructs, BfloatAssignedToIntegers) {
  auto module = compile_constructs();
  std::vector<uint16_t> in = {0x4060, 0x3f00, 0x4020};  // 3.5, 0.5, 2.5
  std::vector<uint32_t> out(3, 99u);
  std::vector<float> fout(1, 0.0f);
  auto result = run(*module, "bfloat_assigned_to_integers", {1, 1, 1}, {1, 1, 1},
                    {bind(0, in), bind(1, out), bind(2, fout)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out, (std::vector<uint32_t>{3, 0, 2}));
  EXPECT_EQ(fout[0], 2.5f);
}

}  // namespace
}  // namespace mfagen::cputest
