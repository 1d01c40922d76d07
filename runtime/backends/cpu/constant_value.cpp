// Typed function-constant values as users write them (`1.5:float`).
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "mfagen/cpu/backend.h"

namespace mfagen::cpu {
namespace {

template <typename T>
T parse_integer(std::string_view text, std::string_view type) {
  T value{};
  int base = 10;
  std::string_view digits = text;
  bool negative = !digits.empty() && digits.front() == '-';
  if (digits.size() > size_t(2 + negative) && digits[negative] == '0' && (digits[negative + 1] == 'x' || digits[negative + 1] == 'X')) {
    base = 16;
  }
  std::string cleaned = base == 16 ? std::string(negative ? "-" : "") + std::string(digits.substr(2 + negative)) : std::string(digits);
  auto [end, ec] = std::from_chars(cleaned.data(), cleaned.data() + cleaned.size(), value, base);
  if (ec != std::errc() || end != cleaned.data() + cleaned.size())
    throw std::invalid_argument(fmt::format("'{}' is not a valid {} value", text, type));
  return value;
}

}  // namespace

ConstantValue parse_constant_value(std::string_view value, std::string_view type) {
  ConstantValue out{std::string(type), ""};
  if (type == "bool") {
    if (value == "true" || value == "1") out.literal = "true";
    else if (value == "false" || value == "0") out.literal = "false";
    else throw std::invalid_argument(fmt::format("'{}' is not a valid bool value (true, false, 1, 0)", value));
  } else if (type == "int") {
    out.literal = fmt::format("{}", parse_integer<int32_t>(value, type));
  } else if (type == "uint") {
    out.literal = fmt::format("{}u", parse_integer<uint32_t>(value, type));
  } else if (type == "short") {
    out.literal = fmt::format("{}", parse_integer<int16_t>(value, type));
  } else if (type == "ushort") {
    out.literal = fmt::format("{}", parse_integer<uint16_t>(value, type));
  } else if (type == "float" || type == "half") {
    std::string text(value);
    char* end = nullptr;
    double parsed = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size())
      throw std::invalid_argument(fmt::format("'{}' is not a valid {} value", value, type));
    float f = static_cast<float>(parsed);
    if (std::isnan(f)) out.literal = "__builtin_nanf(\"\")";
    else if (std::isinf(f)) out.literal = f > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
    else out.literal = fmt::format("{:a}f", f);  // hexadecimal: exact
  } else {
    throw std::invalid_argument(
        fmt::format("unsupported function constant type '{}' (bool, int, uint, short, ushort, float, half)", type));
  }
  return out;
}

}  // namespace mfagen::cpu
