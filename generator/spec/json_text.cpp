#include "spec/json_text.h"

#include <fmt/format.h>

#include <set>
#include <vector>

#include "spec/kernel_spec.h"

namespace mfagen::spec::detail {

namespace {

// nlohmann's parse_error::byte is the 1-based index of the last character
// read, the one where parsing failed (one past the end at end of input).
std::string position_of(std::string_view text, size_t byte) {
  size_t offset = byte == 0 ? 0 : std::min(byte - 1, text.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return fmt::format("line {}, column {}", line, offset - line_start + 1);
}

// what() reads "[json.exception.parse_error.101] parse error at line 1,
// column 10: syntax error while parsing value - invalid literal; last read:
// ..."; keep only the part after " - " (the position is computed above).
std::string short_reason(const std::string& what) {
  size_t dash = what.find(" - ");
  if (dash != std::string::npos) return what.substr(dash + 3);
  size_t colon = what.rfind(": ");
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

// Tracks the JSON path of the value being parsed, to name the object in
// which a key repeats ("kernels[1]").
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(const std::string& file) : file_(file) {}

  bool operator()(int /*depth*/, nlohmann::detail::parse_event_t event, Json& parsed) {
    using E = nlohmann::detail::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        // A spec nests four levels; hostile nesting would grow the paths
        // kept here quadratically. Refuse it early, with the limit.
        if (frames_.size() >= kMaxDepth)
          throw SpecError(file_, child_path(),
                          fmt::format("expected JSON nested at most {} levels deep, found deeper nesting", kMaxDepth));
        frames_.push_back({event == E::object_start, child_path(), 0, {}, {}});
        break;
      case E::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) {
          throw SpecError(file_, f.path,
                          fmt::format("expected each field once, found \"{}\" twice", f.key));
        }
        break;
      }
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        element_done();
        break;
      case E::value:
        element_done();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool object;
    std::string path;
    size_t index;             // arrays: index of the next element
    std::string key;          // objects: the key being parsed
    std::set<std::string> keys;
  };

  std::string child_path() const {
    if (frames_.empty()) return "";
    const Frame& f = frames_.back();
    if (!f.object) return fmt::format("{}[{}]", f.path, f.index);
    return f.path.empty() ? f.key : f.path + "." + f.key;
  }

  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }

  static constexpr size_t kMaxDepth = 32;
  const std::string& file_;
  std::vector<Frame> frames_;
};

}  // namespace

Json parse_json_text(std::string_view text, const std::string& file) {
  try {
    return Json::parse(text.begin(), text.end(), DuplicateKeyCheck(file));
  } catch (const nlohmann::json::parse_error& e) {
    throw SpecError(file, "",
                    fmt::format("invalid JSON at {}: {}", position_of(text, e.byte),
                                short_reason(e.what())));
  }
}

}  // namespace mfagen::spec::detail
