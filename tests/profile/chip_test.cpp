// The embedded chip tables (generator/profile/chips/*.json) and their loader.
#include "profile/chip.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>

namespace mfagen::profile {
namespace {

using ::testing::HasSubstr;

TEST(ChipTables, EveryChipInOrderWithDistinctNames) {
  const std::vector<std::string> expected = {"M1",       "M1 Max",           "M1 Ultra", "M2 Max", "M2 Ultra",
                                             "M3 Max",   "M3 Max 30-core",   "M3 Ultra", "M3 Ultra 60-core",
                                             "M4",       "M4 Max",           "M5",       "M5 Max", "M5 Max 32-core"};
  ASSERT_EQ(chips().size(), expected.size());
  std::set<std::string> names;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(chips()[i].name, expected[i]);
    names.insert(chips()[i].name);
  }
  EXPECT_EQ(names.size(), expected.size());
}

TEST(ChipTables, FamiliesMatchTheGenerations) {
  EXPECT_EQ(find_chip("M1").family, "apple7");
  EXPECT_EQ(find_chip("M1 Max").family, "apple7");
  EXPECT_EQ(find_chip("M2 Max").family, "apple8");
  EXPECT_EQ(find_chip("M3 Max").family, "apple9");
  EXPECT_EQ(find_chip("M4").family, "apple9");
  EXPECT_EQ(find_chip("M4 Max").family, "apple9");
  EXPECT_EQ(find_chip("M5").family, "apple10");
}

// Every field a table has is positive (flags and free costs: not negative) and cited; the optional (tensor_*)
// fields of a chip without Neural Accelerators are 0 and absent.
TEST(ChipTables, EveryFieldPositiveAndCited) {
  for (const Chip& c : chips()) {
    SCOPED_TRACE(c.name);
    size_t present = 0;
    for (const ChipField& f : chip_fields()) {
      SCOPED_TRACE(std::string(f.name));
      if (f.optional && !c.has_neural_accelerators()) {
        EXPECT_EQ(c.*(f.member), 0);
        EXPECT_EQ(c.citations.count(f.name), 0u);
        continue;
      }
      ++present;
      if (f.zero_allowed)
        EXPECT_GE(c.*(f.member), 0);
      else
        EXPECT_GT(c.*(f.member), 0);
      EXPECT_FALSE(c.citation(f.name).source.empty());
    }
    EXPECT_EQ(c.citations.size(), present);
  }
}

// Only the Apple10 GPUs (M5) have per-core Neural Accelerators (Apple
// Newsroom, 2025-10-15). Their rates are measured on the A19, so the M5
// table marks them as assumptions, with sources.
TEST(ChipTables, NeuralAcceleratorsOnlyOnApple10) {
  size_t optional = 0;
  for (const ChipField& f : chip_fields()) {
    if (!f.optional) continue;
    ++optional;
    EXPECT_EQ(f.name.rfind("tensor_", 0), 0u) << f.name;
  }
  EXPECT_EQ(optional, 2u);
  for (const Chip& c : chips()) EXPECT_EQ(c.has_neural_accelerators(), c.family == "apple10") << c.name;
  const Chip& m5 = find_chip("M5");
  EXPECT_EQ(m5.tensor_flops_per_core_per_cycle_f16, 1024);  // 4x the 256 FP32 FLOPs of the shader ALUs
  EXPECT_EQ(m5.tensor_flops_per_core_per_cycle_i8, 2048);
  for (const char* field : {"tensor_flops_per_core_per_cycle_f16", "tensor_flops_per_core_per_cycle_i8"}) {
    SCOPED_TRACE(field);
    EXPECT_TRUE(m5.citation(field).assumption);
    EXPECT_THAT(m5.citation(field).source, HasSubstr("A19"));
    EXPECT_THAT(m5.citation(field).source, HasSubstr("https://"));
  }
}

// Assumptions must say so in their source text, so a reader of the table sees it.
TEST(ChipTables, AssumptionsExplainThemselves) {
  for (const Chip& c : chips()) {
    for (const auto& [field, cite] : c.citations) {
      if (cite.assumption) {
        EXPECT_THAT(cite.source, HasSubstr("assumption")) << c.name << " " << field;
      }
    }
  }
}

// Apple's published core counts and DRAM bandwidths, and the metal-benchmarks
// M1/M2 numbers the design starts from (DESIGN.md section 14).
TEST(ChipTables, PublishedFiguresAndMeasuredConstants) {
  EXPECT_EQ(find_chip("M1").gpu_cores, 8);
  EXPECT_EQ(find_chip("M1 Max").gpu_cores, 32);
  EXPECT_EQ(find_chip("M2 Max").gpu_cores, 38);
  EXPECT_EQ(find_chip("M3 Max").gpu_cores, 40);
  EXPECT_EQ(find_chip("M4").gpu_cores, 10);
  EXPECT_EQ(find_chip("M4 Max").gpu_cores, 40);
  EXPECT_EQ(find_chip("M5").gpu_cores, 10);
  EXPECT_DOUBLE_EQ(find_chip("M1").dram_bandwidth_gbs, 68.25);
  EXPECT_DOUBLE_EQ(find_chip("M4").dram_bandwidth_gbs, 120);
  EXPECT_DOUBLE_EQ(find_chip("M4 Max").dram_bandwidth_gbs, 546);
  EXPECT_DOUBLE_EQ(find_chip("M5").dram_bandwidth_gbs, 153);
  for (const char* name : {"M1", "M1 Max", "M2 Max"}) {
    const Chip& c = find_chip(name);
    SCOPED_TRACE(name);
    EXPECT_EQ(c.schedulers_per_core, 4);
    EXPECT_EQ(c.transcendental_cycles, 4);
    EXPECT_EQ(c.mma_cycles_f16, 17);
    EXPECT_EQ(c.mma_cycles_f32, 18);
    EXPECT_EQ(c.saturation_simdgroups_per_core, 24);
    EXPECT_EQ(c.max_threadgroup_memory_per_threadgroup, 32768);
    EXPECT_FALSE(c.citation("mma_cycles_f16").assumption);
  }
  // No per-instruction tables are public for M3 and later: those are assumptions.
  for (const char* name : {"M3 Max", "M4", "M4 Max", "M5"})
    EXPECT_TRUE(find_chip(name).citation("mma_cycles_f16").assumption) << name;
}

// The M1/M2 tables reproduce the FP32 rates metal-benchmarks lists (GOPS32).
TEST(ChipTables, ClockAndLanesReproducePublishedFp32Rate) {
  auto tflops = [](const Chip& c) { return c.gpu_cores * c.fp32_lanes_per_core_per_cycle * 2 * c.clock_ghz / 1000; };
  EXPECT_NEAR(tflops(find_chip("M1")), 2.617, 0.01);
  EXPECT_NEAR(tflops(find_chip("M1 Max")), 10.617, 0.01);
  EXPECT_NEAR(tflops(find_chip("M2 Max")), 13.6, 0.01);
}

TEST(FindChip, AcceptsSpellings) {
  for (const char* spelling : {"M3 Max", "m3 max", "M3 MAX", "m3_max", "m3-max", "M3-Max", "m3max"})
    EXPECT_EQ(find_chip(spelling).name, "M3 Max") << spelling;
  EXPECT_EQ(find_chip("m1").name, "M1");
  EXPECT_EQ(find_chip("m1_max").name, "M1 Max");
  EXPECT_EQ(find_chip("M4").name, "M4");
  EXPECT_EQ(find_chip("m4-max").name, "M4 Max");
  EXPECT_EQ(find_chip("m5").name, "M5");
}

TEST(FindChip, UnknownNameListsValidNames) {
  try {
    find_chip("M9 Ultra");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("M9 Ultra"));
    for (const Chip& c : chips()) EXPECT_THAT(msg, HasSubstr(c.name));
    EXPECT_THAT(msg, HasSubstr("m3_max"));
  }
}

std::string parse_error(const nlohmann::json& table) {
  try {
    parse_chip(table.dump(), "broken.json");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

// Rebuilds a full valid table from a parsed chip, so tests can break one thing at a time.
nlohmann::json table_of(const Chip& c) {
  nlohmann::json t = {{"name", c.name}, {"family", c.family}, {"notes", c.notes}};
  for (const ChipField& f : chip_fields()) {
    if (!c.citations.count(f.name)) continue;  // an optional field the chip does not have
    const Citation& cite = c.citation(f.name);
    t[std::string(f.name)] = {{"value", c.*(f.member)}, {"source", cite.source}, {"assumption", cite.assumption}};
  }
  return t;
}

TEST(ParseChip, RoundTripsAValidTable) {
  const Chip& m1 = find_chip("M1");
  const Chip again = parse_chip(table_of(m1).dump(), "again.json");
  EXPECT_EQ(again.name, "M1");
  EXPECT_EQ(again.file, "again.json");
  EXPECT_EQ(again.clock_ghz, m1.clock_ghz);
  EXPECT_EQ(again.citation("clock_ghz").source, m1.citation("clock_ghz").source);
}

TEST(ParseChip, RoundTripsNeuralAccelerators) {
  const Chip& m5 = find_chip("M5");
  const Chip again = parse_chip(table_of(m5).dump(), "again.json");
  EXPECT_TRUE(again.has_neural_accelerators());
  EXPECT_EQ(again.tensor_flops_per_core_per_cycle_f16, m5.tensor_flops_per_core_per_cycle_f16);
  EXPECT_EQ(again.tensor_flops_per_core_per_cycle_i8, m5.tensor_flops_per_core_per_cycle_i8);
  EXPECT_EQ(again.citations.size(), m5.citations.size());
  // Dropping the whole group makes a chip without accelerators.
  nlohmann::json t = table_of(m5);
  t.erase("tensor_flops_per_core_per_cycle_f16");
  t.erase("tensor_flops_per_core_per_cycle_i8");
  EXPECT_FALSE(parse_chip(t.dump(), "plain.json").has_neural_accelerators());
}

// The tensor_* fields come together: a table with some of them is an error
// that names the missing one.
TEST(ParseChip, PartialNeuralAcceleratorGroupIsRejected) {
  nlohmann::json t = table_of(find_chip("M5"));
  t.erase("tensor_flops_per_core_per_cycle_i8");
  std::string msg = parse_error(t);
  EXPECT_THAT(msg, HasSubstr("broken.json"));
  EXPECT_THAT(msg, HasSubstr("/tensor_flops_per_core_per_cycle_i8"));
  EXPECT_THAT(msg, HasSubstr("missing"));

  t = table_of(find_chip("M5"));
  t.erase("tensor_flops_per_core_per_cycle_f16");
  EXPECT_THAT(parse_error(t), HasSubstr("/tensor_flops_per_core_per_cycle_f16"));

  t = table_of(find_chip("M5"));
  t["tensor_flops_per_core_per_cycle_f16"]["value"] = 0;
  EXPECT_THAT(parse_error(t), HasSubstr("/tensor_flops_per_core_per_cycle_f16/value"));
  t = table_of(find_chip("M5"));
  t["tensor_flops_per_core_per_cycle_i8"].erase("source");
  EXPECT_THAT(parse_error(t), HasSubstr("/tensor_flops_per_core_per_cycle_i8/source"));
}

TEST(ParseChip, MissingFieldNamesFileAndPath) {
  nlohmann::json t = table_of(find_chip("M1"));
  t.erase("clock_ghz");
  const std::string msg = parse_error(t);
  EXPECT_THAT(msg, HasSubstr("broken.json"));
  EXPECT_THAT(msg, HasSubstr("/clock_ghz"));
  EXPECT_THAT(msg, HasSubstr("missing"));
}

TEST(ParseChip, NegativeValueNamesFileAndPath) {
  nlohmann::json t = table_of(find_chip("M1"));
  t["dram_bandwidth_gbs"]["value"] = -1;
  const std::string msg = parse_error(t);
  EXPECT_THAT(msg, HasSubstr("broken.json"));
  EXPECT_THAT(msg, HasSubstr("/dram_bandwidth_gbs/value"));
  EXPECT_THAT(msg, HasSubstr("> 0"));
}

TEST(ParseChip, ZeroValueIsRejected) {
  nlohmann::json t = table_of(find_chip("M1"));
  t["gpu_cores"]["value"] = 0;
  EXPECT_THAT(parse_error(t), HasSubstr("/gpu_cores/value"));
}

TEST(ParseChip, MissingOrEmptySourceNamesFileAndPath) {
  nlohmann::json t = table_of(find_chip("M1"));
  t["mma_cycles_f16"].erase("source");
  std::string msg = parse_error(t);
  EXPECT_THAT(msg, HasSubstr("broken.json"));
  EXPECT_THAT(msg, HasSubstr("/mma_cycles_f16/source"));

  t = table_of(find_chip("M1"));
  t["mma_cycles_f16"]["source"] = "";
  EXPECT_THAT(parse_error(t), HasSubstr("/mma_cycles_f16/source"));
}

TEST(ParseChip, WrongTypesAreReported) {
  nlohmann::json t = table_of(find_chip("M1"));
  t["clock_ghz"]["value"] = "fast";
  EXPECT_THAT(parse_error(t), HasSubstr("/clock_ghz/value: expected a number"));

  t = table_of(find_chip("M1"));
  t["clock_ghz"] = 1.2;  // a bare number, no source
  EXPECT_THAT(parse_error(t), HasSubstr("/clock_ghz: expected {"));

  t = table_of(find_chip("M1"));
  t["clock_ghz"]["assumption"] = "no";
  EXPECT_THAT(parse_error(t), HasSubstr("/clock_ghz/assumption"));

  t = table_of(find_chip("M1"));
  t.erase("name");
  EXPECT_THAT(parse_error(t), HasSubstr("/name"));
}

TEST(ParseChip, UnknownFieldAndBadJsonAreReported) {
  nlohmann::json t = table_of(find_chip("M1"));
  t["clok_ghz"] = t["clock_ghz"];
  EXPECT_THAT(parse_error(t), HasSubstr("/clok_ghz"));
  try {
    parse_chip("{not json", "garbled.json");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("garbled.json"));
  }
}

}  // namespace
}  // namespace mfagen::profile
