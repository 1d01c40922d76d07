#include "spec/metal_identifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>

namespace mfagen::spec {

namespace {

// C++ keywords and alternative tokens, Metal's own keywords and attributes
// of functions and address spaces, and Metal's scalar type names: a kernel
// with one of these names would not compile. `main` is refused by Metal;
// NULL is a macro.
constexpr std::string_view kReserved[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
    "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
    // Metal
    "kernel", "vertex", "fragment", "visible", "device", "constant", "threadgroup", "thread",
    "threadgroup_imageblock", "ray_data", "object_data", "half", "bfloat", "uchar", "ushort",
    "uint", "ulong", "size_t", "ptrdiff_t", "metal", "main", "NULL", "stage_in",
};

// Metal's vector and matrix types: float4, packed_half3, half2x3, ...
bool is_vector_or_matrix_type(std::string_view name) {
  if (name.starts_with("packed_")) name.remove_prefix(7);
  constexpr std::array<std::string_view, 12> kScalars{
      "bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half",
      "float", "bfloat"};
  for (std::string_view scalar : kScalars) {
    if (!name.starts_with(scalar)) continue;
    std::string_view rest = name.substr(scalar.size());
    auto dim = [](char c) { return c >= '2' && c <= '4'; };
    if (rest.size() == 1 && dim(rest[0])) return true;
    if (rest.size() == 3 && dim(rest[0]) && rest[1] == 'x' && dim(rest[2])) return true;
  }
  return false;
}

bool is_identifier(std::string_view name) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name.empty() || !letter(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return letter(c) || digit(c); });
}

std::string quoted(std::string_view name) {
  constexpr size_t kShown = 40;
  if (name.size() <= kShown) return fmt::format("\"{}\"", name);
  return fmt::format("\"{}...\" ({} characters)", name.substr(0, kShown), name.size());
}

}  // namespace

std::string metal_identifier_problem(std::string_view name) {
  if (!is_identifier(name)) {
    return fmt::format("expected a Metal identifier ([A-Za-z_][A-Za-z0-9_]*), found {}",
                       quoted(name));
  }
  if (name.size() > kMaxNameLength) {
    return fmt::format("expected a name of at most {} characters, found {}", kMaxNameLength,
                       quoted(name));
  }
  if (name.starts_with("__")) {
    return fmt::format("expected a name not starting with \"__\" (reserved), found {}",
                       quoted(name));
  }
  if (std::find(std::begin(kReserved), std::end(kReserved), name) != std::end(kReserved) ||
      is_vector_or_matrix_type(name)) {
    return fmt::format("expected a name that is not a C++ or Metal keyword or type, found {}",
                       quoted(name));
  }
  return "";
}

}  // namespace mfagen::spec
