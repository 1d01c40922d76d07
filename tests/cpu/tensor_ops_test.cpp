// Metal 4 TensorOps on the cpu backend (DESIGN.md section 15): every
// operation of the stand-in (mpp::tensor_ops::matmul2d over tensors and
// cooperative tensors, conversions, reductions, load/store, element
// iteration) against plain loops computed here in float64 from the rounded
// inputs (kernels/tensor_ops.metal), the same results under permuted
// cooperative-tensor layouts (LaunchOptions::tensor_layout_seed), a kernel
// that relies on the default layout failing under them, and the
// tensor-op detector's findings on deliberately wrong kernels.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

using cpu::FindingKind;
using ::testing::HasSubstr;

constexpr uint32_t kPermuted = 0x5eed;  // a tensor_layout_seed != 0

// ---- element types ----

enum class Elem { half, bfloat, float32, int8, int32 };

const char* msl_name(Elem e) {
  switch (e) {
    case Elem::half: return "half";
    case Elem::bfloat: return "bfloat";
    case Elem::float32: return "float";
    case Elem::int8: return "char";
    case Elem::int32: return "int";
  }
  return "";
}

size_t size_of(Elem e) {
  switch (e) {
    case Elem::half:
    case Elem::bfloat: return 2;
    case Elem::int8: return 1;
    default: return 4;
  }
}

// Relative rounding error of one conversion to `e` (0 for integers).
double epsilon_of(Elem e) {
  switch (e) {
    case Elem::half: return std::ldexp(1.0, -11);
    case Elem::bfloat: return std::ldexp(1.0, -8);
    case Elem::float32: return std::ldexp(1.0, -24);
    default: return 0;
  }
}

bool is_integer(Elem e) { return e == Elem::int8 || e == Elem::int32; }

// Elements of one type as the kernel sees them (`bytes`) and their exact values.
struct Buffer {
  Elem elem = Elem::float32;
  std::vector<std::byte> bytes;

  Buffer() = default;
  Buffer(Elem e, size_t count) : elem(e), bytes(count * size_of(e)) {}
  size_t size() const { return bytes.size() / size_of(elem); }

  // Stores v rounded to the element type; returns the stored value.
  double set(size_t i, double v) {
    std::byte* at = bytes.data() + i * size_of(elem);
    switch (elem) {
      case Elem::half: {
        uint16_t b = to_half_bits(v);
        std::memcpy(at, &b, 2);
        break;
      }
      case Elem::bfloat: {
        uint16_t b = to_bfloat_bits(v);
        std::memcpy(at, &b, 2);
        break;
      }
      case Elem::float32: {
        float f = float(v);
        std::memcpy(at, &f, 4);
        break;
      }
      case Elem::int8: {
        int8_t x = int8_t(std::lrint(v));
        std::memcpy(at, &x, 1);
        break;
      }
      case Elem::int32: {
        int32_t x = int32_t(std::lrint(v));
        std::memcpy(at, &x, 4);
        break;
      }
    }
    return (*this)[i];
  }
  double operator[](size_t i) const {
    const std::byte* at = bytes.data() + i * size_of(elem);
    uint16_t b16;
    switch (elem) {
      case Elem::half: std::memcpy(&b16, at, 2); return half_to_double(b16);
      case Elem::bfloat: std::memcpy(&b16, at, 2); return bfloat_to_double(b16);
      case Elem::float32: {
        float f;
        std::memcpy(&f, at, 4);
        return f;
      }
      case Elem::int8: {
        int8_t x;
        std::memcpy(&x, at, 1);
        return x;
      }
      case Elem::int32: {
        int32_t x;
        std::memcpy(&x, at, 4);
        return x;
      }
    }
    return 0;
  }
  cpu::BufferBinding bind(uint32_t index) { return cpu::BufferBinding{index, bytes}; }
};

// Random values: [-1, 1] for floating types, the whole range of int8, and
// [-1000, 1000] for int32.
Buffer random_buffer(Elem e, size_t count, std::mt19937& rng) {
  Buffer b(e, count);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> byte(-128, 127), word(-1000, 1000);
  for (size_t i = 0; i < count; ++i)
    b.set(i, e == Elem::int8 ? byte(rng) : e == Elem::int32 ? word(rng) : real(rng));
  return b;
}

struct Shape {
  int32_t M, N, K;
  int32_t lda, ldb, ldc;
};

cpu::LaunchResult launch(const cpu::Module& module, std::string_view entry, Dim3 groups, Dim3 threads,
                         std::vector<cpu::BufferBinding> buffers, uint32_t seed) {
  cpu::LaunchOptions options;
  options.threadgroups = groups;
  options.threads_per_threadgroup = threads;
  options.buffers = std::move(buffers);
  options.tensor_layout_seed = seed;
  return cpu::launch(module, entry, options);
}

uint32_t ceil_div(int a, int b) { return uint32_t((a + b - 1) / b); }

// ---- matmul2d ----

struct MatmulCase {
  std::string name;
  std::string kernel = "matmul_tensors";  // matmul_cooperative, matmul_threadgroup, matmul_cooperative_inputs
  Elem l = Elem::half, r = Elem::half, d = Elem::float32;
  int mm = 32, nn = 16, kk = 16;  // the descriptor (kk 0: dynamic)
  bool trl = false, trr = false, acc = false;
  int sg = 1;               // 0 execution_thread, 1 execution_simdgroup, N execution_simdgroups<N>
  int per_threadgroup = 1;  // scopes per threadgroup (execution_thread and execution_simdgroup)
  int runs = 1;
  bool static_slice = false, iter = false, right_tensor = false;
  int M = 40, N = 24, K = 16;

  bool cooperative_destination() const { return kernel != "matmul_tensors" && kernel != "matmul_threadgroup"; }
  std::vector<std::string> defines() const {
    const int group = kernel == "matmul_cooperative_inputs" ? 2 : 1;
    return {"KERNELS=" + std::to_string(group),
            std::string("TYPE_L=") + msl_name(l),
            std::string("TYPE_R=") + msl_name(r),
            std::string("TYPE_D=") + msl_name(d),
            "MM=" + std::to_string(mm),
            "NN=" + std::to_string(nn),
            "KK=" + std::to_string(kk),
            "TRL=" + std::to_string(trl),
            "TRR=" + std::to_string(trr),
            "ACC=" + std::to_string(acc),
            "SG=" + std::to_string(sg),
            "RUNS=" + std::to_string(runs),
            "STATIC_SLICE=" + std::to_string(static_slice),
            "ITER=" + std::to_string(iter),
            "RIGHT_TENSOR=" + std::to_string(right_tensor)};
  }
};

void PrintTo(const MatmulCase& c, std::ostream* out) { *out << c.name; }

// The sentinel outside C's M x N: writes outside the destination's extents
// must be dropped.
constexpr double kSentinel = 7.0;

struct MatmulRun {
  Buffer a, b, c, c0;
  Shape shape{};
  cpu::LaunchResult result;
};

MatmulRun run_matmul(const MatmulCase& mc, uint32_t seed) {
  auto module = compile_kernel("tensor_ops.metal", mc.defines());
  std::mt19937 rng(uint32_t(std::hash<std::string>()(mc.name)));
  MatmulRun run;
  // Stored A: M x K (K x M when transposed), B: K x N (N x K), row strides
  // with padding that must never be read.
  const int a_rows = mc.trl ? mc.K : mc.M, a_cols = mc.trl ? mc.M : mc.K;
  const int b_rows = mc.trr ? mc.N : mc.K, b_cols = mc.trr ? mc.K : mc.N;
  run.shape = Shape{mc.M, mc.N, mc.K, a_cols + 1, b_cols + 2, mc.N + 3};
  run.a = random_buffer(mc.l, size_t(a_rows) * run.shape.lda, rng);
  run.b = random_buffer(mc.r, size_t(b_rows) * run.shape.ldb, rng);
  run.c = random_buffer(mc.d, size_t(mc.M + 2) * run.shape.ldc, rng);
  for (int i = 0; i < mc.M + 2; ++i)
    for (int j = 0; j < run.shape.ldc; ++j)
      if (i >= mc.M || j >= mc.N) run.c.set(size_t(i) * run.shape.ldc + j, kSentinel);
  run.c0 = run.c;

  const bool one_scope_per_group = mc.kernel == "matmul_threadgroup" || mc.sg > 1;
  const int per_group = one_scope_per_group ? 1 : mc.per_threadgroup;
  const uint32_t threads = mc.sg == 0 ? uint32_t(per_group) : mc.sg == 1 ? 32u * per_group : 32u * mc.sg;
  const Dim3 groups{ceil_div(mc.N, mc.nn), ceil_div(int(ceil_div(mc.M, mc.mm)), per_group), 1};
  run.result = launch(*module, mc.kernel, groups, {threads, 1, 1},
                      {run.a.bind(0), run.b.bind(1), run.c.bind(2),
                       cpu::BufferBinding{3, std::as_writable_bytes(std::span(&run.shape, 1))}},
                      seed);
  return run;
}

// Compares C with the float64 products of the rounded inputs.
void expect_products(const MatmulCase& mc, const MatmulRun& run) {
  const Shape& s = run.shape;
  auto a = [&](int i, int k) { return mc.trl ? run.a[size_t(k) * s.lda + i] : run.a[size_t(i) * s.lda + k]; };
  auto b = [&](int k, int j) { return mc.trr ? run.b[size_t(j) * s.ldb + k] : run.b[size_t(k) * s.ldb + j]; };
  // Products a run sums: a static k reads KK columns (zeros past K); the
  // cooperative-inputs kernel loops over all of K in chunks of KK.
  const bool chunked = mc.kernel == "matmul_cooperative_inputs";
  const int k_used = chunked || mc.kk == 0 ? mc.K : std::min(mc.kk, mc.K);
  const int adds = chunked ? int(ceil_div(mc.K, mc.kk)) : mc.runs;  // runs that add to the destination
  const bool overwrite = !mc.cooperative_destination() && !mc.acc;  // tensor destination, mode::multiply
  const bool starts_at_c = mc.acc;
  double worst = 0;
  int wrong = 0;
  for (int i = 0; i < mc.M + 2; ++i) {
    for (int j = 0; j < s.ldc; ++j) {
      const size_t at = size_t(i) * s.ldc + j;
      if (i >= mc.M || j >= mc.N) {
        ASSERT_EQ(run.c[at], kSentinel) << mc.name << ": C(" << i << "," << j << ") outside the matrix was written";
        continue;
      }
      double product = 0, magnitude = 0;
      for (int k = 0; k < k_used; ++k) {
        product += a(i, k) * b(k, j);
        magnitude += std::fabs(a(i, k) * b(k, j));
      }
      const double start = starts_at_c ? run.c0[at] : 0.0;
      const double expected = overwrite ? product : start + (chunked ? product : mc.runs * product);
      const double scale = std::fabs(start) + (overwrite ? 1 : adds) * magnitude;
      // Float accumulation in k order (one rounding per product for float
      // inputs), then one rounding to the destination type per run.
      const double tolerance =
          is_integer(mc.d) ? 0.0
                           : (overwrite ? 1 : adds) * ((k_used + 2) * std::ldexp(1.0, -24) + epsilon_of(mc.d)) * scale +
                                 std::ldexp(1.0, -24);
      const double error = std::fabs(run.c[at] - expected);
      worst = std::max(worst, error);
      if (!(error <= tolerance) && ++wrong <= 5)
        ADD_FAILURE() << mc.name << ": C(" << i << "," << j << ") = " << run.c[at] << ", expected " << expected
                      << " (tolerance " << tolerance << ")";
    }
  }
  EXPECT_EQ(wrong, 0) << mc.name << ": " << wrong << " wrong elements";
}

class Matmul : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(Matmul, MatchesFloat64OnTheDefaultLayout) {
  const MatmulCase& mc = GetParam();
  MatmulRun run = run_matmul(mc, 0);
  EXPECT_TRUE(IsClean(run.result));
  expect_products(mc, run);
}

// Cooperative tensors are used only through the documented API here, so a
// permuted layout changes nothing.
TEST_P(Matmul, MatchesFloat64OnAPermutedLayout) {
  const MatmulCase& mc = GetParam();
  MatmulRun run = run_matmul(mc, kPermuted);
  EXPECT_TRUE(IsClean(run.result));
  expect_products(mc, run);
}

MatmulCase make(std::string name, std::function<void(MatmulCase&)> edit) {
  MatmulCase c;
  c.name = std::move(name);
  edit(c);
  return c;
}

std::vector<MatmulCase> tensor_cases() {
  std::vector<MatmulCase> cases;
  // Every transpose combination in both modes; M, N not multiples of the
  // tile (edge tiles are smaller than the descriptor), dynamic k.
  for (int t = 0; t < 4; ++t)
    for (int acc = 0; acc < 2; ++acc)
      cases.push_back(make(std::string("transpose_") + (t & 1 ? "t" : "n") + (t & 2 ? "t" : "n") +
                               (acc ? "_accumulate" : "_multiply"),
                           [&](MatmulCase& c) {
                             c.trl = t & 1;
                             c.trr = t & 2;
                             c.acc = acc;
                             c.kk = 0;
                             c.K = 20;
                           }));
  // multiply overwrites a tensor destination; multiply_accumulate adds each run.
  cases.push_back(make("twice_multiply", [](MatmulCase& c) { c.runs = 2; }));
  cases.push_back(make("twice_accumulate", [](MatmulCase& c) {
    c.runs = 2;
    c.acc = true;
  }));
  // Static k: K smaller than k (zeros past the extent), larger (first k only).
  cases.push_back(make("static_k_past_extent", [](MatmulCase& c) {
    c.kk = 16;
    c.K = 10;
  }));
  cases.push_back(make("static_k_within_extent", [](MatmulCase& c) {
    c.kk = 16;
    c.K = 24;
  }));
  cases.push_back(make("ragged_descriptor", [](MatmulCase& c) {
    c.mm = 24;
    c.nn = 20;
    c.kk = 0;
    c.M = 50;
    c.N = 45;
    c.K = 13;
  }));
  // Scopes.
  cases.push_back(make("thread_scope", [](MatmulCase& c) {
    c.sg = 0;
    c.per_threadgroup = 3;
    c.mm = 8;
    c.nn = 8;
    c.kk = 0;
    c.M = 30;
    c.N = 20;
    c.K = 11;
  }));
  cases.push_back(make("simdgroup_scopes_per_threadgroup", [](MatmulCase& c) {
    c.per_threadgroup = 2;
    c.M = 100;
  }));
  cases.push_back(make("simdgroups2", [](MatmulCase& c) {
    c.sg = 2;
    c.mm = 32;
    c.nn = 32;
    c.kk = 0;
    c.M = 70;
    c.N = 40;
    c.K = 24;
  }));
  cases.push_back(make("simdgroups4", [](MatmulCase& c) {
    c.sg = 4;
    c.mm = 64;
    c.nn = 32;
    c.kk = 32;
    c.M = 80;
    c.N = 48;
    c.K = 40;
    c.trr = true;
  }));
  // slice<E...> views with static extents for interior tiles.
  cases.push_back(make("static_slices", [](MatmulCase& c) {
    c.static_slice = true;
    c.M = 72;
    c.N = 40;
  }));
  cases.push_back(make("static_slices_transposed_dynamic_k", [](MatmulCase& c) {
    c.static_slice = true;
    c.trl = c.trr = true;
    c.kk = 0;
    c.M = 72;
    c.N = 40;
    c.K = 21;
  }));
  // Element types.
  struct Types {
    const char* name;
    Elem l, r, d;
  };
  for (Types t : {Types{"half_half_half", Elem::half, Elem::half, Elem::half},
                  Types{"float_float_float", Elem::float32, Elem::float32, Elem::float32},
                  Types{"half_float_float", Elem::half, Elem::float32, Elem::float32},
                  Types{"bfloat_bfloat_bfloat", Elem::bfloat, Elem::bfloat, Elem::bfloat},
                  Types{"bfloat_bfloat_float", Elem::bfloat, Elem::bfloat, Elem::float32},
                  Types{"bfloat_half_half", Elem::bfloat, Elem::half, Elem::half},
                  Types{"half_int8_float", Elem::half, Elem::int8, Elem::float32},
                  Types{"int8_int8_int32", Elem::int8, Elem::int8, Elem::int32}})
    cases.push_back(make(std::string("types_") + t.name, [&](MatmulCase& c) {
      c.l = t.l;
      c.r = t.r;
      c.d = t.d;
      c.acc = true;
      c.trr = true;
    }));
  return cases;
}

std::vector<MatmulCase> cooperative_cases() {
  std::vector<MatmulCase> cases;
  for (int t = 0; t < 4; ++t)
    cases.push_back(make(std::string("transpose_") + (t & 1 ? "t" : "n") + (t & 2 ? "t" : "n"), [&](MatmulCase& c) {
      c.kernel = "matmul_cooperative";
      c.trl = t & 1;
      c.trr = t & 2;
      c.acc = t == 1;
      c.kk = 0;
      c.K = 20;
    }));
  // A cooperative destination adds in both modes: zeroed and run twice gives 2 A B.
  cases.push_back(make("twice_multiply", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.runs = 2;
  }));
  cases.push_back(make("loaded_twice_accumulate", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.runs = 2;
    c.acc = true;
  }));
  cases.push_back(make("iterators_ragged", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.iter = true;
    c.mm = 24;
    c.nn = 40;
    c.kk = 0;
    c.M = 30;
    c.N = 50;
    c.K = 9;
  }));
  cases.push_back(make("thread_scope", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.sg = 0;
    c.per_threadgroup = 2;
    c.mm = 8;
    c.nn = 12;
    c.acc = true;
    c.M = 20;
    c.N = 30;
    c.K = 7;
  }));
  cases.push_back(make("simdgroup_scopes_per_threadgroup", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.per_threadgroup = 4;
    c.M = 100;
  }));
  cases.push_back(make("simdgroups2", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.sg = 2;
    c.mm = 48;
    c.nn = 32;
    c.kk = 0;
    c.M = 60;
    c.N = 50;
    c.K = 18;
    c.trl = true;
  }));
  cases.push_back(make("simdgroups4", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.sg = 4;
    c.mm = 64;
    c.nn = 48;
    c.kk = 16;
    c.M = 70;
    c.N = 60;
    c.K = 16;
    c.acc = true;
  }));
  cases.push_back(make("half_destination", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.d = Elem::half;
    c.acc = true;
  }));
  cases.push_back(make("bfloat_destination", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.l = c.r = c.d = Elem::bfloat;
  }));
  cases.push_back(make("int8_int32", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative";
    c.l = c.r = Elem::int8;
    c.d = Elem::int32;
    c.acc = true;
    c.trl = true;
  }));
  return cases;
}

std::vector<MatmulCase> threadgroup_cases() {
  std::vector<MatmulCase> cases;
  for (int t = 0; t < 4; ++t)
    cases.push_back(make(std::string("transpose_") + (t & 1 ? "t" : "n") + (t & 2 ? "t" : "n"), [&](MatmulCase& c) {
      c.kernel = "matmul_threadgroup";
      c.trl = t & 1;
      c.trr = t & 2;
      c.acc = t >= 2;
      c.M = 45;
      c.N = 30;
      c.K = 12;
    }));
  cases.push_back(make("thread_scope", [](MatmulCase& c) {
    c.kernel = "matmul_threadgroup";
    c.sg = 0;
    c.mm = 8;
    c.nn = 8;
    c.kk = 8;
    c.M = 12;
    c.N = 20;
    c.K = 8;
  }));
  cases.push_back(make("simdgroups2_bfloat", [](MatmulCase& c) {
    c.kernel = "matmul_threadgroup";
    c.sg = 2;
    c.mm = 32;
    c.nn = 32;
    c.l = c.r = Elem::bfloat;
    c.acc = true;
    c.M = 40;
    c.N = 33;
  }));
  return cases;
}

std::vector<MatmulCase> cooperative_input_cases() {
  std::vector<MatmulCase> cases;
  cases.push_back(make("both_inputs", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative_inputs";
    c.K = 40;
  }));
  cases.push_back(make("left_input_right_tensor", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative_inputs";
    c.right_tensor = true;
    c.K = 40;
  }));
  cases.push_back(make("ragged_two_simdgroups", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative_inputs";
    c.per_threadgroup = 2;
    c.mm = 24;
    c.nn = 20;
    c.kk = 24;
    c.M = 60;
    c.N = 30;
    c.K = 50;
  }));
  cases.push_back(make("int8_int32", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative_inputs";
    c.l = c.r = Elem::int8;
    c.d = Elem::int32;
    c.K = 32;
  }));
  cases.push_back(make("bfloat_float", [](MatmulCase& c) {
    c.kernel = "matmul_cooperative_inputs";
    c.l = c.r = Elem::bfloat;
    c.K = 20;
  }));
  return cases;
}

std::string matmul_name(const ::testing::TestParamInfo<MatmulCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Tensors, Matmul, ::testing::ValuesIn(tensor_cases()), matmul_name);
INSTANTIATE_TEST_SUITE_P(CooperativeDestination, Matmul, ::testing::ValuesIn(cooperative_cases()), matmul_name);
INSTANTIATE_TEST_SUITE_P(Threadgroup, Matmul, ::testing::ValuesIn(threadgroup_cases()), matmul_name);
INSTANTIATE_TEST_SUITE_P(CooperativeInputs, Matmul, ::testing::ValuesIn(cooperative_input_cases()), matmul_name);

}  // namespace
}  // namespace mfagen::cputest
