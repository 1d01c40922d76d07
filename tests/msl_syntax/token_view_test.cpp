// The token view: significant-token queries, bracket matching, attributes,
// rewrites, and the lowered text with its origin map.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "mfagen/msl/syntax_error.h"
#include "mfagen/msl/token_view.h"

using namespace mfagen::msl;
using ::testing::HasSubstr;

namespace {

// Index of the n-th significant token with this text.
size_t find(const TokenView& v, std::string_view text, int n = 0) {
  for (size_t k = 0; k < v.count(); ++k)
    if (v.is(k, text) && n-- == 0) return k;
  throw std::runtime_error("no such token");
}

TEST(TokenView, CountsSignificantTokensOnly) {
  TokenView v("#pragma once\nint /* a */ x = 1; // b\n");
  ASSERT_EQ(v.count(), 5u);
  EXPECT_EQ(v.text(0), "int");
  EXPECT_TRUE(v.is_identifier(1));
  EXPECT_TRUE(v.is_number(3));
  EXPECT_EQ(v.text(5), "") << "past the end";
  EXPECT_FALSE(v.is(size_t(-1), "int")) << "before the start";
  EXPECT_EQ(v.offset(1), std::string("#pragma once\nint /* a */ ").size());
}

TEST(TokenView, FindMatchingReturnsCountWhenUnbalanced) {
  TokenView v("f(a[1], {b}, c<d<e>>) ( [");
  EXPECT_EQ(v.find_matching(find(v, "(")), find(v, ")"));
  EXPECT_EQ(v.find_matching(find(v, "[")), find(v, "]"));
  EXPECT_EQ(v.find_matching(find(v, "{")), find(v, "}"));
  EXPECT_EQ(v.find_matching(find(v, "<")), find(v, ">", 1));
  EXPECT_EQ(v.find_matching(find(v, "(", 1)), v.count());
  EXPECT_EQ(v.find_matching(find(v, "[", 1)), v.count());
}

// A template argument list read as C++ reads it: a `<` after no name
// compares, a `>` inside parentheses does not close.
TEST(TokenView, AngleBracketsMatchAsTemplateArgumentLists) {
  TokenView v("template <typename T, enable_if_t<sizeof(T) < 8, bool> = true> f; A<(N > 2), B<C>> g;");
  EXPECT_EQ(v.find_matching(find(v, "<")), find(v, ">", 1));
  EXPECT_EQ(v.find_matching(find(v, "<", 1)), find(v, ">"));
  EXPECT_EQ(v.find_matching(find(v, "<", 3)), find(v, ">", 4));
  EXPECT_EQ(v.find_matching(find(v, "<", 4)), find(v, ">", 3));
  TokenView open("x = a < b; y = c;");
  EXPECT_EQ(open.find_matching(find(open, "<")), open.count()) << "a comparison closes at no `;`";
}

TEST(TokenView, MatchingThrowsForUnbalancedBrackets) {
  TokenView v("# 4 \"k.metal\"\nvoid f() {\n  g(;\n}\n");
  EXPECT_EQ(v.matching(find(v, "{")), find(v, "}"));
  try {
    v.matching(find(v, "(", 1));
    FAIL() << "no error";
  } catch (const SyntaxError& e) {
    EXPECT_STREQ(e.what(), "k.metal:5: error: unbalanced '('");
    EXPECT_EQ(e.token(), find(v, "(", 1));
    EXPECT_EQ(e.offset(), v.offset(find(v, "(", 1)));
  }
}

TEST(TokenView, FailNamesFileAndLine) {
  TokenView v("# 10 \"a.metal\"\nx\ny\n");
  try {
    v.fail(1, "no good");
    FAIL() << "no error";
  } catch (const SyntaxError& e) {
    EXPECT_STREQ(e.what(), "a.metal:11: error: no good");
  }
  EXPECT_EQ(v.file(0), "a.metal");
  EXPECT_EQ(v.line(0), 10);
}

TEST(TokenView, AttributesAreDoubleBracketListsClosedByDoubleBrackets) {
  TokenView v("float* a [[buffer(0)]], b[i[0]]; [[x]");
  EXPECT_TRUE(v.in_attribute(find(v, "buffer")));
  EXPECT_TRUE(v.in_attribute(find(v, "[")));
  EXPECT_TRUE(v.in_attribute(find(v, "]", 1)));
  EXPECT_FALSE(v.in_attribute(find(v, "i"))) << "b[i[0]] is a subscript";
  EXPECT_FALSE(v.in_attribute(find(v, "x"))) << "unclosed";
}

TEST(TokenView, OriginalTextSpansTokensAndWhatLiesBetween) {
  TokenView v("f(a /* c */ , b);");
  const size_t a = find(v, "a");
  v.replace(a, "z");
  EXPECT_EQ(v.original_text(a, find(v, "b") + 1), "a /* c */ , b") << "as written, before any rewrite";
  EXPECT_EQ(v.original_text(3, 3), "");
}

TEST(TokenView, ReplaceRecordsTheRewriteAndInsertBeforeAddsText) {
  TokenView v("int x;");
  v.replace(1, "y");
  v.replace(0, "int");
  v.insert_before(2, " = 0");
  EXPECT_TRUE(v.rewritten(0)) << "even by the same text";
  EXPECT_TRUE(v.rewritten(1));
  EXPECT_FALSE(v.rewritten(2));
  EXPECT_EQ(v.text(1), "y");
  EXPECT_EQ(v.text(2), ";") << "inserted text belongs to no token";
  EXPECT_EQ(v.joined(), "int y = 0;");
}

TEST(TokenView, JoinedWithoutRewritesIsTheInput) {
  const std::string input = "#define A 1\n/* c */ int x = A; // d\n";
  TokenView v(input);
  EXPECT_EQ(v.joined(), input);
  TextWithOrigin out = v.joined_with_origin();
  EXPECT_EQ(out.text, input);
  ASSERT_EQ(out.origin.size(), input.size() + 1);
  for (size_t i = 0; i <= input.size(); ++i) EXPECT_EQ(out.origin[i], i);
}

TEST(TokenView, RewrittenBytesMapToTheirTokenAndTheRestToThemselves) {
  const std::string input = "a  bb ;";
  TokenView v(input);
  v.replace(1, "cccc");
  v.insert_before(2, "!");
  TextWithOrigin out = v.joined_with_origin();
  EXPECT_EQ(out.text, "a  cccc !;");
  EXPECT_THAT(out.origin, ::testing::ElementsAre(0u, 1u, 2u, 3u, 3u, 3u, 3u, 5u, 6u, 6u, 7u));
}

TEST(TokenView, RewritesNeverMoveALine) {
  const std::string input = "#define A \\\n  1\nx /* one\ntwo\nthree */ y\n";
  TokenView v(input);
  const std::vector<Token>& tokens = v.tokens();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind == TokenKind::directive) v.replace_token(i, "");
    if (tokens[i].kind == TokenKind::comment) v.replace_token(i, "/* 1\n*/");
  }
  TextWithOrigin out = v.joined_with_origin();
  EXPECT_EQ(out.text, "\n\nx /* 1\n*/\n y\n");
  ASSERT_EQ(out.origin.size(), out.text.size() + 1);
  // Each kept newline maps to the newline it stands for.
  EXPECT_EQ(out.origin[0], input.find('\n'));
  EXPECT_EQ(out.origin[out.text.find(" y")], input.find(" y"));
  EXPECT_EQ(out.origin[out.text.find(" y") - 1], input.find("\nthree"));
  auto lines_before_y = std::count(input.begin(), input.begin() + input.find(" y"), '\n');
  EXPECT_EQ(std::count(out.text.begin(), out.text.begin() + out.text.find(" y"), '\n'), lines_before_y);
}

TEST(TokenView, JoinedWithOriginOfEmptyText) {
  TokenView v("");
  EXPECT_EQ(v.count(), 0u);
  TextWithOrigin out = v.joined_with_origin();
  EXPECT_EQ(out.text, "");
  EXPECT_THAT(out.origin, ::testing::ElementsAre(0u));
  EXPECT_THROW(v.fail(0, "empty"), SyntaxError);
}

}  // namespace
