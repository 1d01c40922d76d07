#include "diagnostic_repair.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "subprocess.h"
#include "toolchain.h"

namespace mfagen::cpu {
namespace {

struct Position {
  int line = 0;    // 1-based
  int column = 0;  // 1-based, in bytes
};

// An expression clang rejected, to be wrapped in `prefix` ... `)`.
struct Wrap {
  Position begin;
  Position end;  // one past the expression's last character
  std::string prefix;
  std::string suffix = ")";
  bool operator<(const Wrap& o) const {
    return std::tie(begin.line, begin.column, end.line, end.column, prefix, suffix) <
           std::tie(o.begin.line, o.begin.column, o.end.line, o.end.column, o.prefix, o.suffix);
  }
};

bool is_line_marker(std::string_view line) {
  return line.size() > 2 && line[0] == '#' && line[1] == ' ' && std::isdigit(static_cast<unsigned char>(line[2]));
}

std::vector<size_t> line_starts(const std::string& text) {
  std::vector<size_t> starts = {0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') starts.push_back(i + 1);
  return starts;
}

// Empties line markers (keeping their newlines) so clang reports positions in
// the lowered text itself, with the same line numbers as the original.
std::string without_line_markers(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::vector<size_t> starts = line_starts(text);
  for (size_t k = 0; k < starts.size(); ++k) {
    size_t end = k + 1 < starts.size() ? starts[k + 1] : text.size();
    std::string_view line(text.data() + starts[k], end - starts[k]);
    if (is_line_marker(line)) {
      if (!line.empty() && line.back() == '\n') out += '\n';
    } else {
      out += line;
    }
  }
  return out;
}

const std::set<std::string> kQualifiers = {"const", "volatile", "__global", "__local", "__constant", "__private",
                                           "__generic"};

std::string unqualified(const std::string& type) {
  std::istringstream words(type);
  std::string word, out;
  while (words >> word)
    if (!kQualifiers.count(word)) out += (out.empty() ? "" : " ") + word;
  return out;
}

// clang types `Pair{...}` as `__private Pair` but `bfloat(0)` and function
// results as plain `bfloat`, and rejects mixing even those two; __mf_rvalue
// yields the plain type, so every arm naming an address space is wrapped.
bool names_address_space(const std::string& type) {
  std::istringstream words(type);
  std::string word;
  while (words >> word)
    if (word.rfind("__", 0) == 0 && kQualifiers.count(word)) return true;
  return false;
}

// Whether clang's spelling of a type is a vector: `half
// __attribute__((ext_vector_type(4)))`, a typedef such as `half4`, or
// `metal::vec<half, 2>` (MLX's fft/radix.h).
bool is_vector_type(const std::string& type) {
  static const std::regex attribute(R"(^(?:const )?(\w+) __attribute__\(\(ext_vector_type\(\d+\)\)\)$)");
  static const std::regex name(R"(^(?:const )?(float|half|int|uint|short|ushort|char|uchar|long|ulong)[234]$)");
  static const std::regex vec(R"(^(?:const )?(?:(?:metal::)?vec|__mf_ext_vec)<\w+, ?\d+>$)");
  return std::regex_match(type, attribute) || std::regex_match(type, name) || std::regex_match(type, vec);
}

// The text of a diagnostic's operand range on one line; nullopt if it spans
// lines (a line marker could be among them) or is out of range.
std::optional<std::string> operand_text(const std::string& text, const std::vector<size_t>& starts, Position begin,
                                        Position end) {
  if (begin.line != end.line || begin.line < 1 || size_t(begin.line) > starts.size() || begin.column < 1 ||
      end.column <= begin.column)
    return std::nullopt;
  size_t at = starts[begin.line - 1] + size_t(begin.column - 1), n = size_t(end.column - begin.column);
  if (at + n > text.size() || text.substr(at, n).find('\n') != std::string::npos) return std::nullopt;
  return text.substr(at, n);
}

// The expressions to wrap for the errors clang reported that are of the
// kinds above, or nullopt if none is. Errors of other kinds are left alone:
// they are often consequences of a repairable one (a substitution failure
// where a default template argument instantiates MLX's loader with its
// conditional), and the repaired text is used only if it then compiles
// (the caller reports the original errors otherwise).
std::optional<std::set<Wrap>> rejected_expressions(const std::string& diagnostics, const std::string& file,
                                                   const std::string& text) {
  const std::vector<size_t> starts = line_starts(text);
  // file:L:C:{L:C-L:C}{L:C-L:C}: error: MESSAGE (one range per operand)
  static const std::regex error_line(R"(^(.*):\d+:\d+:((?:\{\d+:\d+-\d+:\d+\})*): (?:fatal )?error: (.*)$)");
  static const std::regex incompatible(
      R"(^incompatible operand types \('([^']*)'(?: \(aka '([^']*)'\))? and '([^']*)'(?: \(aka '([^']*)'\))?\)$)");
  // The same conditional when the class converts to many types (MLX's
  // complex64_t, whose templated conversion operators and address-space
  // constructors make both arms convertible to several common types).
  static const std::regex ambiguous(
      R"(^conditional expression is ambiguous; '([^']*)' and '([^']*)' can be converted to several common types$)");
  static const std::regex scalar_rank(
      R"(^scalar operand type has greater rank than the type of the vector element\. )"
      R"(\('([^']*)'(?: \(vector of \d+ '[^']*' values\)| \(aka '([^']*)'\))? and )"
      R"('([^']*)'(?: \(vector of \d+ '[^']*' values\)| \(aka '([^']*)'\))?\)$)");
  static const std::regex assigned_bfloat(
      R"(^assigning to '([^']*)'(?: \(aka '([^']*)'\))? from incompatible type '([^']*)'(?: \(aka '([^']*)'\))?$)");
  static const std::regex range(R"(\{(\d+):(\d+)-(\d+):(\d+)\})");
  // A call no candidate accepts, with a note per candidate; the notes of the
  // braced lists clang cannot convert to a vector parameter carry the list's range.
  static const std::regex no_match(R"(^no matching (?:function|member function|constructor) for .*$)");
  static const std::regex note_line(R"(^(.*):\d+:\d+:((?:\{\d+:\d+-\d+:\d+\})*): note: (.*)$)");
  static const std::regex list_to_vector(
      R"(^candidate .*not viable: cannot convert initializer list argument to '[^']*')"
      R"((?: \(vector of \d+ '[^']*' values\)| \(aka '[^']*__attribute__\(\(ext_vector_type\(\d+\)\)\)'\))$)");
  auto ranges_of = [](const std::string& ranges) {
    std::vector<Wrap> out;
    for (std::sregex_iterator r(ranges.begin(), ranges.end(), range), end; r != end; ++r)
      out.push_back(Wrap{{std::stoi((*r)[1]), std::stoi((*r)[2])}, {std::stoi((*r)[3]), std::stoi((*r)[4])}, ""});
    return out;
  };
  std::set<Wrap> wraps;
  std::vector<std::string> lines;
  {
    std::istringstream stream(diagnostics);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
  }
  bool any_error = false;
  for (size_t l = 0; l < lines.size(); ++l) {
    const std::string& line = lines[l];
    std::smatch m, types;
    if (!std::regex_match(line, m, error_line)) continue;
    any_error = true;
    if (m[1] != file) continue;
    const std::string message = m[3], ranges = m[2];
    if (std::regex_match(message, no_match)) {
      bool repaired = false;
      for (size_t n = l + 1; n < lines.size() && !std::regex_match(lines[n], m, error_line); ++n) {
        if (!std::regex_match(lines[n], m, note_line) || m[1] != file) continue;
        const std::string note = m[3];
        std::vector<Wrap> list = ranges_of(m[2]);
        if (list.size() != 1 || !std::regex_match(note, list_to_vector)) continue;
        list[0].prefix = "__mf_braced_vector";
        list[0].suffix = "";
        wraps.insert(list[0]);
        repaired = true;
      }
      if (!repaired) continue;
      continue;
    }
    std::vector<Wrap> operands = ranges_of(ranges);
    if (std::regex_match(message, types, assigned_bfloat)) {
      // The source of an assignment from a bfloat (one range): Metal converts
      // the builtin scalar implicitly (MLX's sort.h assigns a threadgroup
      // bfloat to a uint output).
      const std::string from = types[4].matched ? types[4] : types[3];
      if (operands.size() != 1 || unqualified(from) != "bfloat") continue;
      operands[0].prefix = "__mf_implicit_scalar(";
      wraps.insert(operands[0]);
      continue;
    }
    if (operands.size() != 2) continue;
    const bool is_incompatible = std::regex_match(message, types, incompatible);
    if (is_incompatible || std::regex_match(message, types, ambiguous)) {
      const std::string a = !is_incompatible ? types[1] : types[2].matched ? types[2] : types[1];
      const std::string b = !is_incompatible ? types[2] : types[4].matched ? types[4] : types[3];
      if (unqualified(a) != unqualified(b)) continue;  // genuinely different types: Metal rejects too
      bool wrapped = false;
      for (int k = 0; k < 2; ++k) {
        if (!names_address_space(k == 0 ? a : b)) continue;
        operands[k].prefix = "__mf_rvalue(";
        wraps.insert(operands[k]);
        wrapped = true;
      }
      if (!wrapped) continue;
    } else if (std::regex_match(message, types, scalar_rank)) {
      // Operands in source order; the one that is not a vector is the scalar.
      // It converts to the vector's element type, spelled through decltype
      // so that the text stays right in every instantiation of a template
      // (MLX's radix3<T>: `0.5 * a_1`, a_1 a vec<T, 2>, for float and half).
      const bool first = is_vector_type(types[1]) || (types[2].matched && is_vector_type(types[2])),
                 second = is_vector_type(types[3]) || (types[4].matched && is_vector_type(types[4]));
      if (first == second) continue;
      Wrap scalar = operands[first ? 1 : 0];
      const Wrap& vector = operands[first ? 0 : 1];
      std::optional<std::string> vector_text = operand_text(text, starts, vector.begin, vector.end),
                                 scalar_text = operand_text(text, starts, scalar.begin, scalar.end);
      if (!vector_text || !scalar_text) continue;
      scalar.prefix = "static_cast<__mf_scalar_operand_t<decltype(" + *vector_text + "), decltype(" + *scalar_text +
                      ")>>(";
      wraps.insert(scalar);
    } else {
      continue;
    }
  }
  if (!any_error || wraps.empty()) return std::nullopt;
  return wraps;
}

// Applies the wraps; nullopt if a position is out of range.
std::optional<std::string> apply_wraps(const std::string& text, const std::set<Wrap>& wraps) {
  // Non-marker lines are byte-identical in the checked text, so positions carry over.
  std::vector<size_t> starts = line_starts(text);
  auto offset = [&](Position p) -> std::optional<size_t> {
    if (p.line < 1 || size_t(p.line) > starts.size() || p.column < 1) return std::nullopt;
    size_t at = starts[p.line - 1] + size_t(p.column - 1);
    return at <= text.size() ? std::optional(at) : std::nullopt;
  };
  struct Insertion {
    size_t at;
    bool opens;
    std::string text;
  };
  std::vector<Insertion> insertions;
  for (const Wrap& wrap : wraps) {
    std::optional<size_t> begin = offset(wrap.begin), end = offset(wrap.end);
    if (!begin || !end || *end <= *begin) return std::nullopt;
    insertions.push_back({*begin, true, wrap.prefix});
    if (!wrap.suffix.empty()) insertions.push_back({*end, false, wrap.suffix});
  }
  // Insert back to front; at one offset openers go in first so that closers
  // (inserted later, hence in front of them) end the previous arm.
  std::sort(insertions.begin(), insertions.end(), [](const Insertion& x, const Insertion& y) {
    return x.at != y.at ? x.at > y.at : x.opens > y.opens;
  });
  std::string wrapped = text;
  for (const Insertion& i : insertions) wrapped.insert(i.at, i.text);
  return wrapped;
}

// clang stops at the outermost invalid expression, so a nested conditional
// shows up only once the inner one is repaired: a round per nesting level.
constexpr int kMaxRounds = 16;

}  // namespace

std::optional<std::string> repair_from_diagnostics(const std::string& lowered, const std::vector<std::string>& flags,
                                                   const std::string& scratch_file) {
  std::vector<std::string> argv = {toolchain().clang};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-fsyntax-only", "-w", "-ferror-limit=0", "-fno-color-diagnostics",
                           "-fdiagnostics-print-source-range-info", "-fno-caret-diagnostics", scratch_file});
  std::string text = lowered;
  for (int round = 0; round < kMaxRounds; ++round) {
    std::ofstream(scratch_file, std::ios::binary | std::ios::trunc) << without_line_markers(text);
    ProcessResult result = run_process(argv);
    std::filesystem::remove(scratch_file);
    if (result.exit_code == 0) return round == 0 ? std::nullopt : std::optional(text);
    std::optional<std::set<Wrap>> wraps = rejected_expressions(result.output, scratch_file, text);
    if (!wraps) return std::nullopt;
    std::optional<std::string> wrapped = apply_wraps(text, *wraps);
    if (!wrapped) return std::nullopt;
    text = std::move(*wrapped);
  }
  return std::nullopt;
}

}  // namespace mfagen::cpu
