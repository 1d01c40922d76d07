// Library::launch_plan (fixed storage, no heap) against plan_forward (the
// dispatch module's plan): the same launches, buffers and params bytes for
// every kernel kind and feature over many shapes and strides, and the same
// DispatchError for calls a kernel cannot run.
#include <gtest/gtest.h>

#include <map>

#include <functional>
#include <random>

#include "generated_manifest.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

const Library& launch_library() {
  static const Library l = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"dtype": ["float16", "float32"], "head_dim": [64, 80], "causal": ["none", "bottom_right"], "gqa": [true, false]},
    {"dtype": "bfloat16", "head_dim": 96, "head_dim_v": 64, "lse": false},
    {"dtype": "float16", "head_dim": 64, "mask": ["bool", "additive"], "window": true, "softcap": true, "alibi": true},
    {"kind": "decode", "dtype": ["float16", "float32"], "head_dim": [64, 128], "lse": [true, false]},
    {"kind": "decode", "dtype": "float16", "head_dim": 64, "mask": "additive", "window": true, "alibi": true},
    {"kind": "backward", "dtype": ["float16", "float32"], "head_dim": 64, "softcap": [false, true]},
    {"kind": "backward", "dtype": "float16", "head_dim": 64, "mask": "bool", "alibi": true, "window": true},
    {"kind": ["forward", "decode", "backward"], "dtype": "float16", "head_dim": 64, "sinks": true},
    {"kind": ["forward", "backward"], "dtype": "bfloat16", "head_dim": 64, "layout": "varlen", "sinks": [false, true],
     "causal": "bottom_right"},
    {"kind": ["forward", "decode"], "dtype": "float16", "head_dim": 128, "kv_cache": "paged", "window": true},
    {"dtype": "float16", "head_dim": 64, "layout": "varlen", "kv_cache": "paged", "kv_dtype": ["float16", "q8_0"],
     "causal": "bottom_right", "sinks": true},
    {"kind": ["forward", "decode"], "dtype": "float16", "head_dim": 64, "kv_cache": ["dense", "paged"],
     "kv_dtype": ["q8_0", "q4_0", "fp8_e4m3"]},
    {"kind": "decode", "dtype": "float16", "head_dim": 64, "kv_cache": ["dense", "paged"],
     "score_mod": "score * s", "mask_mod": "kv_idx % 3 != 1", "scalars": ["s"]},
    {"kind": ["forward", "backward"], "dtype": "float16", "head_dim": 64, "causal": "bottom_right",
     "score_mod": "score + rel[q_idx - kv_idx + Sk - 1] * s + t[b, h, q_idx % 3]", "mask_mod": "doc[b, kv_idx] >= 0",
     "captures": {"rel": {"dtype": "float32", "shape": ["Sq + Sk - 1"]}, "doc": {"dtype": "int32", "shape": ["B", "Sk"]},
                  "t": {"dtype": "float32", "shape": ["B", "Hq", 3]}},
     "scalars": ["s"]}]})"));
  return l;
}

bool same(const LaunchPlan& fast, const DispatchPlan& slow, std::string& why) {
  const DispatchPlan converted = fast.to_dispatch_plan();
  if (converted.params != slow.params) return why = "params bytes differ", false;
  if (fast.shape != slow.shape || converted.shape != slow.shape) return why = "shape differs", false;
  if (converted.buffers.size() != slow.buffers.size()) return why = "buffer count differs", false;
  for (size_t i = 0; i < slow.buffers.size(); ++i) {
    const BufferRequirement &a = converted.buffers[i], &b = slow.buffers[i];
    if (a.index != b.index || a.name != b.name || a.bytes != b.bytes || a.written != b.written || a.scratch != b.scratch)
      return why = "buffer " + b.name + " differs", false;
  }
  if (converted.launches.size() != slow.launches.size()) return why = "launch count differs", false;
  for (size_t i = 0; i < slow.launches.size(); ++i) {
    const KernelLaunch &a = converted.launches[i], &b = slow.launches[i];
    if (a.entry != b.entry || a.threadgroups != b.threadgroups || a.threads_per_threadgroup != b.threads_per_threadgroup ||
        a.threadgroup_bytes != b.threadgroup_bytes || a.buffers != b.buffers)
      return why = "launch " + b.entry + " differs", false;
  }
  return true;
}

// A random call for `kernel`: random shape (often at tile edges), BHSD or
// BSHD or padded strides, and random values for the kernel's features.
ForwardCall random_call(const KernelEntry& kernel, std::mt19937_64& rng) {
  auto pick = [&](std::initializer_list<uint64_t> values) { return *(values.begin() + rng() % values.size()); };
  ForwardCall c;
  const uint64_t hkv = pick({1, 2, 3, 8});
  const uint64_t group = kernel.info.gqa ? pick({1, 2, 4, 7}) : 1;
  c.shape = {pick({1, 2, 5}), hkv * group, hkv, kernel.kind == KernelKind::decode ? 1 + rng() % 16 : pick({1, 7, 31, 32, 33, 100, 257}),
             pick({1, 15, 32, 33, 255, 256, 1000, 5000})};
  const uint32_t d = kernel.info.head_dim, dv = kernel.info.head_dim_v;
  const KvFormat kv = kernel.info.kv_format;  // k and v strides count its storage units
  const uint64_t dk_units = kv_row_units(kv, d), dv_units = kv_row_units(kv, dv);
  c.strides = contiguous_bhsd(c.shape, d, dv, kv);
  const AttentionShape& s = c.shape;
  switch (rng() % 3) {
    case 1:  // BSHD
      c.strides.q = {s.seq_q * s.heads_q * d, d, s.heads_q * d};
      c.strides.k = {s.seq_k * s.heads_kv * dk_units, dk_units, s.heads_kv * dk_units};
      c.strides.v = {s.seq_k * s.heads_kv * dv_units, dv_units, s.heads_kv * dv_units};
      c.strides.out = {s.seq_q * s.heads_q * dv, dv, s.heads_q * dv};
      break;
    case 2:  // padded rows
      c.strides.q.row += 8, c.strides.q.head = c.strides.q.row * s.seq_q, c.strides.q.batch = c.strides.q.head * s.heads_q;
      break;
    default: break;
  }
  c.scale = rng() % 2 ? 0.0 : 0.25;
  if (kernel.info.softcap) c.softcap = 30;
  if (kernel.info.window) c.window_left = int64_t(rng() % 100) - 1, c.window_right = int64_t(rng() % 10) - 1;
  if (kernel.info.mask != MaskInput::none)
    c.mask_strides = broadcast_strides({rng() % 2 ? s.batch : 1, rng() % 2 ? s.heads_q : 1, s.seq_q, s.seq_k});
  if (kernel.info.alibi) c.alibi_per_batch = rng() % 2;
  if (kernel.kind == KernelKind::decode && rng() % 3 == 0) c.splits = uint32_t(1 + rng() % std::min<uint64_t>(s.seq_k, 40));
  if (kernel.info.varlen) {  // packed: batch sequences of at most seq_q / seq_k rows
    c.total_q = s.batch * s.seq_q - rng() % s.seq_q;
    c.total_k = s.batch * s.seq_k - rng() % s.seq_k;
    c.strides = packed_varlen(s, c.total_q, d, dv, kv);
  }
  if (kernel.info.paged) {  // pages of 16 or 256 keys, enough block table entries for seq_k
    c.page_size = pick({16, 256});
    c.max_pages = (s.seq_k + c.page_size - 1) / c.page_size + rng() % 3;
    c.num_pages = c.max_pages * s.batch + rng() % 5;
    c.strides = paged_kv(s, c.page_size, d, dv, kv);
    if (kernel.info.varlen) {  // packed queries on the cache: no packed keys
      c.total_k = 0;
      c.strides = packed_paged(s, c.total_q, c.page_size, d, dv, kv);
    }
  }
  if (kv == KvFormat::fp8_e4m3) c.k_scale = 0.5 + double(rng() % 100), c.v_scale = 1.0 / double(1 + rng() % 7);
  return c;
}

TEST(LaunchPlan, EqualsPlanForwardForEveryKernelAndManyShapes) {
  std::mt19937_64 rng(7);
  size_t checked = 0;
  for (const KernelEntry& kernel : launch_library().kernels())
    for (int i = 0; i < 200; ++i) {
      const ForwardCall call = random_call(kernel, rng);
      std::string why;
      ASSERT_TRUE(same(Library::launch_plan(kernel, call), Library::plan(kernel, call), why))
          << kernel.name << ": " << why << " for shape " << call.shape.batch << "x" << call.shape.heads_q << "/"
          << call.shape.heads_kv << " " << call.shape.seq_q << "x" << call.shape.seq_k;
      ++checked;
    }
  EXPECT_GT(checked, 5000u);
}

// Planned batches (Library::plan_batch): the allocation-free plan equals
// plan_forward's, the work items cover every (sequence, query block) and
// every key of it exactly once, and a few threadgroups split long ranges.
TEST(LaunchPlan, PlannedBatchesEqualPlanForwardAndCoverEveryBlockOnce) {
  std::mt19937_64 rng(11);
  size_t planned = 0, split = 0;
  for (const KernelEntry& kernel : launch_library().kernels()) {
    if (!kernel.info.planned_batches) continue;
    for (int i = 0; i < 50; ++i) {
      ForwardCall call = random_call(kernel, rng);
      std::vector<int32_t> cu = {0}, lengths;
      for (uint64_t b = 0; b < call.shape.batch; ++b) {
        cu.push_back(cu.back() + int32_t(b == 0 ? 1 + rng() % call.shape.seq_q : rng() % (call.shape.seq_q + 1)));
        lengths.push_back(int32_t(rng() % (call.shape.seq_k + 1)));
      }
      call.total_q = uint64_t(cu.back());  // sequence 0 has a query: at least one packed row
      call.strides = packed_paged(call.shape, call.total_q, call.page_size, kernel.info.head_dim,
                                  kernel.info.head_dim_v, kernel.info.kv_format);
      BatchPlan plan;
      Library::plan_batch(kernel, call, cu, lengths, plan, uint32_t(8 + rng() % 64));
      call.batch_plan = &plan;
      std::string why;
      ASSERT_TRUE(same(Library::launch_plan(kernel, call), Library::plan(kernel, call), why)) << kernel.name << ": " << why;
      // Every (sequence, query block) once per key, in split order.
      std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> ranges;
      for (const BatchWork& w : plan.work)
        if (w.q_block * int64_t(kernel.info.block_q) < int64_t(cu[w.batch + 1] - cu[w.batch]))
          ranges[{w.batch, w.q_block}].push_back({w.key_begin, w.key_end});
      uint64_t blocks = 0;
      for (uint64_t b = 0; b < call.shape.batch; ++b)
        blocks += (uint64_t(cu[b + 1] - cu[b]) + kernel.info.block_q - 1) / kernel.info.block_q;
      EXPECT_EQ(ranges.size(), blocks);
      for (auto& [block, keys] : ranges) {
        std::sort(keys.begin(), keys.end());
        for (size_t k = 1; k < keys.size(); ++k) EXPECT_EQ(keys[k].first, keys[k - 1].second) << "gap or overlap";
      }
      ++planned;
      split += plan.merge_count > 0;
    }
  }
  EXPECT_GT(planned, 0u);
  EXPECT_GT(split, 0u) << "no plan split a block";
}

// A decode in a planned batch (its queries times the GQA group fit one query
// block) takes the group's (q head, query) pairs as its rows: its items have
// 1..group key slices (one per kv head's threadgroup column), prefill items
// none; each packed block's partial rows are written once per split index
// (split + slice over its items), 0 .. splits - 1, as its merge expects.
TEST(LaunchPlan, PlannedDecodesPackAGqaGroupAndSliceTheirKeys) {
  std::mt19937_64 rng(23);
  size_t packed = 0, sliced = 0;
  for (const KernelEntry& kernel : launch_library().kernels()) {
    if (!kernel.info.planned_batches || !kernel.info.gqa) continue;
    for (int i = 0; i < 60; ++i) {
      ForwardCall call = random_call(kernel, rng);
      const uint64_t group = call.shape.heads_q / call.shape.heads_kv;
      const uint64_t bq = kernel.info.block_q;
      std::vector<int32_t> cu = {0}, lengths;
      for (uint64_t b = 0; b < call.shape.batch; ++b) {
        // Decodes of 1 .. bq / group queries and prefills longer than that.
        const uint64_t decode_rows = std::max<uint64_t>(1, bq / group);
        const uint64_t sq = rng() % 2 ? 1 + rng() % std::min(decode_rows, call.shape.seq_q) : 1 + rng() % call.shape.seq_q;
        cu.push_back(cu.back() + int32_t(sq));
        lengths.push_back(int32_t(rng() % (call.shape.seq_k + 1)));
      }
      call.total_q = uint64_t(cu.back());
      call.strides = packed_paged(call.shape, call.total_q, call.page_size, kernel.info.head_dim,
                                  kernel.info.head_dim_v, kernel.info.kv_format);
      BatchPlan plan;
      Library::plan_batch(kernel, call, cu, lengths, plan, uint32_t(8 + rng() % 256));
      std::map<int32_t, std::vector<int>> written;  // merge partial -> times each split index is written
      for (const BatchWork& w : plan.work) {
        if (uint32_t(w.batch) >= call.shape.batch) continue;  // the empty batch's no-op item
        const uint64_t sq = uint64_t(cu[w.batch + 1] - cu[w.batch]);
        const bool decode = group > 1 && sq * group <= bq;
        if (!decode) {
          EXPECT_EQ(w.slices, 0) << kernel.name << ": a prefill item of " << sq << " queries packed";
        } else {
          EXPECT_GE(w.slices, 1) << kernel.name << ": a decode of " << sq << " queries, GQA " << group << " not packed";
          EXPECT_LE(uint64_t(w.slices), group);
          EXPECT_EQ(w.q_block, 0);
          packed += 1;
          sliced += w.slices > 1;
        }
        if (w.partial < 0) {
          EXPECT_LE(w.slices, 1) << "slices write partial rows: they need a merge";
          continue;
        }
        std::vector<int>& times = written[w.partial];
        times.resize(size_t(w.splits));
        for (int32_t s = 0; s < std::max(w.slices, 1); ++s) {
          ASSERT_LT(w.split + s, w.splits);
          ++times[size_t(w.split + s)];
        }
      }
      ASSERT_EQ(written.size(), plan.merge_count);
      for (uint32_t m = 0; m < plan.merge_count; ++m) {
        const std::vector<int>& times = written[plan.merges[m].partial];
        EXPECT_EQ(times.size(), size_t(plan.merges[m].splits));
        for (int t : times) EXPECT_EQ(t, 1) << "a partial row written " << t << " times";
      }
    }
  }
  EXPECT_GT(packed, 0u);
  EXPECT_GT(sliced, 0u) << "no decode sliced its keys";
}

// A plan whose decodes pack a GQA group's rows is tied to that group size: a
// call with other heads (a layer of another model, or MHA) is refused by
// both planners rather than run with the wrong rows.
TEST(LaunchPlan, APlanWithPackedDecodesRefusesOtherGroupSizes) {
  for (const KernelEntry& kernel : launch_library().kernels()) {
    if (!kernel.info.planned_batches || !kernel.info.gqa) continue;
    std::mt19937_64 rng(3);
    ForwardCall call = random_call(kernel, rng);
    call.shape.batch = 2;
    call.shape.heads_kv = 2;
    call.shape.heads_q = 8;  // GQA 4
    const std::vector<int32_t> cu = {0, 1, 2}, lengths = {int32_t(call.shape.seq_k), 1};
    call.total_q = 2;
    call.strides = packed_paged(call.shape, call.total_q, call.page_size, kernel.info.head_dim,
                                kernel.info.head_dim_v, kernel.info.kv_format);
    BatchPlan plan;
    Library::plan_batch(kernel, call, cu, lengths, plan);
    call.batch_plan = &plan;
    ASSERT_EQ(plan.gqa_group, 4u) << kernel.name;
    std::string why;
    EXPECT_TRUE(same(Library::launch_plan(kernel, call), Library::plan(kernel, call), why)) << why;
    call.shape.heads_kv = 8;  // MHA with the same plan
    call.strides = packed_paged(call.shape, call.total_q, call.page_size, kernel.info.head_dim,
                                kernel.info.head_dim_v, kernel.info.kv_format);
    for (int fast = 0; fast < 2; ++fast) {
      try {
        if (fast) Library::launch_plan(kernel, call);
        else Library::plan(kernel, call);
        ADD_FAILURE() << kernel.name << ": a plan for GQA 4 ran a call of 8 / 8 heads";
      } catch (const DispatchError& e) {
        EXPECT_NE(std::string(e.what()).find("heads_q / heads_kv = 4"), std::string::npos) << e.what();
      }
    }
    return;  // one kernel tells
  }
  FAIL() << "no planned GQA kernel in the library";
}

// A mask_mod kernel's block classes computed alone (only), reused (given) or
// per call (computed): the same plan both ways; only launches _blocks with
// just what it binds, given skips it and reads the caller's classes.
TEST(LaunchPlan, BlockClassesComputedAloneOrGivenEqualPlanForward) {
  std::mt19937_64 rng(5);
  size_t checked = 0;
  for (const KernelEntry& kernel : launch_library().kernels()) {
    if (!classifies_blocks(kernel.info)) continue;  // decode's mask_mod decides pair by pair: no classes
    for (BlockClasses mode : {BlockClasses::computed, BlockClasses::only, BlockClasses::given}) {
      ForwardCall call = random_call(kernel, rng);
      call.block_classes = mode;
      std::string why;
      const LaunchPlan fast = Library::launch_plan(kernel, call);
      ASSERT_TRUE(same(fast, Library::plan(kernel, call), why)) << kernel.name << ": " << why;
      const LaunchPlan::Buffer* classes = fast.buffer(kForwardBlockClasses);
      ASSERT_NE(classes, nullptr);
      EXPECT_EQ(classes->scratch, mode == BlockClasses::computed);
      EXPECT_EQ(classes->written, mode != BlockClasses::given);
      EXPECT_EQ(fast.launch_count, mode == BlockClasses::only ? 1u : kernel.entries.size() - (mode == BlockClasses::given));
      if (mode == BlockClasses::only) EXPECT_EQ(fast.buffer(kForwardQ), nullptr);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
  ForwardCall call;  // a kernel without mask_mod takes no block classes
  call.strides = contiguous_bhsd(call.shape, 64, 64);
  call.block_classes = BlockClasses::given;
  EXPECT_THROW(Library::launch_plan(launch_library().kernels().front(), call), DispatchError);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DispatchError& e) {
    return e.what();
  }
  return "no error";
}

TEST(LaunchPlan, RejectsWhatPlanForwardRejectsWithTheSameMessage) {
  const std::vector<KernelEntry>& kernels = launch_library().kernels();
  std::mt19937_64 rng(11);
  std::vector<std::function<void(const KernelEntry&, ForwardCall&)>> breakers = {
      [](const KernelEntry&, ForwardCall& c) { c.shape.seq_q = 0; },
      [](const KernelEntry&, ForwardCall& c) { c.shape.heads_q = 3, c.shape.heads_kv = 2; },
      [](const KernelEntry&, ForwardCall& c) { c.shape.seq_k = uint64_t(1) << 31; },
      [](const KernelEntry&, ForwardCall& c) { c.shape.batch = uint64_t(1) << 32; },
      [](const KernelEntry&, ForwardCall& c) { c.strides.k.head = uint64_t(1) << 62, c.shape.heads_kv = c.shape.heads_q = 4; },
      [](const KernelEntry&, ForwardCall& c) { c.softcap = -1; },
      [](const KernelEntry&, ForwardCall& c) { c.window_left = -2; },
      [](const KernelEntry&, ForwardCall& c) { c.mask_strides[0] = uint64_t(1) << 63; c.shape.batch = 3; },
      [](const KernelEntry&, ForwardCall& c) { c.alibi_per_batch = true; c.softcap = 0; c.window_left = -1; },
      [](const KernelEntry& k, ForwardCall& c) { c.splits = k.kind == KernelKind::decode ? uint32_t(c.shape.seq_k + 1) : 1; },
      [](const KernelEntry&, ForwardCall& c) { c.shape.seq_q = 17; },
      [](const KernelEntry&, ForwardCall& c) { c.scale = std::numeric_limits<double>::infinity(); },
      [](const KernelEntry& k, ForwardCall& c) { c.total_q = k.info.varlen ? 0 : 5; },
      [](const KernelEntry& k, ForwardCall& c) { c.max_pages = k.info.paged ? 0 : 3; },
      [](const KernelEntry& k, ForwardCall& c) { c.k_scale = k.info.kv_format == KvFormat::fp8_e4m3 ? 0.0 : 2.0; },
      [](const KernelEntry&, ForwardCall& c) { c.v_scale = std::numeric_limits<double>::quiet_NaN(); },
  };
  size_t rejected = 0;
  for (const KernelEntry& kernel : kernels)
    for (auto& breaker : breakers) {
      ForwardCall call = random_call(kernel, rng);
      breaker(kernel, call);
      const std::string slow = error_of([&] { Library::plan(kernel, call); });
      const std::string fast = error_of([&] { Library::launch_plan(kernel, call); });
      EXPECT_EQ(fast, slow) << kernel.name;
      rejected += slow != "no error";
    }
  EXPECT_GT(rejected, kernels.size() * 5);
}

TEST(LaunchPlan, EdgeShapesAndTheirLimits) {
  // Sq = Sk = 1, non-multiples of the tiles, the largest batch and lengths a
  // grid takes, and sizes just past 64 bits.
  const std::vector<AttentionShape> shapes = {{1, 1, 1, 1, 1},
                                              {3, 6, 2, 33, 1},
                                              {1, 4, 4, 1, 65537},
                                              {UINT32_MAX, 1, 1, 1, 1},
                                              {1, 2, 1, (uint64_t(1) << 31) - 1, (uint64_t(1) << 31) - 1},
                                              {1 << 20, 64, 8, 4096, 4096}};
  for (const KernelEntry& kernel : launch_library().kernels())
    for (const AttentionShape& shape : shapes) {
      ForwardCall call;
      call.shape = shape;
      if (kernel.kind == KernelKind::decode) call.shape.seq_q = std::min<uint64_t>(shape.seq_q, 16);
      if (!kernel.info.gqa) call.shape.heads_kv = call.shape.heads_q;
      call.strides = contiguous_bhsd(call.shape, kernel.info.head_dim, kernel.info.head_dim_v);
      if (kernel.info.softcap) call.softcap = 1;
      std::string why;
      const std::string slow = error_of([&] { Library::plan(kernel, call); });
      const std::string fast = error_of([&] { Library::launch_plan(kernel, call); });
      ASSERT_EQ(fast, slow) << kernel.name;
      if (slow == "no error") {
        EXPECT_TRUE(same(Library::launch_plan(kernel, call), Library::plan(kernel, call), why)) << kernel.name << why;
      }
    }
  const KernelEntry& fwd = launch_library().kernels()[0];
  ForwardCall call;
  call.shape = {UINT32_MAX, 1, 1, 1, 1};
  call.strides = contiguous_bhsd(call.shape, fwd.info.head_dim, fwd.info.head_dim_v);
  const LaunchPlan p = Library::launch_plan(fwd, call);
  EXPECT_EQ(p.launches()[0].threadgroups, (std::array<uint32_t, 3>{1, 1, UINT32_MAX}));
  EXPECT_EQ(p.buffer(kForwardQ)->bytes, uint64_t(UINT32_MAX) * fwd.info.head_dim * fwd.info.element_bytes);
  call.strides.q.batch = UINT64_MAX / 2;  // (batch - 1) * stride overflows 64 bits: an error, not a wrap
  EXPECT_EQ(error_of([&] { Library::launch_plan(fwd, call); }), "q: size overflows 64 bits");
}

TEST(LaunchPlan, FitsEveryKernelOfTheLibrary) {
  for (const KernelEntry& kernel : launch_library().kernels()) {
    ForwardCall call;
    call.strides = contiguous_bhsd(call.shape, kernel.info.head_dim, kernel.info.head_dim_v);
    if (kernel.info.softcap) call.softcap = 1;
    if (kernel.info.varlen) call.total_q = 1, call.total_k = kernel.info.paged ? 0 : 1;
    if (kernel.info.paged) call.page_size = call.num_pages = call.max_pages = 1;
    const LaunchPlan p = Library::launch_plan(kernel, call);
    EXPECT_EQ(p.params_size, kernel.params_bytes) << kernel.name;
    EXPECT_EQ(p.launch_count, kernel.entries.size()) << kernel.name;
    EXPECT_EQ(p.launches().front().entry.data(), kernel.entries.front().data());  // a view into the library
  }
  KernelEntry hand_made = launch_library().kernels()[0];
  hand_made.entries.clear();  // not from a manifest: an error, not an out-of-bounds read
  ForwardCall call;
  call.strides = contiguous_bhsd(call.shape, hand_made.info.head_dim, hand_made.info.head_dim_v);
  EXPECT_THROW(Library::launch_plan(hand_made, call), DispatchError);
}

}  // namespace
}  // namespace mfagen
