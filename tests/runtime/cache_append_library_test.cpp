// cache_append kernels in a loaded Library (DESIGN.md section 8): the
// manifest's kind, buffers and params are checked against this runtime's
// planner; they are never selected for an attention call, even beside an
// attention kernel of the same dims; launch_plan refuses them and
// plan_cache_append plans them.
#include <gtest/gtest.h>

#include "generated_manifest.h"
#include "mfagen/cache_append_dispatch.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

const Library& append_library() {
  static const Library l = Library::load_from_memory(test::manifest_for(R"({"kernels": [
    {"kind": "cache_append", "dtype": "float16", "head_dim": 64, "kv_cache": ["paged", "dense"],
     "layout": ["varlen", "dense"], "kv_dtype": ["float16", "q8_0", "q4_0", "fp8_e4m3"]},
    {"dtype": "float16", "head_dim": 64, "kv_cache": "paged"}]})"));
  return l;
}

TEST(CacheAppendLibrary, LoadsPlansAndIsNeverSelectedForAttention) {
  const Library& l = append_library();
  ASSERT_EQ(l.kernels().size(), 17u);
  size_t appends = 0;
  for (const KernelEntry& k : l.kernels()) {
    if (k.kind != KernelKind::cache_append) continue;
    ++appends;
    EXPECT_TRUE(k.info.cache_append) << k.name;
    EXPECT_EQ(k.entries, std::vector<std::string>{k.name});
    CacheAppendCall call{.batch = 2, .heads_kv = 2, .new_rows = 3};
    if (k.info.varlen) call.total_new = 4;
    if (k.info.paged) call.page_size = 16, call.num_pages = 4, call.max_pages = 2;
    else call.cache_rows = 32;
    contiguous_append_strides(k.info, call);
    const DispatchPlan plan = plan_cache_append(k.info, call);
    EXPECT_EQ(plan.params.size(), k.params_bytes) << k.name;
    EXPECT_EQ(plan.launches.at(0).threadgroups, (std::array<uint32_t, 3>{4, 3, 4})) << k.name;
    ForwardCall attention;
    EXPECT_THROW(Library::launch_plan(k, attention), DispatchError) << k.name;
  }
  EXPECT_EQ(appends, 16u);
  // An attention call with the dims and layout of the cache writes gets the attention kernel.
  AttentionQuery q;
  q.head_dim = q.head_dim_v = 64;
  q.paged = true;
  q.shape = {1, 4, 2, 8, 64};
  const KernelEntry* k = l.find(q);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->kind, KernelKind::forward);
  q.varlen = true;  // only a cache write has these facts: no kernel, never a cache write
  EXPECT_EQ(l.find(q), nullptr);
  EXPECT_EQ(std::string(to_string(KernelKind::cache_append)), "cache_append");
}

}  // namespace
}  // namespace mfagen
