#include "spec/json_values.h"

#include <algorithm>
#include <limits>

namespace mfagen::spec::detail {

Where Where::field(std::string_view key) const {
  return {file, path.empty() ? std::string(key) : path + "." + std::string(key)};
}

Where Where::element(size_t index) const {
  return {file, fmt::format("{}[{}]", path, index)};
}

void Where::fail(std::string message) const { throw SpecError(file, path, std::move(message)); }

void Where::fail_expected(std::string_view expected, const Json& found) const {
  fail(fmt::format("expected {}, found {}", expected, describe_type(found)));
}

std::string describe_type(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return value.empty() ? "an empty list" : "a list";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

std::string describe_value(const Json& value) {
  constexpr size_t kMaxChars = 40;
  if (!value.is_string() || value.get_ref<const std::string&>().size() <= kMaxChars) {
    return value.dump();
  }
  return Json(value.get_ref<const std::string&>().substr(0, kMaxChars)).dump() + "...";
}

void check_known_fields(const Json& object, const Where& at,
                        std::span<const std::string_view> known) {
  for (const auto& [key, unused] : object.items()) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || key == k;
    if (!ok) {
      at.fail(fmt::format("unknown field {}; the accepted fields are {}", Json(key).dump(),
                          fmt::join(known, ", ")));
    }
  }
}

int64_t read_json_integer(const Json& value, const Where& at, std::string_view expected) {
  if (value.is_number_float()) {
    // 128.0 is refused too: a spec is exact, and a float here is a typo or a
    // computed value the user should look at.
    at.fail(fmt::format("expected {}, found {}", expected, describe_value(value)));
  }
  if (!value.is_number_integer()) at.fail_expected(expected, value);
  if (!value.is_number_unsigned()) return value.get<int64_t>();
  return static_cast<int64_t>(
      std::min<uint64_t>(value.get<uint64_t>(), std::numeric_limits<int64_t>::max()));
}

int64_t read_integer(const Json& value, const Where& at, int64_t lo, int64_t hi) {
  std::string expected = fmt::format("an integer in {}..{}", lo, hi);
  int64_t n = read_json_integer(value, at, expected);
  if (n < lo || n > hi) at.fail(fmt::format("expected {}, found {}", expected, value.dump()));
  return n;
}

bool read_bool(const Json& value, const Where& at) {
  if (!value.is_boolean()) at.fail_expected("true or false", value);
  return value.get<bool>();
}

const std::string& read_string(const Json& value, const Where& at) {
  if (!value.is_string()) at.fail_expected("a string", value);
  return value.get_ref<const std::string&>();
}

}  // namespace mfagen::spec::detail
