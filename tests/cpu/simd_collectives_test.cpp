// SIMD-group collectives (sum, max, min, shuffles, broadcast, prefix sum) on
// float and int, with a partial last simdgroup (48 threads per threadgroup)
// and lanes that return early, against a plain C++ model of Metal's rules:
// reductions and prefix sums cover the active lanes only; a shuffle from a
// lane that does not exist or has returned is undefined (not checked); the
// upper `delta` lanes of shuffle_down and the lower `delta` lanes of
// shuffle_up keep their own value.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <random>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

constexpr uint32_t kSlots = 12;
constexpr uint32_t kThreads = 48;  // a full simdgroup and one of 16 lanes
constexpr uint32_t kGroups = 2;
constexpr uint16_t kBroadcastLane = 2;

const char* kSlotNames[kSlots] = {"simd_sum",          "simd_max",          "simd_min",
                                  "simd_shuffle",      "simd_shuffle_xor 1", "simd_shuffle_xor 8",
                                  "simd_shuffle_xor 16", "simd_shuffle_down 3", "simd_shuffle_up 5",
                                  "simd_broadcast",    "simd_prefix_exclusive_sum", "shuffle_xor 1 then 8"};

template <class T>
struct Reference {
  // expected[gid * kSlots + s]; nullopt where Metal leaves the value undefined.
  std::vector<std::optional<T>> expected;
};

// Metal's semantics for one simdgroup, written out directly.
template <class T>
Reference<T> reference(const std::vector<T>& in, const std::vector<uint32_t>& active) {
  Reference<T> ref;
  ref.expected.assign(in.size() * kSlots, std::nullopt);
  const uint32_t total = uint32_t(in.size());
  for (uint32_t group = 0; group < kGroups; ++group) {
    for (uint32_t simd_base = 0; simd_base < kThreads; simd_base += 32) {
      const uint32_t base = group * kThreads + simd_base;
      const uint32_t lanes = std::min<uint32_t>(32, kThreads - simd_base);
      auto is_active = [&](int64_t lane) { return lane >= 0 && lane < lanes && active[base + lane] != 0; };
      auto value = [&](uint32_t lane) { return in[base + lane]; };
      auto from = [&](int64_t lane) -> std::optional<T> {
        return is_active(lane) ? std::optional<T>(value(uint32_t(lane))) : std::nullopt;
      };
      T sum = 0, mx = std::numeric_limits<T>::lowest(), mn = std::numeric_limits<T>::max();
      for (uint32_t l = 0; l < lanes; ++l)
        if (is_active(l)) {
          sum += value(l);
          mx = std::max(mx, value(l));
          mn = std::min(mn, value(l));
        }
      T prefix = 0;
      for (uint32_t l = 0; l < lanes; ++l) {
        if (!is_active(l)) continue;
        std::optional<T>* e = &ref.expected[(base + l) * kSlots];
        e[0] = sum;
        e[1] = mx;
        e[2] = mn;
        e[3] = from((l * 7 + 3) % 32);
        e[4] = from(l ^ 1);
        e[5] = from(l ^ 8);
        e[6] = from(l ^ 16);
        e[7] = l + 3 >= 32 ? std::optional<T>(value(l)) : from(l + 3);
        e[8] = l < 5 ? std::optional<T>(value(l)) : from(int64_t(l) - 5);
        e[9] = from(kBroadcastLane);
        e[10] = prefix;
        // xor 1 then xor 8: lane l ends with lane (l^1)^8's value, passed on by lane l^8.
        e[11] = is_active(l ^ 8) ? from(l ^ 8 ^ 1) : std::nullopt;
        prefix += value(l);
      }
    }
  }
  (void)total;
  return ref;
}

template <class T>
void check(const char* define, const std::vector<uint32_t>& active, uint32_t seed) {
  auto module = compile_kernel("simd_collectives.metal", {define});
  const uint32_t n = kGroups * kThreads;
  std::mt19937 rng(seed);
  std::vector<T> in(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_int_distribution<int> dist(-40, 40);  // quarters: every sum exact
    for (T& x : in) x = T(dist(rng)) / 4;
  } else {
    std::uniform_int_distribution<int> dist(-1000, 1000);
    for (T& x : in) x = T(dist(rng));
  }
  const T sentinel = T(-12345);
  std::vector<T> out(n * kSlots, sentinel);
  std::vector<uint32_t> act = active;
  uint16_t broadcast_lane = kBroadcastLane;
  auto result = run(*module, "simd_ops", {kGroups, 1, 1}, {kThreads, 1, 1},
                    {bind(0, in), bind(1, out), bind(2, act), bind_scalar(3, broadcast_lane)});
  EXPECT_TRUE(IsClean(result));

  Reference<T> ref = reference(in, active);
  int checked = 0;
  for (uint32_t gid = 0; gid < n; ++gid) {
    for (uint32_t s = 0; s < kSlots; ++s) {
      const T got = out[gid * kSlots + s];
      if (!active[gid]) {
        EXPECT_EQ(got, sentinel) << "thread " << gid << " returned early but wrote " << kSlotNames[s];
        continue;
      }
      const auto& want = ref.expected[gid * kSlots + s];
      if (!want) continue;
      ++checked;
      EXPECT_EQ(got, *want) << kSlotNames[s] << ", thread " << gid << " (threadgroup " << gid / kThreads
                            << ", lane " << (gid % kThreads) % 32 << ")";
    }
  }
  EXPECT_GT(checked, int(n * kSlots / 3)) << "too few defined results to be a meaningful check";
}

std::vector<uint32_t> all_active() { return std::vector<uint32_t>(kGroups * kThreads, 1); }

// Every third lane returns early; in threadgroup 1 the first simdgroup also
// loses lanes 20..31. Lane 2 (the broadcast source) stays active.
std::vector<uint32_t> some_return_early() {
  std::vector<uint32_t> active(kGroups * kThreads);
  for (uint32_t gid = 0; gid < active.size(); ++gid) {
    const uint32_t group = gid / kThreads, local = gid % kThreads, lane = local % 32, simd = local / 32;
    active[gid] = !(lane % 3 == 1 || (group == 1 && simd == 0 && lane >= 20));
  }
  return active;
}

TEST(SimdCollectives, FloatAllLanesActive) { check<float>("ELEM=float", all_active(), 1); }
TEST(SimdCollectives, IntAllLanesActive) { check<int32_t>("ELEM=int", all_active(), 2); }
TEST(SimdCollectives, FloatWithLanesReturningEarly) { check<float>("ELEM=float", some_return_early(), 3); }
TEST(SimdCollectives, IntWithLanesReturningEarly) { check<int32_t>("ELEM=int", some_return_early(), 4); }

TEST(SimdCollectives, RowMaxOfSimdgroupMatrixTileWithXor1And8) {
  auto module = compile_kernel("simd_collectives.metal");
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-10, 10);
  std::vector<float> tile(64), row_max(32, NAN);
  for (float& x : tile) x = dist(rng);
  auto result = run(*module, "tile_row_max", {1, 1, 1}, {32, 1, 1}, {bind(0, tile), bind(1, row_max)});
  EXPECT_TRUE(IsClean(result));
  for (uint32_t lane = 0; lane < 32; ++lane) {
    const uint32_t row = 4 * (lane / 16) + (lane / 2) % 4;
    float want = tile[8 * row];
    for (int c = 1; c < 8; ++c) want = std::max(want, tile[8 * row + c]);
    EXPECT_EQ(row_max[lane], want) << "lane " << lane << " (row " << row << ")";
  }
}

// Lanes in divergent branches reach different collectives; each collective
// covers only the lanes of its branch, as on the GPU.
TEST(SimdCollectives, CollectivesInDivergentBranchesCoverTheBranchLanes) {
  auto module = compile_kernel("simd_collectives.metal");
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = float(i);
  auto result = run(*module, "divergent_sums", {1, 1, 1}, {32, 1, 1}, {bind(0, x)});
  EXPECT_TRUE(IsClean(result));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(x[i], 120.0f) << "lane " << i << ": 0 + 1 + ... + 15";
  for (int i = 16; i < 32; ++i) EXPECT_EQ(x[i], 752.0f) << "lane " << i << ": 2 * (16 + ... + 31)";
}

}  // namespace
}  // namespace mfagen::cputest
