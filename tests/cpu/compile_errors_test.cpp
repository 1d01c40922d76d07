// MSL that Metal rejects must fail to compile with a CompileError whose
// message names the .metal file and the offending line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/harness.h"

namespace mfagen::cputest {
namespace {

using ::testing::HasSubstr;

// The CompileError message for kernels/compile_errors/NAME, or "" if it compiled.
std::string compile_error(const std::string& name) {
  try {
    compile_kernel("compile_errors/" + name);
  } catch (const cpu::CompileError& e) {
    return e.what();
  }
  return "";
}

std::string place(const std::string& name) {
  return name + ":" + std::to_string(line_of(kernel_file("compile_errors/" + name), "MARK: error")) + ":";
}

TEST(CompileErrors, ThreadgroupPointerWhereDevicePointerIsExpected) {
  std::string message = compile_error("threadgroup_as_device.metal");
  ASSERT_NE(message, "") << "compiled, but Metal rejects it";
  EXPECT_THAT(message, HasSubstr(place("threadgroup_as_device.metal"))) << message;
  EXPECT_THAT(message, HasSubstr("error")) << message;
}

TEST(CompileErrors, ConstantPointerAssignedToDevicePointer) {
  std::string message = compile_error("constant_to_device.metal");
  ASSERT_NE(message, "") << "compiled, but Metal rejects it";
  EXPECT_THAT(message, HasSubstr(place("constant_to_device.metal"))) << message;
  EXPECT_THAT(message, HasSubstr("error")) << message;
}

TEST(CompileErrors, ConditionalBetweenBfloatAndHalf) {
  std::string message = compile_error("conditional_different_types.metal");
  ASSERT_NE(message, "") << "compiled, but Metal rejects ?: between bfloat and half";
  EXPECT_THAT(message, HasSubstr(place("conditional_different_types.metal"))) << message;
  EXPECT_THAT(message, HasSubstr("conditional expression is ambiguous")) << message;
}

TEST(CompileErrors, ConditionalBetweenDifferentStructsInDifferentAddressSpaces) {
  std::string message = compile_error("conditional_different_structs.metal");
  ASSERT_NE(message, "") << "compiled, but Metal rejects ?: between two unrelated structs";
  EXPECT_THAT(message, HasSubstr(place("conditional_different_structs.metal"))) << message;
  EXPECT_THAT(message, HasSubstr("incompatible operand types ('const device Meters' and 'thread Feet')")) << message;
  EXPECT_THAT(message, ::testing::Not(HasSubstr("__mf_rvalue"))) << message;
}

TEST(CompileErrors, LongDoubleLiteral) {
  std::string message = compile_error("long_double_literal.metal");
  ASSERT_NE(message, "") << "compiled, but Metal has no long double";
  EXPECT_THAT(message, HasSubstr(place("long_double_literal.metal"))) << message;
  EXPECT_THAT(message, HasSubstr("long double")) << message;
}

TEST(CompileErrors, VirtualFunction) {
  std::string message = compile_error("virtual_function.metal");
  ASSERT_NE(message, "") << "compiled, but Metal has no virtual functions";
  EXPECT_THAT(message, HasSubstr(place("virtual_function.metal"))) << message;
  EXPECT_THAT(message, HasSubstr("virtual functions are not allowed in Metal")) << message;
}

TEST(CompileErrors, AddressOfFunctionAsTemplateArgument) {
  std::string message = compile_error("address_of_function_template_argument.metal");
  ASSERT_NE(message, "") << "compiled, but the lowering cannot bind &twice to its reference parameter";
  EXPECT_THAT(message, HasSubstr(place("address_of_function_template_argument.metal"))) << message;
}

TEST(CompileErrors, SyntaxErrorNamesTheLine) {
  std::string message = compile_error("syntax_error.metal");
  ASSERT_NE(message, "");
  EXPECT_THAT(message, HasSubstr(place("syntax_error.metal"))) << message;
  EXPECT_THAT(message, HasSubstr("expected ';'")) << message;
}

TEST(CompileErrors, MessageDoesNotMentionTemporaryFiles) {
  std::string message = compile_error("syntax_error.metal");
  EXPECT_THAT(message, ::testing::Not(HasSubstr(".cl:"))) << message;
  EXPECT_THAT(message, ::testing::Not(HasSubstr("src."))) << message;
}

}  // namespace
}  // namespace mfagen::cputest
