// The structured option values of the CLI and their error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "arg_parsing.h"

namespace mfagen::cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string error_of(auto&& parse) {
  try {
    parse();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ParseDim3, FillsMissingDimensionsWithOne) {
  EXPECT_THAT(parse_dim3("4", "--threadgroups"), ElementsAre(4u, 1u, 1u));
  EXPECT_THAT(parse_dim3("4,2", "--threadgroups"), ElementsAre(4u, 2u, 1u));
  EXPECT_THAT(parse_dim3("4,2,3", "--threadgroups"), ElementsAre(4u, 2u, 3u));
  EXPECT_THAT(parse_dim3("4294967295", "--threadgroups"), ElementsAre(4294967295u, 1u, 1u));
}

TEST(ParseDim3, RejectsZeroAndMalformed) {
  EXPECT_THAT(error_of([] { parse_dim3("4,0", "--threadgroups"); }),
              AllOf(HasSubstr("--threadgroups"), HasSubstr("dimension y is 0")));
  EXPECT_THAT(error_of([] { parse_dim3("0", "--threads-per-threadgroup"); }), HasSubstr("dimension x is 0"));
  EXPECT_THAT(error_of([] { parse_dim3("1,2,3,4", "--threadgroups"); }), HasSubstr("at most 3"));
  EXPECT_THAT(error_of([] { parse_dim3("", "--threadgroups"); }), HasSubstr("X[,Y[,Z]]"));
  EXPECT_THAT(error_of([] { parse_dim3("4,", "--threadgroups"); }), HasSubstr("X[,Y[,Z]]"));
  EXPECT_THAT(error_of([] { parse_dim3("4x4", "--threadgroups"); }), HasSubstr("not a non-negative integer"));
  EXPECT_THAT(error_of([] { parse_dim3("-1", "--threadgroups"); }), HasSubstr("not a non-negative integer"));
  EXPECT_THAT(error_of([] { parse_dim3("4294967296", "--threadgroups"); }), HasSubstr("too large"));
}

TEST(ParseIndexed, SplitsAtTheFirstEquals) {
  IndexedValue v = parse_indexed("2=dir/a=b.npy", "--buffer");
  EXPECT_EQ(v.index, 2u);
  EXPECT_EQ(v.value, "dir/a=b.npy");
  EXPECT_THAT(error_of([] { parse_indexed("a.npy", "--buffer"); }), HasSubstr("expected INDEX=VALUE"));
  EXPECT_THAT(error_of([] { parse_indexed("=a.npy", "--buffer"); }), HasSubstr("expected INDEX=VALUE"));
  EXPECT_THAT(error_of([] { parse_indexed("1=", "--buffer"); }), HasSubstr("expected INDEX=VALUE"));
  EXPECT_THAT(error_of([] { parse_indexed("x=a.npy", "--buffer"); }), HasSubstr("'x' is not"));
}

TEST(ParseTyped, SplitsAtTheLastColon) {
  TypedValue t = parse_typed("-1.5:float", "--constant");
  EXPECT_EQ(t.value, "-1.5");
  EXPECT_EQ(t.type, "float");
  EXPECT_THAT(error_of([] { parse_typed("1.5", "--constant"); }), HasSubstr("VALUE:TYPE"));
  EXPECT_THAT(error_of([] { parse_typed("1.5:", "--constant"); }), HasSubstr("VALUE:TYPE"));
}

TEST(ParseUnsigned, Limits) {
  EXPECT_EQ(parse_unsigned("1024", "--threadgroup-bytes"), 1024u);
  EXPECT_THAT(error_of([] { parse_unsigned("17", "--x", 16); }), HasSubstr("at most 16"));
  EXPECT_THAT(error_of([] { parse_unsigned(" 1", "--x"); }), HasSubstr("not a non-negative integer"));
}

}  // namespace
}  // namespace mfagen::cli
