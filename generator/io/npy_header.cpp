#include "npy_header.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>
#include <map>

namespace mfagen::io {
namespace {

// The Python literals a header can hold (NumPy reads it with ast.literal_eval).
struct PyValue {
  enum class Kind { string, boolean, none, integer, tuple, list, dict };
  Kind kind = Kind::none;
  std::string text;      // string
  bool flag = false;     // boolean
  bool negative = false; // integer
  uint64_t magnitude = 0;
  // tuple, list: the elements; dict: key, value, key, value, ... (a vector
  // of pairs of the type being defined is not portable C++).
  std::vector<PyValue> items;
};

std::string_view kind_name(PyValue::Kind kind) {
  switch (kind) {
    case PyValue::Kind::string: return "a string";
    case PyValue::Kind::boolean: return "a bool";
    case PyValue::Kind::none: return "None";
    case PyValue::Kind::integer: return "an integer";
    case PyValue::Kind::tuple: return "a tuple";
    case PyValue::Kind::list: return "a list";
    case PyValue::Kind::dict: return "a dict";
  }
  return "?";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  PyValue parse_document() {
    PyValue value = parse_value();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the closing '}'");
    return value;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw std::invalid_argument(fmt::format("header dict: {} at column {}", what, pos_ + 1));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }

  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool take_word(std::string_view word) {
    skip_space();
    if (text_.substr(pos_, word.size()) != word) return false;
    size_t end = pos_ + word.size();
    if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
      return false;
    pos_ = end;
    return true;
  }

  PyValue parse_value() {
    // A header nests at most a dict holding a shape tuple; deeper input is
    // hostile and must not exhaust the stack.
    constexpr int kMaxDepth = 16;
    if (depth_ >= kMaxDepth) fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    ++depth_;
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of the header");
    char c = text_[pos_];
    PyValue value;
    if (c == '\'' || c == '"') {
      value.kind = PyValue::Kind::string;
      value.text = parse_string();
    } else if (c == '(' || c == '[') {
      value.kind = c == '(' ? PyValue::Kind::tuple : PyValue::Kind::list;
      value.items = parse_sequence(c == '(' ? ')' : ']');
    } else if (c == '{') {
      value.kind = PyValue::Kind::dict;
      value.items = parse_dict();
    } else if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) {
      value.kind = PyValue::Kind::integer;
      parse_integer(value);
    } else if (take_word("True")) {
      value.kind = PyValue::Kind::boolean;
      value.flag = true;
    } else if (take_word("False")) {
      value.kind = PyValue::Kind::boolean;
    } else if (take_word("None")) {
      value.kind = PyValue::Kind::none;
    } else {
      fail(fmt::format("unexpected character '{}'", c));
    }
    return value;
  }

  std::string parse_string() {
    char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      // Escapes never occur in dtype strings; keep the escaped character.
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out += text_[pos_++];
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  void parse_integer(PyValue& value) {
    if (text_[pos_] == '-' || text_[pos_] == '+') value.negative = text_[pos_++] == '-';
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      uint64_t digit = uint64_t(text_[pos_] - '0');
      if (value.magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) fail("integer too large");
      value.magnitude = value.magnitude * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) fail("expected digits");
    // Python 2 era writers spelled long integers with a suffix: (3L, 4L).
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;
  }

  std::vector<PyValue> parse_sequence(char close) {
    ++pos_;
    std::vector<PyValue> items;
    while (!take(close)) {
      items.push_back(parse_value());
      if (!take(',')) {
        if (!take(close)) fail(fmt::format("expected ',' or '{}'", close));
        break;
      }
    }
    return items;
  }

  std::vector<PyValue> parse_dict() {
    ++pos_;
    std::vector<PyValue> entries;
    while (!take('}')) {
      entries.push_back(parse_value());
      if (!take(':')) fail("expected ':' after a dict key");
      entries.push_back(parse_value());
      if (!take(',')) {
        if (!take('}')) fail("expected ',' or '}'");
        break;
      }
    }
    return entries;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

NpyHeaderDict parse_npy_header_dict(std::string_view text) {
  PyValue root = Parser(text).parse_document();
  if (root.kind != PyValue::Kind::dict)
    throw std::invalid_argument(fmt::format("header is {}, not a dict", kind_name(root.kind)));

  std::map<std::string, const PyValue*> values;
  for (size_t entry = 0; entry + 1 < root.items.size(); entry += 2) {
    const PyValue& key = root.items[entry];
    const PyValue& value = root.items[entry + 1];
    if (key.kind != PyValue::Kind::string)
      throw std::invalid_argument(fmt::format("header dict has a key that is {}", kind_name(key.kind)));
    if (key.text != "descr" && key.text != "fortran_order" && key.text != "shape")
      throw std::invalid_argument(fmt::format(
          "header dict has the unexpected key '{}' (expected 'descr', 'fortran_order', 'shape')", key.text));
    if (!values.emplace(key.text, &value).second)
      throw std::invalid_argument(fmt::format("header dict has the key '{}' twice", key.text));
  }
  for (const char* key : {"descr", "fortran_order", "shape"})
    if (!values.count(key)) throw std::invalid_argument(fmt::format("header dict has no '{}' key", key));

  NpyHeaderDict dict;
  const PyValue& descr = *values["descr"];
  if (descr.kind == PyValue::Kind::list)
    throw std::invalid_argument("structured dtypes (a list 'descr') are not supported");
  if (descr.kind != PyValue::Kind::string)
    throw std::invalid_argument(fmt::format("'descr' is {}, expected a string", kind_name(descr.kind)));
  dict.descr = descr.text;

  const PyValue& order = *values["fortran_order"];
  if (order.kind != PyValue::Kind::boolean)
    throw std::invalid_argument(fmt::format("'fortran_order' is {}, expected True or False", kind_name(order.kind)));
  dict.fortran_order = order.flag;

  const PyValue& shape = *values["shape"];
  if (shape.kind != PyValue::Kind::tuple)
    throw std::invalid_argument(fmt::format("'shape' is {}, expected a tuple", kind_name(shape.kind)));
  for (const PyValue& dim : shape.items) {
    if (dim.kind != PyValue::Kind::integer || (dim.negative && dim.magnitude != 0))
      throw std::invalid_argument("'shape' must hold non-negative integers");
    dict.shape.push_back(dim.magnitude);
  }
  return dict;
}

}  // namespace mfagen::io
