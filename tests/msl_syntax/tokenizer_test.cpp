// The lossless tokenizer: text back byte for byte, token kinds, offsets,
// and the source positions of clang's line markers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mfagen/msl/tokenizer.h"

using namespace mfagen::msl;

namespace {

std::vector<std::pair<TokenKind, std::string>> kinds_and_texts(std::string_view text) {
  std::vector<std::pair<TokenKind, std::string>> out;
  for (const Token& t : tokenize(text).tokens) out.emplace_back(t.kind, t.text);
  return out;
}

std::vector<std::string> significant_texts(std::string_view text) {
  std::vector<std::string> out;
  for (const Token& t : tokenize(text).tokens)
    if (t.significant()) out.push_back(t.text);
  return out;
}

TEST(Tokenizer, JoiningTheTokensGivesTheInputBack) {
  const std::string inputs[] = {
      "",
      "kernel void k(device float* a [[buffer(0)]]) { a[0] = 1.5e-3f; }\n",
      "// line comment\n/* block\n   comment */ int x; /* unterminated",
      "#include <metal_stdlib>\n#define TWICE(x) \\\n  ((x) + \\\n   (x))\nint y = TWICE(2);\n",
      "auto s = \"a \\\"quoted\\\" string\"; char c = '\\''; auto w = u8\"x\" L'y';\n",
      "auto bad = \"unterminated\nint next;\n",
      "x->*y; a::b; p->q; a == b != c <= d >= e && f || g; ++i; --j; 0x1p+3 1'000 .5f\n",
      "\t\r\f\v \xc3\xa9 \\ @ $ ` \n",
      "# 1 \"k.metal\"\n# 12 \"/abs/path/h.h\" 1 3\nint z;\n",
  };
  for (const std::string& input : inputs) EXPECT_EQ(join_tokens(tokenize(input).tokens), input) << input;
}

TEST(Tokenizer, OffsetsArePositionsInTheInput) {
  const std::string input = "int  x = /* c */ 42;\n";
  for (const Token& t : tokenize(input).tokens) EXPECT_EQ(input.substr(t.offset, t.text.size()), t.text);
  std::vector<Token> tokens = tokenize(input).tokens;
  ASSERT_GE(tokens.size(), 8u);
  EXPECT_EQ(tokens[2].text, "x");
  EXPECT_EQ(tokens[2].offset, 5u);
}

TEST(Tokenizer, CommentsAndWhitespaceAreNotSignificant) {
  EXPECT_THAT(significant_texts("a /* b */ c // d\n e"), ::testing::ElementsAre("a", "c", "e"));
  EXPECT_EQ(kinds_and_texts("a /* b */")[2], std::make_pair(TokenKind::comment, std::string("/* b */")));
  EXPECT_EQ(kinds_and_texts("x // to the end\ny")[2],
            std::make_pair(TokenKind::comment, std::string("// to the end")));
}

TEST(Tokenizer, DirectivesRunToTheEndOfTheLineWithTheirContinuations) {
  auto tokens = kinds_and_texts("  #define A \\\n  1\nint a = A; # not a directive\n/* c */ #pragma x\n");
  EXPECT_EQ(tokens[1], std::make_pair(TokenKind::directive, std::string("#define A \\\n  1")));
  EXPECT_THAT(significant_texts("#define A \\\n  1\nint a = A; # x\n"),
              ::testing::ElementsAre("int", "a", "=", "A", ";", "#", "x"));
  bool pragma = false;
  for (const auto& [kind, text] : tokens) pragma |= kind == TokenKind::directive && text == "#pragma x";
  EXPECT_TRUE(pragma) << "a comment before # is whitespace";
}

TEST(Tokenizer, LiteralsNumbersAndOperatorsAreSingleTokens) {
  EXPECT_THAT(significant_texts("s = \"a\\\"b\"; c = '\\n'; w = u8\"x\"; l = L'y';"),
              ::testing::ElementsAre("s", "=", "\"a\\\"b\"", ";", "c", "=", "'\\n'", ";", "w", "=", "u8\"x\"", ";", "l",
                                     "=", "L'y'", ";"));
  EXPECT_THAT(significant_texts("1.5e-3f 0x1p+3 .5h 1'000u 2h"),
              ::testing::ElementsAre("1.5e-3f", "0x1p+3", ".5h", "1'000u", "2h"));
  EXPECT_THAT(significant_texts("a->*b::c->d==e!=f<=g>=h&&i||j++k--"),
              ::testing::ElementsAre("a", "->*", "b", "::", "c", "->", "d", "==", "e", "!=", "f", "<=", "g", ">=", "h",
                                     "&&", "i", "||", "j", "++", "k", "--"));
  EXPECT_THAT(significant_texts("a<b<c>>"), ::testing::ElementsAre("a", "<", "b", "<", "c", ">", ">"))
      << "`>>` closes two template argument lists";
}

TEST(Tokenizer, AnUnterminatedLiteralEndsAtItsLine) {
  auto tokens = kinds_and_texts("\"open\nx");
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0], std::make_pair(TokenKind::literal, std::string("\"open")));
  EXPECT_EQ(tokens[1], std::make_pair(TokenKind::space, std::string("\n")));
}

TEST(Tokenizer, LineMarkersGiveFileAndLine) {
  Tokens t = tokenize("a\n# 7 \"k.metal\"\nb\n/* two\nlines */ c\n#define X \\\n  1\nd\n# 3 \"k.metal\" 2\ne");
  auto find = [&](std::string_view text) -> const Token& {
    for (const Token& token : t.tokens)
      if (token.text == text) return token;
    throw std::runtime_error("missing token");
  };
  EXPECT_EQ(t.files[find("a").file], "<input>");
  EXPECT_EQ(find("a").line, 1);
  EXPECT_EQ(t.files[find("b").file], "k.metal");
  EXPECT_EQ(find("b").line, 7);
  EXPECT_EQ(find("c").line, 9);
  EXPECT_EQ(find("d").line, 12);
  EXPECT_EQ(find("e").line, 3);
  EXPECT_EQ(find("e").file, find("b").file) << "one entry per file name";
  EXPECT_EQ(t.files.size(), 2u);
}

}  // namespace
