#include "buffer_types.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace mfagen::cli {
namespace {

struct ScalarDtypes {
  std::string_view name;
  std::vector<std::string> dtypes;
  bool has_vectors;  // MSL has nameN vector types for it
};

const std::vector<ScalarDtypes>& scalars() {
  static const std::vector<ScalarDtypes> table = {
      {"float", {"<f4"}, true},        {"half", {"<f2"}, true},
      {"bfloat", {"<u2", "<i2"}, true}, {"int", {"<i4"}, true},
      {"uint", {"<u4"}, true},          {"short", {"<i2"}, true},
      {"ushort", {"<u2"}, true},        {"char", {"|i1"}, true},
      {"uchar", {"|u1"}, true},         {"bool", {"|b1"}, true},
      {"long", {"<i8"}, true},          {"ulong", {"<u8"}, true},
      {"unsigned int", {"<u4"}, false}, {"unsigned", {"<u4"}, false},
      {"signed char", {"|i1"}, false},  {"unsigned char", {"|u1"}, false},
      {"unsigned short", {"<u2"}, false}, {"unsigned long", {"<u8"}, false},
      {"int8_t", {"|i1"}, false},       {"uint8_t", {"|u1"}, false},
      {"int16_t", {"<i2"}, false},      {"uint16_t", {"<u2"}, false},
      {"int32_t", {"<i4"}, false},      {"uint32_t", {"<u4"}, false},
      {"int64_t", {"<i8"}, false},      {"uint64_t", {"<u8"}, false},
      {"size_t", {"<u8"}, false},       {"atomic_int", {"<i4"}, false},
      {"atomic_uint", {"<u4"}, false},  {"atomic_float", {"<f4"}, false},
      {"atomic_bool", {"|b1"}, false},
  };
  return table;
}

const ScalarDtypes* find_scalar(std::string_view name) {
  for (const ScalarDtypes& s : scalars())
    if (s.name == name) return &s;
  return nullptr;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Words and punctuation of a type; "::" is one token.
std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> tokens;
  for (size_t i = 0; i < text.size();) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (is_word_char(text[i])) {
      size_t start = i;
      while (i < text.size() && is_word_char(text[i])) ++i;
      tokens.emplace_back(text.substr(start, i - start));
    } else if (text.substr(i, 2) == "::") {
      tokens.emplace_back("::");
      i += 2;
    } else {
      tokens.emplace_back(1, text[i++]);
    }
  }
  return tokens;
}

bool is_qualifier(std::string_view word) {
  static constexpr std::array<std::string_view, 11> kQualifiers = {
      "device",   "constant",     "threadgroup",  "thread",   "const",           "volatile",
      "restrict", "__restrict",   "__restrict__", "ray_data", "threadgroup_imageblock"};
  return std::find(kQualifiers.begin(), kQualifiers.end(), word) != kQualifiers.end();
}

// "vec<float,4>" -> ("float", 4); "atomic<uint>" -> ("uint", 0).
bool split_template(std::string_view type, std::string_view name, std::string& arg, unsigned& count) {
  if (type.substr(0, name.size() + 1) != std::string(name) + "<" || type.back() != '>') return false;
  std::string_view inner = type.substr(name.size() + 1, type.size() - name.size() - 2);
  size_t comma = inner.rfind(',');
  count = 0;
  if (comma != std::string_view::npos) {
    for (char c : inner.substr(comma + 1)) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      count = count * 10 + unsigned(c - '0');
    }
    inner = inner.substr(0, comma);
  }
  arg = std::string(inner);
  return true;
}

// In memory a 3-wide vector (or matrix column) occupies 4 scalars unless packed.
uint32_t padded(unsigned width) { return width == 3 ? 4 : width; }

std::optional<BufferElement> make(const ScalarDtypes& scalar, uint32_t width) {
  return BufferElement{std::string(scalar.name), scalar.dtypes, width};
}

std::optional<BufferElement> element_of(const std::string& type) {
  if (const ScalarDtypes* s = find_scalar(type)) return make(*s, 1);

  std::string arg;
  unsigned count = 0;
  if (split_template(type, "atomic", arg, count) && count == 0) return element_of(arg);
  if (split_template(type, "vec", arg, count)) {
    const ScalarDtypes* s = find_scalar(arg);
    if (s && s->has_vectors && count >= 2 && count <= 4) return make(*s, padded(count));
    return std::nullopt;
  }

  bool packed = type.rfind("packed_", 0) == 0;
  std::string_view rest = std::string_view(type).substr(packed ? 7 : 0);
  // nameN or nameCxR
  size_t digits = rest.size();
  while (digits > 0 && (std::isdigit(static_cast<unsigned char>(rest[digits - 1])) || rest[digits - 1] == 'x'))
    --digits;
  std::string_view base = rest.substr(0, digits), suffix = rest.substr(digits);
  const ScalarDtypes* s = find_scalar(base);
  if (!s || !s->has_vectors) return std::nullopt;
  if (suffix.size() == 1 && suffix[0] >= '2' && suffix[0] <= '4') {
    unsigned width = unsigned(suffix[0] - '0');
    return make(*s, packed ? width : padded(width));
  }
  // Matrices: C columns of R-wide column vectors (float and half only).
  if (!packed && suffix.size() == 3 && suffix[1] == 'x' && (base == "float" || base == "half") &&
      suffix[0] >= '2' && suffix[0] <= '4' && suffix[2] >= '2' && suffix[2] <= '4')
    return make(*s, unsigned(suffix[0] - '0') * padded(unsigned(suffix[2] - '0')));
  return std::nullopt;
}

}  // namespace

std::string pointee_type(std::string_view param_type) {
  size_t cut = param_type.find_last_of("*&");
  if (cut != std::string_view::npos) param_type = param_type.substr(0, cut);
  std::vector<std::string> tokens = tokenize(param_type);
  std::string out;
  bool last_was_word = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    if (is_qualifier(token)) continue;
    // metal::float4 and ::metal::float4 name the same type as float4.
    if (token == "metal" && i + 1 < tokens.size() && tokens[i + 1] == "::") {
      ++i;
      continue;
    }
    if (token == "::" && out.empty()) continue;
    bool word = is_word_char(token[0]);
    if (word && last_was_word) out += ' ';
    out += token;
    last_was_word = word;
  }
  return out;
}

std::optional<BufferElement> buffer_element(std::string_view param_type) {
  return element_of(pointee_type(param_type));
}

std::string buffer_mismatch(std::string_view param_type, bool is_reference, std::string_view dtype,
                            uint64_t count) {
  std::optional<BufferElement> element = buffer_element(param_type);
  if (!element) return "";
  std::string type = pointee_type(param_type);
  if (std::find(element->dtypes.begin(), element->dtypes.end(), dtype) == element->dtypes.end())
    return fmt::format("`{}` elements need dtype {}, the file has dtype {}", type,
                       fmt::join(element->dtypes, " or "), dtype);
  if (is_reference && count != element->width)
    return fmt::format("a `{}&` is a single value: it needs exactly {} {} element{}, the file has {}", type,
                       element->width, dtype, element->width == 1 ? "" : "s", count);
  if (count % element->width != 0)
    return fmt::format("`{}` is {} {} elements wide in memory, and {} elements is not a multiple of {}", type,
                       element->width, dtype, count, element->width);
  return "";
}

}  // namespace mfagen::cli
