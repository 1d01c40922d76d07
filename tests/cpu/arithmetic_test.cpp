// half and bfloat conversions and arithmetic with exact rounding checks,
// vector constructors/casts that convert values, and as_type bit casts. The
// references are bit manipulation and float64 (kernels/harness.h), never the
// stand-in's own types.
#include <gtest/gtest.h>

#include <array>
#include <iomanip>
#include <random>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

std::string hex(uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << std::setw(4) << std::setfill('0') << v;
  return s.str();
}

// ---- conversions ----

std::vector<uint32_t> conversion_inputs() {
  std::vector<uint32_t> bits = {
      0x3f808000,  // 1 + 2^-8: tie between 0x3f80 and 0x3f81 -> even 0x3f80
      0x3f818000,  // tie between 0x3f81 and 0x3f82 -> even 0x3f82
      0x3f808001, 0x3f807fff, 0xbf818000, 0xbf808000,
      0x3f7fffff,  // rounds up into the next binade
      0x7f7f7fff, 0x7f7f8000, 0x7f7fffff, 0xff7fffff,  // largest finite, overflow to inf
      0x7f800000, 0xff800000,                          // infinities
      0x7fc00000, 0xffc00000, 0x7f800001, 0x7fbfffff, 0xffffffff,  // NaNs (incl. payload only in low bits)
      0x00000000, 0x80000000, 0x00000001, 0x00008000, 0x00018000, 0x007fffff, 0x00800000,
      0x3f800000, 0x40490fdb, 0xc2f6e979,
      // around half's limits
      0x477fe000,  // 65504 = max half
      0x477fefff,  // 65519.99 -> 65504
      0x477ff000,  // 65520: tie -> inf
      0x33800000,  // 2^-24, min subnormal half
      0x33000000,  // 2^-25: tie -> 0
      0x33000001,  // just above -> 2^-24
      0x33c00000,  // 1.5 * 2^-24: tie -> 2^-23
      0x38800000,  // 2^-14, min normal half
      0x387fc000,  // largest subnormal half
      0x3f801000,  // 1 + 2^-11: tie -> 1
      0x3f803000,  // 1 + 3 * 2^-11: tie -> 1 + 2^-9
      0x3f801001,
  };
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 2000; ++i) bits.push_back(any(rng));
  std::uniform_real_distribution<float> moderate(-70000.0f, 70000.0f);
  for (int i = 0; i < 2000; ++i) bits.push_back(float_bits(moderate(rng)));
  return bits;
}

TEST(Conversions, FloatToBfloatRoundsToNearestEven) {
  auto module = compile_kernel("arithmetic.metal");
  std::vector<uint32_t> in = conversion_inputs();
  std::vector<uint16_t> out(in.size(), 0xdead);
  auto result = run(*module, "float_to_bfloat", {uint32_t(in.size()), 1, 1}, {1, 1, 1}, {bind(0, in), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out[0], 0x3f80) << "0x3f808000 is a tie: round to even";
  EXPECT_EQ(out[1], 0x3f82) << "0x3f818000 is a tie: round to even";
  for (size_t i = 0; i < in.size(); ++i) {
    const float f = float_from_bits(in[i]);
    if (std::isnan(f)) {
      EXPECT_TRUE(bfloat_is_nan(out[i])) << hex(in[i]) << " is NaN, got " << hex(out[i]);
      continue;
    }
    EXPECT_EQ(out[i], to_bfloat_bits(f)) << "bfloat(" << hex(in[i]) << " = " << f << ")";
  }
}

TEST(Conversions, FloatToHalfRoundsToNearestEven) {
  auto module = compile_kernel("arithmetic.metal");
  std::vector<uint32_t> in = conversion_inputs();
  std::vector<uint16_t> out(in.size(), 0xdead);
  auto result = run(*module, "float_to_half", {uint32_t(in.size()), 1, 1}, {1, 1, 1}, {bind(0, in), bind(1, out)});
  EXPECT_TRUE(IsClean(result));
  for (size_t i = 0; i < in.size(); ++i) {
    const float f = float_from_bits(in[i]);
    if (std::isnan(f)) {
      EXPECT_TRUE(half_is_nan(out[i])) << hex(in[i]) << " is NaN, got " << hex(out[i]);
      continue;
    }
    EXPECT_EQ(out[i], to_half_bits(f)) << "half(" << hex(in[i]) << " = " << std::setprecision(9) << f << ")";
  }
}

TEST(Conversions, HalfAndBfloatWidenToFloatExactly) {
  auto module = compile_kernel("arithmetic.metal");
  std::vector<uint16_t> h(65536), b(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = b[i] = uint16_t(i);
  std::vector<float> out(2 * 65536, -7.0f);
  auto result = run(*module, "widen_to_float", {256, 1, 1}, {256, 1, 1}, {bind(0, h), bind(1, b), bind(2, out)});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t i = 0; i < 65536; ++i) {
    const double hv = half_to_double(uint16_t(i)), bv = bfloat_to_double(uint16_t(i));
    if (std::isnan(hv)) {
      EXPECT_TRUE(std::isnan(out[2 * i])) << "half " << hex(i);
    } else {
      EXPECT_EQ(out[2 * i], hv) << "half " << hex(i);
      EXPECT_EQ(std::signbit(out[2 * i]), std::signbit(hv)) << "half " << hex(i);
    }
    if (std::isnan(bv)) {
      EXPECT_TRUE(std::isnan(out[2 * i + 1])) << "bfloat " << hex(i);
    } else {
      EXPECT_EQ(float_bits(out[2 * i + 1]), uint32_t(i) << 16) << "bfloat " << hex(i);
    }
  }
}

// ---- arithmetic: every operation rounds to the type ----

constexpr int kOps = 8;

struct Operands {
  std::vector<uint16_t> a, b, c;
};

// Special cases first, then random operands of moderate size.
Operands half_operands() {
  Operands o;
  auto add = [&](double a, double b, double c) {
    o.a.push_back(half_bits_exact(a));
    o.b.push_back(half_bits_exact(b));
    o.c.push_back(half_bits_exact(c));
  };
  const double u = std::ldexp(1.0, -10);  // ulp of 1
  add(1.0, u / 2, u / 2);                     // (1 + u/2) + u/2: 1 when each + rounds, 1 + u at once
  add(1.0 + u, 1.0 + u, -(1.0 + 2 * u));      // a*b + c: 2^-20 fused, 0 when a*b rounds first
  add(1.0 + u, 1.0 - u / 2, 0.0);             // a*b is a tie
  add(60000.0, 2.0, -60000.0);                // a*b overflows to inf unless fused
  add(std::ldexp(1.0, -14), 0.5, std::ldexp(1.0, -24));  // subnormal products
  add(-0.0, 0.0, -0.0);
  add(3.0, 0.0, 1.0);                         // division by zero: inf
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> dist(-4.0, 4.0);
  for (int i = 0; i < 500; ++i) add(round_half(dist(rng)), round_half(dist(rng)), round_half(dist(rng)));
  return o;
}

Operands bfloat_operands() {
  Operands o;
  auto add = [&](double a, double b, double c) {
    o.a.push_back(bfloat_bits_exact(a));
    o.b.push_back(bfloat_bits_exact(b));
    o.c.push_back(bfloat_bits_exact(c));
  };
  const double u = std::ldexp(1.0, -7);
  add(1.0, u / 2, u / 2);
  add(1.0 + u, 1.0 + u, -(1.0 + 2 * u));
  add(1.0 + u, 1.0 - u / 2, 0.0);
  add(3.0e38, 2.0, -3.0e38);
  add(-0.0, 0.0, -0.0);
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> dist(-100.0, 100.0);
  for (int i = 0; i < 500; ++i) add(round_bfloat(dist(rng)), round_bfloat(dist(rng)), round_bfloat(dist(rng)));
  return o;
}

// What each output of ARITHMETIC_KERNEL must be when every operation rounds
// to the type (`round`), and a*b+z is fused into one rounding iff `fused`.
std::array<double, kOps> expected_ops(double x, double y, double z, double (*round)(double), bool fused) {
  return {round(x + y),
          round(x - y),
          round(x * y),
          round(x / y),
          fused ? round(x * y + z) : round(round(x * y) + z),
          round(round(x + y) + z),
          round(round(x * y) + z),  // two statements: never fused
          -x};
}

const char* kOpNames[kOps] = {"x + y", "x - y", "x * y", "x / y", "x * y + z", "x + y + z",
                              "product = x * y; product + z", "-x"};

template <class Decode, class Encode>
void check_ops(const char* kernel, const Operands& in, Decode decode, Encode encode, double (*round)(double),
               bool fused) {
  auto module = compile_kernel("arithmetic.metal");
  Operands copy = in;
  const uint32_t n = uint32_t(in.a.size());
  std::vector<uint16_t> out(size_t(n) * kOps, 0xdead);
  auto result = run(*module, kernel, {n, 1, 1}, {1, 1, 1},
                    {bind(0, copy.a), bind(1, copy.b), bind(2, copy.c), bind(3, out)});
  EXPECT_TRUE(IsClean(result));
  int failures = 0;
  for (uint32_t i = 0; i < n && failures < 20; ++i) {
    const double x = decode(in.a[i]), y = decode(in.b[i]), z = decode(in.c[i]);
    auto want = expected_ops(x, y, z, round, fused);
    for (int k = 0; k < kOps; ++k) {
      const uint16_t got = out[i * kOps + k];
      const uint16_t expect = encode(want[k]);
      if (std::isnan(want[k]) ? !std::isnan(decode(got)) : got != expect) {
        ++failures;
        ADD_FAILURE() << kernel << " case " << i << ": " << kOpNames[k] << " with x=" << x << " y=" << y
                      << " z=" << z << ": got " << hex(got) << " (" << decode(got) << "), want " << hex(expect)
                      << " (" << want[k] << ")";
      }
    }
  }
}

// Every half / bfloat operation rounds to the type (Metal's fp16 ALUs; no
// float excess precision). `x * y + z` written as one expression is NOT fused
// on this backend: clang emits llvm.fmuladd and the x86-64 baseline target
// (no FMA unit) lowers it to a multiply and an add, each rounded to half; the
// bfloat stand-in's operators round each operation too. fma() is fused.
// (Apple's compiler may contract the expression into an fp16 FMA; kernels
// that care must call fma() explicitly.)
constexpr bool kHalfExpressionFused = false;
constexpr bool kBfloatExpressionFused = false;

TEST(HalfArithmetic, EveryOperationRoundsToHalf) {
  check_ops("half_ops", half_operands(), half_to_double, half_bits_exact, round_half, kHalfExpressionFused);
}

TEST(HalfArithmetic, ChainedAdditionRoundsAfterEachAdd) {
  // Spelled out for the first special case: (1 + 2^-11) + 2^-11.
  auto module = compile_kernel("arithmetic.metal");
  Operands in = half_operands();
  std::vector<uint16_t> out(in.a.size() * kOps, 0xdead);
  run(*module, "half_ops", {uint32_t(in.a.size()), 1, 1}, {1, 1, 1},
      {bind(0, in.a), bind(1, in.b), bind(2, in.c), bind(3, out)});
  EXPECT_EQ(out[5], 0x3c00) << "1 + 2^-11 rounds to 1 (tie to even) before + 2^-11; 0x3c01 means float excess precision";
  EXPECT_EQ(out[kOps + 6], 0x0000) << "(1+2^-10)^2 rounded to half, minus 1 + 2^-9 is 0";
  EXPECT_EQ(out[kOps + 4], kHalfExpressionFused ? 0x0010 : 0x0000) << "x * y + z in one expression";
}

TEST(HalfArithmetic, FmaRoundsOnce) {
  auto module = compile_kernel("arithmetic.metal");
  Operands in = half_operands();
  std::vector<uint16_t> out(in.a.size(), 0xdead);
  auto result = run(*module, "half_fma", {uint32_t(in.a.size()), 1, 1}, {1, 1, 1},
                    {bind(0, in.a), bind(1, in.b), bind(2, in.c), bind(3, out)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out[1], 0x0010) << "fma(1 + 2^-10, 1 + 2^-10, -(1 + 2^-9)) = 2^-20";
  for (size_t i = 0; i < in.a.size(); ++i) {
    const double x = half_to_double(in.a[i]), y = half_to_double(in.b[i]), z = half_to_double(in.c[i]);
    EXPECT_EQ(out[i], to_half_bits(x * y + z)) << "fma(" << x << ", " << y << ", " << z << ")";
  }
}

TEST(BfloatArithmetic, EveryOperationRoundsToBfloat) {
  check_ops("bfloat_ops", bfloat_operands(), bfloat_to_double, bfloat_bits_exact, round_bfloat,
            kBfloatExpressionFused);
}

// ---- vectors ----

TEST(VectorConversions, ConstructorsAndCastsConvertValues) {
  auto module = compile_kernel("arithmetic.metal");
  const float tie = 1.0f + std::ldexp(1.0f, -11);
  std::vector<float> f = {1.7f, -1.7f, 2.5f, -0.5f, 0.1f, 65519.0f, 65520.0f, tie};
  std::vector<int32_t> i = {1, -2, 3, 16777217};
  std::vector<int32_t> out_i(16, -99);
  std::vector<float> out_f(24, -99.0f);
  std::vector<uint32_t> out_u(16, 0xdeadbeef);
  auto result = run(*module, "vector_conversions", {1, 1, 1}, {1, 1, 1},
                    {bind(0, f), bind(1, i), bind(2, out_i), bind(3, out_f), bind(4, out_u)});
  EXPECT_TRUE(IsClean(result));
  using V4i = std::vector<int32_t>;
  using V4f = std::vector<float>;
  auto ints = [&](int k) { return V4i(out_i.begin() + 4 * k, out_i.begin() + 4 * k + 4); };
  auto floats = [&](int k) { return V4f(out_f.begin() + 4 * k, out_f.begin() + 4 * k + 4); };
  auto uints = [&](int k) { return std::vector<uint32_t>(out_u.begin() + 4 * k, out_u.begin() + 4 * k + 4); };
  EXPECT_EQ(ints(0), (V4i{1, -1, 2, 0})) << "int4(float4) truncates toward zero";
  EXPECT_EQ(ints(1), (V4i{1, -1, 2, 0})) << "(int4)float4 converts values, it is not a bit cast";
  EXPECT_EQ(ints(2), (V4i{1, -1, 4, 0})) << "int4(int2, int2)";
  EXPECT_EQ(ints(3), (V4i{17, -17, 25, -5})) << "int4(float4(half4(v)) * 10)";
  EXPECT_EQ(floats(0), (V4f{1, -2, 3, 16777216})) << "(float4)int4 converts values";
  EXPECT_EQ(floats(1), (V4f{1, -2, 3, 16777216})) << "float4(int4)";
  EXPECT_EQ(floats(2), (V4f{1.7f, -1.7f, 3, -2})) << "float4(float2, float, float)";
  EXPECT_EQ(floats(3), (V4f{2.5f, 2.5f, 2.5f, 2.5f})) << "float4(scalar) splats";
  EXPECT_EQ(floats(4), (V4f{-0.5f, 2.5f, -1.7f, 1.7f})) << "float4(v.wzyx)";
  EXPECT_EQ(floats(5), (V4f{1.7f, -1.7f, 2.5f, 7})) << "float4(float3, float)";
  EXPECT_EQ(uints(0), (std::vector<uint32_t>{to_half_bits(0.1f), 0x7bff, 0x7c00, 0x3c00}))
      << "half4(float4) rounds each component to nearest even, overflow -> inf";
  EXPECT_EQ(out_u[4], (0x7bffu << 16) | to_half_bits(0.1f)) << "as_type<uint2>(half4).x";
  EXPECT_EQ(out_u[5], 0x3c007c00u) << "as_type<uint2>(half4).y";
  EXPECT_EQ(uints(2), (std::vector<uint32_t>{0, 131038, 131040, 2})) << "uint4(float4) truncates";
  EXPECT_EQ(out_u[12], 0x3f800000u) << "float(bfloat(1 + 2^-11))";
  EXPECT_EQ(out_u[13], 0x3f800000u) << "float(half(1 + 2^-11)): a tie, rounds to even";
}

TEST(BitCasts, AsTypeReinterpretsBits) {
  auto module = compile_kernel("arithmetic.metal");
  std::vector<float> f = {1.0f, -2.5f, 3.14159274f};
  std::vector<uint32_t> u = {0x3c004000, 0x04030201, 0x40490fdb};
  std::vector<uint32_t> out(8, 0xdeadbeef);
  std::vector<float> out_f(3, -99.0f);
  auto result = run(*module, "bit_casts", {1, 1, 1}, {1, 1, 1}, {bind(0, f), bind(1, u), bind(2, out), bind(3, out_f)});
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(out[0], 0x3f800000u) << "as_type<uint>(1.0f)";
  EXPECT_EQ(out[1], 0xc0200000u) << "as_type<int>(-2.5f)";
  EXPECT_EQ(float_bits(out_f[0]), 0x40490fdbu) << "as_type<float>(uint)";
  EXPECT_EQ(out_f[1], 2.0f) << "as_type<half2>(0x3c004000).x is the low half";
  EXPECT_EQ(out_f[2], 1.0f) << "as_type<half2>(0x3c004000).y";
  EXPECT_EQ(out[2], 4321u) << "as_type<uchar4>(0x04030201) is (1, 2, 3, 4)";
  EXPECT_EQ(out[3], 0x3c00u) << "as_type<ushort>(half(1))";
  EXPECT_EQ(out[4], 0xc020u) << "as_type<ushort>(bfloat(-2.5))";
  EXPECT_EQ(out[5], 0x3f800000u) << "as_type<uint2>(float2).x";
  EXPECT_EQ(out[6], 0xc0200000u) << "as_type<uint2>(float2).y";
  EXPECT_EQ(out[7], 0x04030201u) << "as_type round trip keeps the bits";
}

}  // namespace
}  // namespace mfagen::cputest
