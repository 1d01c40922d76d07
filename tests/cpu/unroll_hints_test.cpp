// drop_unroll_hints: the cpu backend's builds to run drop loop-unrolling
// pragmas (hints, unroll_hints.h) and nothing else, keeping line numbers.
#include "unroll_hints.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace mfagen::cpu {
namespace {

TEST(UnrollHints, EveryUnrollingPragmaSpellingIsBlanked) {
  std::string text =
      "#pragma unroll\n"
      "  #pragma unroll(4)\n"
      "# pragma nounroll\n"
      "#pragma clang loop unroll(full)\n"
      "#pragma clang loop unroll_count(8) vectorize(enable)\n"
      "#pragma GCC unroll 4\n";
  EXPECT_EQ(drop_unroll_hints(text), 6);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6) << "every line is kept, so findings keep their lines";
  EXPECT_EQ(text.find_first_not_of(" \n"), std::string::npos) << text;
}

TEST(UnrollHints, OtherPragmasAndCodeAreUntouched) {
  const std::string original =
      "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
      "#pragma once\n"
      "#pragma unrolled_helper\n"   // another word that starts with "unroll"
      "int unroll = 4; // #pragma unroll in a comment\n"
      "#pragma clang diagnostic ignored \"-Wall\"\n"
      "for (int i = 0; i < unroll; ++i) {}";
  std::string text = original;
  EXPECT_EQ(drop_unroll_hints(text), 0);
  EXPECT_EQ(text, original);
}

TEST(UnrollHints, OnlyTheHintLineOfAFileIsBlanked) {
  std::string text = "int a;\n#pragma unroll\nfor (int i = 0; i < 4; ++i) a += i;\n";
  EXPECT_EQ(drop_unroll_hints(text), 1);
  EXPECT_EQ(text, "int a;\n              \nfor (int i = 0; i < 4; ++i) a += i;\n");
}

}  // namespace
}  // namespace mfagen::cpu
