// Figures for the closing note of issue 3 (printed, not asserted): compile
// time of one kernel cold and cached, and execution times of a 256x256 float
// simdgroup matmul and of one 128-thread threadgroup doing 64 barriers, with
// and without instrumentation.
//
//   build/tests/cpu/cpu_backend_figures [repetitions]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <span>
#include <thread>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "mfagen/cpu/backend.h"

namespace fs = std::filesystem;
using namespace mfagen::cpu;

namespace {

fs::path kernel(const char* name) { return fs::path(MFAGEN_TEST_DATA_DIR) / "kernels" / name; }

struct Dims {
  uint32_t M, N, K;
};

template <class T>
BufferBinding bind(uint32_t index, std::vector<T>& v) {
  return BufferBinding{index, std::as_writable_bytes(std::span(v))};
}

// Best of `reps` launches, in seconds, and whether the last one was clean.
double best_launch(const Module& module, const char* entry, const LaunchOptions& options, int reps, bool* clean) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    LaunchResult result = launch(module, entry, options);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    *clean = result.clean();
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("cpu backend figures (best of %d, %u worker threads)\n\n", reps, cores);

  // --- compile time ---
  fs::path cold_dir = fs::temp_directory_path() / ("mfagen-figures-" + std::to_string(getpid()));
  fs::remove_all(cold_dir);
  std::printf("%-58s %10s\n", "compile simdgroup_matmul.metal (ELEM=float)", "seconds");
  for (bool instrument : {true, false}) {
    CompileOptions options;
    options.defines = {"ELEM=float"};
    options.instrument = instrument;
    options.cache_dir = cold_dir / (instrument ? "instrumented" : "plain");
    CompileStats cold, cached;
    compile_file(kernel("simdgroup_matmul.metal"), options, &cold);
    compile_file(kernel("simdgroup_matmul.metal"), options, &cached);
    std::printf("  %-56s %10.3f%s\n", instrument ? "cold, instrumented (fresh cache dir)" : "cold, plain (fresh cache dir)",
                cold.seconds, cold.cache_hit ? "  (unexpected cache hit)" : "");
    std::printf("  %-56s %10.3f%s\n", instrument ? "cached, instrumented" : "cached, plain", cached.seconds,
                cached.cache_hit ? "" : "  (unexpected cache miss)");
  }
  fs::remove_all(cold_dir);

  // --- 256x256 float matmul ---
  const uint32_t n = 256;
  std::vector<float> a(n * n), b(n * n), c(n * n);
  for (uint32_t i = 0; i < n * n; ++i) {
    a[i] = float(int(i * 37 % 17) - 8) / 8.0f;
    b[i] = float(int(i * 11 % 13) - 6) / 8.0f;
  }
  Dims dims{n, n, n};
  std::printf("\n%-58s %10s %6s\n", "256x256x256 float simdgroup matmul", "seconds", "clean");
  for (const char* entry : {"matmul_nn", "matmul_tiled"}) {
    for (bool instrument : {true, false}) {
      CompileOptions options;
      options.defines = {"ELEM=float"};
      options.instrument = instrument;
      auto module = compile_file(kernel("simdgroup_matmul.metal"), options);
      LaunchOptions launch_options;
      const bool tiled = std::string(entry) == "matmul_tiled";
      launch_options.threadgroups = tiled ? Dim3{n / 16, n / 16, 1} : Dim3{n / 8, n / 8, 1};
      launch_options.threads_per_threadgroup = tiled ? Dim3{128, 1, 1} : Dim3{32, 1, 1};
      launch_options.buffers = {bind(0, a), bind(1, b), bind(2, c),
                                BufferBinding{3, std::as_writable_bytes(std::span(&dims, 1))}};
      bool clean = false;
      double seconds = best_launch(*module, entry, launch_options, reps, &clean);
      std::string label = std::string(entry) + (tiled ? " (128 threads/tg)" : " (32 threads/tg)") +
                          (instrument ? ", instrumented" : ", plain");
      std::printf("  %-56s %10.4f %6s\n", label.c_str(), seconds, clean ? "yes" : "NO");
    }
  }

  // --- 64 barriers in one threadgroup of 4 simdgroups ---
  std::printf("\n%-58s %10s %6s\n", "1 threadgroup x 128 threads, 64 barriers (incl. launch)", "seconds", "clean");
  for (bool instrument : {true, false}) {
    CompileOptions options;
    options.instrument = instrument;
    auto module = compile_file(kernel("barriers.metal"), options);
    std::vector<float> out(128);
    LaunchOptions launch_options;
    launch_options.threadgroups = {1, 1, 1};
    launch_options.threads_per_threadgroup = {128, 1, 1};
    launch_options.buffers = {bind(0, out)};
    bool clean = false;
    double seconds = best_launch(*module, "barrier_ring", launch_options, reps, &clean);
    std::printf("  %-56s %10.6f %6s   (%.2f us per barrier)\n", instrument ? "instrumented" : "plain", seconds,
                clean ? "yes" : "NO", seconds / 64 * 1e6);
  }
  return 0;
}
