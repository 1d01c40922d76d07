// Saved profiles read back (`mfagen profile --from`): the counted work of a
// profile's JSON is what was written, so predicting it again gives the same
// predictions; malformed files are errors naming the file and JSON path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "profile/chip.h"
#include "profile/chip_selection.h"
#include "profile/profile_json.h"
#include "profile/work_json.h"

namespace mfagen::profile {
namespace {

using ::testing::HasSubstr;

KernelWork sample_work() {
  KernelWork w;
  w.name = "k";
  w.origin = "spec.json";
  w.shape = "B 1";
  w.useful_flops = 1.5e9;
  for (int i = 0; i < 2; ++i) {
    LaunchWork l;
    l.kernel = i ? "k_combine" : "k";
    l.grid[0] = 40, l.grid[1] = 2 + i;
    l.threads_per_threadgroup = 128;
    l.simdgroups_per_threadgroup = 4;
    l.threadgroup_memory_bytes = 8192;
    l.registers_per_thread = 90;
    l.threadgroups = 80 + 40 * i;
    l.threadgroups_run = 2;
    l.sampling = "2 of them";
    l.ops[static_cast<uint32_t>(Op::mma_f16_f32)] = 1e6 + i;
    l.ops[static_cast<uint32_t>(Op::exp2)] = 2.5e4;
    l.device_bytes_read = 1 << 20, l.device_bytes_written = 1 << 12, l.device_bytes_unique = 1 << 19;
    l.threadgroup_bytes_read = 1 << 22, l.threadgroup_bytes_written = 1 << 21;
    l.buffers.push_back({0, 4096, 1 << 20, 0});
    for (int c = 0; c < 2; ++c) {
      ThreadgroupClass k;
      k.threadgroups = l.threadgroups / 2;
      k.ops[static_cast<uint32_t>(Op::mma_f16_f32)] = 1e4 * (c + 1);
      k.max_simdgroup_ops[static_cast<uint32_t>(Op::mma_f16_f32)] = 3e3 * (c + 1);
      k.device_bytes = 100, k.threadgroup_bytes = 200;
      l.classes.push_back(k);
    }
    w.launches.push_back(l);
  }
  return w;
}

TEST(WorkJson, RoundTripGivesTheSamePredictions) {
  const std::vector<Chip> all = chips();
  const ProfiledKernel original = predict_on(sample_work(), all);
  const std::string text = to_json({original}).dump();
  const std::vector<KernelWork> back = work_from_json(text, "saved.json");
  ASSERT_EQ(back.size(), 1u);
  const ProfiledKernel again = predict_on(back[0], all);
  EXPECT_EQ(to_json({again}).dump(), text);
}

TEST(WorkJson, MalformedFilesNameTheFileAndPath) {
  nlohmann::json doc = to_json({predict_on(sample_work(), {find_chip("M1")})});
  doc["kernels"][0]["launches"][1]["ops"]["not_an_op"] = 3;
  try {
    work_from_json(doc.dump(), "saved.json");
    FAIL() << "accepted an unknown op";
  } catch (const WorkJsonError& e) {
    EXPECT_THAT(e.what(), HasSubstr("saved.json: .kernels[0].launches[1].ops.not_an_op: unknown op"));
  }
  doc = to_json({predict_on(sample_work(), {find_chip("M1")})});
  doc["kernels"][0]["launches"][0].erase("threadgroups");
  EXPECT_THROW(work_from_json(doc.dump(), "saved.json"), WorkJsonError);
  EXPECT_THROW(work_from_json("{not json", "saved.json"), WorkJsonError);
  EXPECT_THROW(work_from_json("{\"kernels\": 3}", "saved.json"), WorkJsonError);
}

}  // namespace
}  // namespace mfagen::profile
