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
    case Elem::half:
      return "half";
    case Elem::bfloat:
      return "bfloat";
    case Elem::float32:
      return "float";
    case Elem::int8:
      return "char";
    case Elem::int32:
      return "int";
  }
  return "";
}

size_t size_of(Elem e) {
  switch (e) {
    case Elem::half:
    case Elem::bfloat:
      return 2;
    case Elem::int8:
      return 1;
    default:
      return 4;
  }
}

// Relative rounding error of one conversion to `e` (0 for integers).
double epsilon_of(Elem e) {
  switch (e) {
    case Elem::half:
      return std::ldexp(1.0, -11);
    case Elem::bfloat:
      return std::ldexp(1.0, -8);
    case Elem::float32:
      return std::ldexp(1.0, -24);
    default:
      return 0;
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
      case Elem::half:
        std::memcpy(&b16, at, 2);
        return half_to_double(b16);
      case Elem::bfloat:
        std::memcpy(&b16, at, 2);
        return bfloat_to_double(b16);
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
  for (size_t i = 0; i < count; ++i) b.set(i, e == Elem::int8 ? byte(rng) : e == Elem::int32 ? word(rng) : real(rng));
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
      cases.push_back(make(
          std::string("transpose_") + (t & 1 ? "t" : "n") + (t & 2 ? "t" : "n") + (acc ? "_accumulate" : "_multiply"),
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

// Tensors over thread memory (the destination) and constant memory (the
// right operand), one execution_thread product per thread.
TEST(ThreadScope, TensorsOverThreadAndConstantMemory) {
  auto module = compile_kernel("tensor_ops.metal", {"KERNELS=7"});
  std::mt19937 rng(17);
  constexpr int kThreads = 40;
  Buffer a = random_buffer(Elem::half, kThreads * 32, rng), b = random_buffer(Elem::half, 32, rng);
  Buffer c(Elem::float32, kThreads * 16);
  auto result = launch(*module, "thread_memory", {2, 1, 1}, {kThreads / 2, 1, 1}, {a.bind(0), b.bind(1), c.bind(2)}, 0);
  EXPECT_TRUE(IsClean(result));
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        double sum = 1, magnitude = 1;
        for (int k = 0; k < 8; ++k) {
          sum += a[t * 32 + i * 8 + k] * b[k * 4 + j];
          magnitude += std::fabs(a[t * 32 + i * 8 + k] * b[k * 4 + j]);
        }
        EXPECT_NEAR(c[t * 16 + i * 4 + j], sum, 10 * std::ldexp(1.0, -24) * magnitude) << t << ": " << i << "," << j;
      }
}

// ---- conversions: a destination as the next product's input ----

struct ConvertCase {
  std::string name;
  Elem elem;   // inputs and the converted destination (P)
  bool right;  // convert_right: P is the right input
};
void PrintTo(const ConvertCase& c, std::ostream* out) { *out << c.name; }

class Conversion : public ::testing::TestWithParam<std::tuple<ConvertCase, uint32_t>> {};

// P = A B (32 x 32, a cooperative destination of the input type), then
// O = P D (convert_left) or O = E P (convert_right) with P as a cooperative
// input when is_compatible_as_*_input says so (the default layout), through
// threadgroup memory otherwise (a permuted one): the same O either way.
TEST_P(Conversion, MatchesFloat64OnEitherPath) {
  const auto& [cc, seed] = GetParam();
  constexpr int MM = 32, K2 = 32, NN = 16, K = 24;
  auto module = compile_kernel("tensor_ops.metal",
                               {"KERNELS=3", std::string("TYPE_L=") + msl_name(cc.elem), "MM=32", "NN=16", "K2=32"});
  std::mt19937 rng(uint32_t(std::hash<std::string>()(cc.name)));
  Buffer a = random_buffer(cc.elem, MM * K, rng), b = random_buffer(cc.elem, K * K2, rng);
  // D: K2 x NN (convert_left); E: NN x MM (convert_right).
  Buffer third = random_buffer(cc.elem, cc.right ? NN * MM : K2 * NN, rng);
  Buffer o(Elem::float32, cc.right ? NN * K2 : MM * NN), p(cc.elem, MM * K2);
  std::vector<int32_t> used = {-1};
  Shape shape{MM, NN, K, K, K2, cc.right ? MM : NN};
  auto result = launch(*module, cc.right ? "convert_right" : "convert_left", {1, 1, 1}, {32, 1, 1},
                       {a.bind(0), b.bind(1), third.bind(2), o.bind(3), p.bind(4), bind(5, used),
                        cpu::BufferBinding{6, std::as_writable_bytes(std::span(&shape, 1))}},
                       seed);
  EXPECT_TRUE(IsClean(result));
  EXPECT_EQ(used[0], seed == 0 ? 1 : 0) << "default layouts convert in registers, permuted ones do not";
  // P against the float64 product (one rounding to the element type).
  for (int i = 0; i < MM; ++i)
    for (int j = 0; j < K2; ++j) {
      double sum = 0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        sum += a[i * K + k] * b[k * K2 + j];
        magnitude += std::fabs(a[i * K + k] * b[k * K2 + j]);
      }
      const double tolerance = ((K + 2) * std::ldexp(1.0, -24) + epsilon_of(cc.elem)) * magnitude + 1e-7;
      ASSERT_NEAR(p[i * K2 + j], sum, tolerance) << "P(" << i << "," << j << ")";
    }
  // O against the float64 product of the P the kernel computed.
  const int rows = cc.right ? NN : MM, cols = cc.right ? K2 : NN, inner = cc.right ? MM : K2;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      double sum = 0, magnitude = 0;
      for (int k = 0; k < inner; ++k) {
        const double x = cc.right ? third[i * MM + k] * p[k * K2 + j] : p[i * K2 + k] * third[k * NN + j];
        sum += x;
        magnitude += std::fabs(x);
      }
      ASSERT_NEAR(o[i * cols + j], sum, (inner + 2) * std::ldexp(1.0, -24) * magnitude + 1e-7)
          << "O(" << i << "," << j << ")";
    }
}

INSTANTIATE_TEST_SUITE_P(LeftAndRight, Conversion,
                         ::testing::Combine(::testing::Values(ConvertCase{"left_half", Elem::half, false},
                                                              ConvertCase{"left_bfloat", Elem::bfloat, false},
                                                              ConvertCase{"left_float", Elem::float32, false},
                                                              ConvertCase{"right_half", Elem::half, true},
                                                              ConvertCase{"right_float", Elem::float32, true}),
                                            ::testing::Values(0u, kPermuted)),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_permuted" : "_default");
                         });

// ---- reductions ----

struct ReduceCase {
  std::string name;
  Elem d;
  int sg, mm, nn, kk;
};
void PrintTo(const ReduceCase& c, std::ostream* out) { *out << c.name; }

class Reduction : public ::testing::TestWithParam<std::tuple<ReduceCase, uint32_t>> {};

// reduce_rows / reduce_columns (sum, max, min) of S = A B against loops over
// the S the kernel stored; max with the default (sum) identity is max(0, row).
TEST_P(Reduction, RowsAndColumnsMatchLoops) {
  const auto& [rc, seed] = GetParam();
  const int M = rc.mm, N = rc.nn, K = rc.kk;
  // Half inputs (bfloat ones for a bfloat destination, which half inputs cannot have).
  const Elem in = rc.d == Elem::bfloat ? Elem::bfloat : Elem::half;
  auto module = compile_kernel(
      "tensor_ops.metal", {"KERNELS=4", std::string("TYPE_L=") + msl_name(in), std::string("TYPE_R=") + msl_name(in),
                           std::string("TYPE_D=") + msl_name(rc.d), "SG=" + std::to_string(rc.sg),
                           "MM=" + std::to_string(M), "NN=" + std::to_string(N), "KK=" + std::to_string(K)});
  std::mt19937 rng(uint32_t(std::hash<std::string>()(rc.name)));
  Buffer a = random_buffer(in, M * K, rng), b = random_buffer(in, K * N, rng);
  Buffer s(rc.d, M * N), rows(rc.d, 4 * M), cols(rc.d, 3 * N);
  Shape shape{M, N, K, K, N, N};
  auto result = launch(*module, "reductions", {1, 1, 1}, {32u * rc.sg, 1, 1},
                       {a.bind(0), b.bind(1), s.bind(2), rows.bind(3), cols.bind(4),
                        cpu::BufferBinding{5, std::as_writable_bytes(std::span(&shape, 1))}},
                       seed);
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = 0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        sum += a[i * K + k] * b[k * N + j];
        magnitude += std::fabs(a[i * K + k] * b[k * N + j]);
      }
      ASSERT_NEAR(s[i * N + j], sum, ((K + 2) * std::ldexp(1.0, -24) + epsilon_of(rc.d)) * magnitude + 1e-7);
    }
  // Sums are accumulated in the element type, in order.
  auto check = [&](int count, int length, auto at, const Buffer& out, const char* what) {
    for (int x = 0; x < count; ++x) {
      double sum = 0, magnitude = 0, hi = -INFINITY, lo = INFINITY;
      for (int y = 0; y < length; ++y) {
        const double v = at(x, y);
        sum += v;
        magnitude += std::fabs(v);
        hi = std::max(hi, v);
        lo = std::min(lo, v);
      }
      EXPECT_NEAR(out[x], sum, length * epsilon_of(rc.d) * 2 * magnitude + 1e-7) << what << " sum " << x;
      EXPECT_EQ(out[count + x], hi) << what << " max " << x;
      EXPECT_EQ(out[2 * count + x], lo) << what << " min " << x;
    }
  };
  check(
      M, N, [&](int r, int c) { return s[r * N + c]; }, rows, "row");
  check(
      N, M, [&](int c, int r) { return s[r * N + c]; }, cols, "column");
  for (int r = 0; r < M; ++r) EXPECT_EQ(rows[3 * M + r], std::max(0.0, rows[M + r])) << "default identity, row " << r;
}

INSTANTIATE_TEST_SUITE_P(
    Scopes, Reduction,
    ::testing::Combine(::testing::Values(ReduceCase{"float_simdgroup", Elem::float32, 1, 32, 16, 16},
                                         ReduceCase{"half_simdgroup", Elem::half, 1, 16, 32, 8},
                                         ReduceCase{"float_ragged", Elem::float32, 1, 24, 40, 8},
                                         ReduceCase{"float_simdgroups2", Elem::float32, 2, 48, 32, 16},
                                         ReduceCase{"bfloat_simdgroups4", Elem::bfloat, 4, 64, 48, 8}),
                       ::testing::Values(0u, kPermuted)),
    [](const auto& info) {
      return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_permuted" : "_default");
    });

// ---- layouts: capacity, is_valid_element, get_multidimensional_index, iterators ----

struct LayoutCase {
  std::string name;
  int operand;  // 0 left, 1 right, 2 destination, 3 row reduction, 4 column reduction
  int sg, mm, nn, kk;
};
void PrintTo(const LayoutCase& c, std::ostream* out) { *out << c.name; }

class Layout : public ::testing::TestWithParam<std::tuple<LayoutCase, uint32_t>> {};

// Every thread of the scope has the same capacity; the valid slots of all
// threads hold each element of the operand exactly once (each entry of a
// reduction at least once: rows are replicated across lanes); iterators see
// what indices see.
TEST_P(Layout, ValidSlotsCoverTheOperand) {
  const auto& [lc, seed] = GetParam();
  auto module = compile_kernel("tensor_ops.metal", {"KERNELS=5", "OPERAND=" + std::to_string(lc.operand),
                                                    "SG=" + std::to_string(lc.sg), "MM=" + std::to_string(lc.mm),
                                                    "NN=" + std::to_string(lc.nn), "KK=" + std::to_string(lc.kk)});
  const uint32_t threads = lc.sg == 0 ? 1 : 32u * lc.sg;
  std::vector<int32_t> out(size_t(threads) * (1 + 2 * (lc.mm * lc.nn + lc.mm * lc.kk + lc.kk * lc.nn + 64)), -7);
  auto result = launch(*module, "layout_map", {1, 1, 1}, {threads, 1, 1}, {bind(0, out)}, seed);
  ASSERT_TRUE(IsClean(result));
  const int capacity = out[0];
  ASSERT_GT(capacity, 0);
  const int rows = lc.operand == 0 ? lc.mm : lc.operand == 1 ? lc.kk : lc.mm;
  const int cols = lc.operand == 0 ? lc.kk : lc.operand == 1 ? lc.nn : lc.nn;
  std::map<int, int> seen;
  int valid = 0;
  for (uint32_t t = 0; t < threads; ++t) {
    const int32_t* mine = out.data() + size_t(t) * (1 + 2 * capacity);
    ASSERT_EQ(mine[0], capacity) << "thread " << t;
    for (int i = 0; i < capacity; ++i) {
      ASSERT_EQ(mine[1 + i], mine[1 + capacity + i]) << "thread " << t << " slot " << i << ": iterator differs";
      if (mine[1 + i] < 0) continue;
      ++valid;
      ++seen[mine[1 + i]];
    }
  }
  if (lc.operand <= 2) {
    EXPECT_EQ(valid, rows * cols) << "valid slots";
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) EXPECT_EQ(seen[r * 4096 + c], 1) << "(" << r << "," << c << ")";
    EXPECT_EQ(seen.size(), size_t(rows * cols)) << "coordinates outside the operand";
  } else {
    const int entries = lc.operand == 3 ? lc.mm : lc.nn;
    for (int e = 0; e < entries; ++e) EXPECT_GE(seen[e], 1) << "entry " << e;
    EXPECT_EQ(seen.size(), size_t(entries)) << "entries outside the reduction";
  }
  RecordProperty("capacity", capacity);
}

INSTANTIATE_TEST_SUITE_P(
    Operands, Layout,
    ::testing::Combine(::testing::Values(LayoutCase{"left_32x24", 0, 1, 32, 16, 24},
                                         LayoutCase{"right_24x40", 1, 1, 16, 40, 24},
                                         LayoutCase{"destination_ragged_24x40", 2, 1, 24, 40, 16},
                                         LayoutCase{"destination_thread_5x7", 2, 0, 5, 7, 3},
                                         LayoutCase{"destination_simdgroups2_48x32", 2, 2, 48, 32, 16},
                                         LayoutCase{"destination_simdgroups4_40x72", 2, 4, 40, 72, 16},
                                         LayoutCase{"row_reduction_40x24", 3, 1, 40, 24, 16},
                                         LayoutCase{"row_reduction_simdgroups4_72x16", 3, 4, 72, 16, 16},
                                         LayoutCase{"column_reduction_24x40", 4, 1, 24, 40, 16},
                                         LayoutCase{"column_reduction_thread_6x9", 4, 0, 6, 9, 16},
                                         LayoutCase{"column_reduction_simdgroups2_32x56", 4, 2, 32, 56, 16}),
                       ::testing::Values(0u, kPermuted, 3u)),
    [](const auto& info) { return std::get<0>(info.param).name + "_seed" + std::to_string(std::get<1>(info.param)); });

// A kernel that fills and reads cooperative tensors at guessed positions
// (MLX NAX's fragment layout) computes the right product on the default
// layout only: permuted layouts make it wrong, without any detector finding
// (every slot it reads was written).
TEST(GuessedLayout, RightOnTheDefaultLayoutWrongOnPermutedOnes) {
  auto module = compile_kernel("tensor_ops.metal", {"KERNELS=6"});
  std::mt19937 rng(99);
  Buffer a = random_buffer(Elem::half, 16 * 16, rng), b = random_buffer(Elem::half, 16 * 32, rng);
  auto wrong_elements = [&](uint32_t seed) {
    Buffer c(Elem::float32, 16 * 32);
    auto result = launch(*module, "guessed_layout", {1, 1, 1}, {32, 1, 1}, {a.bind(0), b.bind(1), c.bind(2)}, seed);
    EXPECT_TRUE(IsClean(result)) << "seed " << seed;
    int wrong = 0;
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 32; ++j) {
        double sum = 0, magnitude = 0;
        for (int k = 0; k < 16; ++k) {
          sum += a[i * 16 + k] * b[k * 32 + j];
          magnitude += std::fabs(a[i * 16 + k] * b[k * 32 + j]);
        }
        wrong += std::fabs(c[i * 32 + j] - sum) > 18 * std::ldexp(1.0, -24) * magnitude + 1e-7;
      }
    return wrong;
  };
  EXPECT_EQ(wrong_elements(0), 0);
  for (uint32_t seed : {kPermuted, 1u, 2u, 1234u}) EXPECT_GT(wrong_elements(seed), 16 * 32 / 2) << "seed " << seed;
}

// ---- detector findings: undefined behaviour of tensor operations ----

struct Misuse {
  Buffer a, b, c;
  Misuse() {
    std::mt19937 rng(5);
    a = random_buffer(Elem::half, 256, rng);
    b = random_buffer(Elem::half, 256, rng);
    c = Buffer(Elem::float32, 256 + 16);
  }
  cpu::LaunchResult run(const std::string& entry, uint32_t threads, uint32_t seed = 0,
                        std::vector<std::string> defines = {}) {
    defines.push_back("KERNELS=6");
    auto module = compile_kernel("tensor_ops.metal", defines);
    return launch(*module, entry, {1, 1, 1}, {threads, 1, 1}, {a.bind(0), b.bind(1), c.bind(2)}, seed);
  }
};

// At least one finding; all of them tensor_op findings in `kernel` whose
// detail says each of `what`, located at the line of the kernel file that
// holds `marker` (findings of the kinds in `also` are allowed too).
::testing::AssertionResult TensorOpFinding(const cpu::LaunchResult& result, const std::string& kernel,
                                           std::vector<std::string> what, const std::string& marker,
                                           std::set<FindingKind> also = {}) {
  const std::string place =
      "tensor_ops.metal:" + std::to_string(line_of(kernel_file("tensor_ops.metal"), marker)) + ":";
  bool found = false;
  for (const cpu::Finding& f : result.findings) {
    if (also.contains(f.kind)) continue;
    bool says = f.kind == FindingKind::tensor_op && f.kernel == kernel && f.location.find(place) != std::string::npos;
    for (const std::string& w : what) says &= f.detail.find(w) != std::string::npos;
    if (!says)
      return ::testing::AssertionFailure() << "expected only tensor_op findings in " << kernel << " at " << place
                                           << " saying " << ::testing::PrintToString(what) << "\n"
                                           << describe(result);
    found = true;
  }
  if (!found) return ::testing::AssertionFailure() << "no tensor_op finding\n" << describe(result);
  return ::testing::AssertionSuccess();
}

TEST(TensorOpDetector, NotEveryThreadOfTheSimdgroupCallsRun) {
  Misuse m;
  auto result = m.run("partial_simdgroup", 32);
  EXPECT_TRUE(TensorOpFinding(result, "partial_simdgroup", {"not every thread of the execution_simdgroup scope"},
                              "MARK: partial simdgroup"));
}

TEST(TensorOpDetector, NotEverySimdgroupOfTheScopeCallsRun) {
  Misuse m;
  auto result = m.run("partial_simdgroups", 64);
  // The SIMD group that skips run() also leaves the others waiting at the
  // operation's threadgroup barrier.
  EXPECT_TRUE(TensorOpFinding(result, "partial_simdgroups",
                              {"not every thread of the execution_simdgroups<N> scope", "(32, 0)"},
                              "MARK: partial simdgroups", {FindingKind::barrier_divergence}));
}

TEST(TensorOpDetector, ScopeLargerThanTheDispatch) {
  Misuse m;
  auto result = m.run("scope_mismatch", 64, 0, {"SCOPE_N=4"});
  EXPECT_TRUE(
      TensorOpFinding(result, "scope_mismatch", {"does not match the dispatch", "(4, 2)"}, "MARK: scope mismatch"));
}

TEST(TensorOpDetector, ScopeSmallerThanTheDispatch) {
  Misuse m;
  auto result = m.run("scope_mismatch", 128, 0, {"SCOPE_N=2"});
  EXPECT_TRUE(
      TensorOpFinding(result, "scope_mismatch", {"does not match the dispatch", "(2, 4)"}, "MARK: scope mismatch"));
}

TEST(TensorOpDetector, AccumulatingIntoADestinationNeverZeroed) {
  Misuse m;
  auto result = m.run("unzeroed_destination", 32);
  EXPECT_TRUE(TensorOpFinding(result, "unzeroed_destination", {"cooperative destination slot never written"},
                              "MARK: unzeroed destination"));
}

TEST(TensorOpDetector, StoringASlotNeverWritten) {
  Misuse m;
  auto result = m.run("store_unwritten", 32);
  EXPECT_TRUE(
      TensorOpFinding(result, "store_unwritten", {"store reads a slot never written"}, "MARK: store unwritten"));
}

TEST(TensorOpDetector, ACooperativeInputPartlyWritten) {
  Misuse m;
  auto result = m.run("unwritten_input", 32);
  EXPECT_TRUE(
      TensorOpFinding(result, "unwritten_input", {"cooperative input element never written"}, "MARK: unwritten input"));
}

TEST(TensorOpDetector, ReducingADestinationNeverWritten) {
  Misuse m;
  auto result = m.run("reduce_unwritten", 32);
  EXPECT_TRUE(
      TensorOpFinding(result, "reduce_unwritten", {"reads a source slot never written"}, "MARK: reduce unwritten"));
}

// Converting without is_compatible_as_left_input happens to work on the
// default layout and is reported on a permuted one.
TEST(TensorOpDetector, ConversionWithoutACompatibilityCheck) {
  Misuse m;
  EXPECT_TRUE(IsClean(m.run("unchecked_conversion", 32, 0)));
  auto result = m.run("unchecked_conversion", 32, kPermuted);
  EXPECT_TRUE(TensorOpFinding(result, "unchecked_conversion", {"without is_compatible_as_*_input"},
                              "MARK: unchecked conversion"));
}

// The same operations done right report nothing, on any layout, and compute
// C = (A B) B and the row maxima of C.
TEST(TensorOpDetector, CorrectKernelHasNoFinding) {
  for (uint32_t seed : {0u, kPermuted, 9u}) {
    Misuse m;
    EXPECT_TRUE(IsClean(m.run("all_right", 32, seed))) << "seed " << seed;
    for (int i = 0; i < 16; ++i) {
      double row_max = -INFINITY;
      for (int j = 0; j < 16; ++j) {
        double sum = 0, magnitude = 0;
        for (int k = 0; k < 16; ++k) {
          double p = 0;
          for (int q = 0; q < 16; ++q) p += m.a[i * 16 + q] * m.b[q * 16 + k];
          p = half_to_double(to_half_bits(p));  // P is a half destination
          sum += p * m.b[k * 16 + j];
          magnitude += std::fabs(p * m.b[k * 16 + j]);
        }
        // P's rounding to half may differ from the float64 one by an ulp.
        EXPECT_NEAR(m.c[i * 16 + j], sum, std::ldexp(1.0, -10) * magnitude + 1e-6) << i << "," << j;
        row_max = std::max(row_max, m.c[i * 16 + j]);
      }
      EXPECT_EQ(m.c[256 + i], row_max) << "row max " << i;
    }
  }
}

// The detector can be switched off.
TEST(TensorOpDetector, OffWhenDisabled) {
  Misuse m;
  auto module = compile_kernel("tensor_ops.metal", {"KERNELS=6"});
  cpu::LaunchOptions options;
  options.threadgroups = {1, 1, 1};
  options.threads_per_threadgroup = {32, 1, 1};
  options.buffers = {m.a.bind(0), m.b.bind(1), m.c.bind(2)};
  options.detectors.tensor_ops = false;
  EXPECT_TRUE(IsClean(cpu::launch(*module, "unzeroed_destination", options)));
}

}  // namespace
}  // namespace mfagen::cputest

namespace mfagen::cputest {
namespace {

// map_iterator: S minus its row maxima, in registers where
// is_iterator_compatible says so (the default layout), through threadgroup
// memory where it does not (a permuted layout): the same values both ways,
// against plain loops. Without the check, a permuted layout is a finding.
struct MapIteratorRun {
  std::vector<float> c;
  uint32_t path = 7;
  cpu::LaunchResult result;
};

MapIteratorRun run_map_iterator(uint32_t seed, bool checked) {
  auto module = compile_kernel("tensor_ops_map_iterator.metal", {std::string("CHECKED=") + (checked ? "1" : "0")});
  std::vector<uint16_t> a(16 * 32), b(32 * 24);
  for (size_t i = 0; i < a.size(); ++i) a[i] = half_bits_exact(int(i * 7 % 13) - 6);
  for (size_t i = 0; i < b.size(); ++i) b[i] = half_bits_exact(int(i * 5 % 11) - 5);
  MapIteratorRun r;
  r.c.assign(16 * 24, -1.0f);
  std::vector<uint32_t> path(1, 7);
  cpu::LaunchOptions options;
  options.threadgroups = {1, 1, 1};
  options.threads_per_threadgroup = {32, 1, 1};
  options.buffers = {bind(0, a), bind(1, b), bind(2, r.c), bind(3, path)};
  options.tensor_layout_seed = seed;
  r.result = cpu::launch(*module, "minus_row_max", options);
  r.path = path[0];
  // The reference, from the same exact small integers.
  std::vector<double> s(16 * 24, 0.0);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 24; ++j)
      for (int k = 0; k < 32; ++k) s[i * 24 + j] += double(int(i * 32 + k) * 7 % 13 - 6) * double(int(k * 24 + j) * 5 % 11 - 5);
  for (int i = 0; i < 16; ++i) {
    double m = s[i * 24];
    for (int j = 1; j < 24; ++j) m = std::max(m, s[i * 24 + j]);
    for (int j = 0; j < 24; ++j)
      if (checked || seed == 0) EXPECT_EQ(r.c[i * 24 + j], float(s[i * 24 + j] - m)) << "row " << i << " col " << j;
  }
  return r;
}

TEST(MapIterator, RowMaximaThroughRegistersOnTheDefaultLayout) {
  const MapIteratorRun r = run_map_iterator(0, true);
  EXPECT_TRUE(IsClean(r.result));
  EXPECT_EQ(r.path, 1u) << "the default layout is iterator-compatible";
}

TEST(MapIterator, ThroughThreadgroupMemoryOnAPermutedLayout) {
  for (uint32_t seed : {1u, 77u}) {
    const MapIteratorRun r = run_map_iterator(seed, true);
    EXPECT_TRUE(IsClean(r.result));
    EXPECT_EQ(r.path, 0u) << "a permuted layout is never iterator-compatible";
  }
}

TEST(MapIterator, WithoutTheCompatibilityCheckAPermutedLayoutIsAFinding) {
  const MapIteratorRun r = run_map_iterator(5, false);
  ASSERT_GT(r.result.findings_total, 0u);
  EXPECT_EQ(r.result.findings[0].kind, cpu::FindingKind::tensor_op);
  EXPECT_NE(r.result.findings[0].detail.find("is_iterator_compatible"), std::string::npos) << r.result.findings[0].detail;
}

}  // namespace
}  // namespace mfagen::cputest
