// The template engine: mustache sections with the standalone-line rule, and
// strictness (a tag without a value, or a value nobody uses, is a bug).
#include <gtest/gtest.h>

#include <stdexcept>

#include "render/template_engine.h"

namespace mfagen::render {
namespace {

TEST(TemplateEngine, SectionLinesLeaveNoBlankLines) {
  const std::string text = "a\n{{#on}}\nb {{x}}\n{{/on}}\n{{^on}}\nc\n{{/on}}\nd\n";
  EXPECT_EQ(render_template_text(text, {{"on", true}, {"x", std::string("1")}}, "t"), "a\nb 1\nd\n");
  EXPECT_EQ(render_template_text(text, {{"on", false}, {"x", std::string("1")}}, "t"), "a\nc\nd\n");
}

TEST(TemplateEngine, BlankLinesAndLeadingCommentsSurvive) {
  const std::string text = "{{! about }}\na\n\n{{#on}}\nb\n{{/on}}\n\nc\n";
  EXPECT_EQ(render_template_text(text, {{"on", false}}, "t"), "a\n\n\nc\n");
  EXPECT_EQ(render_template_text(text, {{"on", true}}, "t"), "a\n\nb\n\nc\n");
}

TEST(TemplateEngine, NothingIsEscaped) {
  EXPECT_EQ(render_template_text("{{x}}", {{"x", std::string("a<b> && \"c\"")}}, "t"), "a<b> && \"c\"");
}

TEST(TemplateEngine, MissingValuesAreErrors) {
  EXPECT_THROW(render_template_text("{{x}} {{y}}", {{"x", std::string("1")}}, "t"), std::logic_error);
  EXPECT_THROW(render_template_text("{{#flag}}x{{/flag}}", {}, "t"), std::logic_error);
  EXPECT_THROW(render_template("no-such-template", {}), std::logic_error);
}

// Found by fuzz/: the engine's line marker in the text itself was reported
// as a misplaced section tag of an unnamed template.
TEST(TemplateEngine, ErrorsNameTheTemplate) {
  try {
    render_template_text("a\x01" "b\n", {}, "inline.mustache");
    FAIL() << "text holding the engine's reserved marker must be refused";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("template inline.mustache: contains the control character"),
              std::string::npos)
        << e.what();
  }
}

TEST(TemplateEngine, VersionNamesTheTemplateAndItsText) {
  const std::string v = template_version("attention_forward.metal.mustache");
  EXPECT_EQ(v.rfind("attention_forward-", 0), 0u) << v;
  EXPECT_EQ(v.size(), std::string("attention_forward-").size() + 8);
}

}  // namespace
}  // namespace mfagen::render
