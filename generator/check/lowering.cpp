#include "check/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "check/rules.h"

namespace mfagen::check {
namespace {

enum class Kind { identifier, number, literal, punct };

struct Token {
  Kind kind;
  size_t offset;
  size_t length;
  std::string_view text;
};

struct Directive {
  size_t offset;  // of '#'
  size_t length;  // to the end of the line (continuations included), newline excluded
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

constexpr std::string_view kLongPuncts[] = {"->*", "::", "->", "==", "!=", "<=", ">=", "&&", "||", "++", "--"};

// Splits MSL into tokens; comments and whitespace are dropped, preprocessor
// directives are collected whole.
void tokenize(std::string_view s, std::vector<Token>& tokens, std::vector<Directive>& directives) {
  size_t i = 0;
  bool line_start = true;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
      continue;
    }
    if (c == '#' && line_start) {
      size_t begin = i;
      while (i < s.size() && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        ++i;
      }
      directives.push_back({begin, i - begin});
      continue;
    }
    line_start = false;
    size_t begin = i;
    Kind kind = Kind::punct;
    if (ident_start(c)) {
      while (i < s.size() && ident_char(s[i])) ++i;
      kind = Kind::identifier;
      if (i < s.size() && (s[i] == '"' || s[i] == '\'')) {  // u8"..", L'x'
        std::string_view prefix = s.substr(begin, i - begin);
        if (prefix == "u8" || prefix == "u" || prefix == "U" || prefix == "L") c = s[i], kind = Kind::literal;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      while (i < s.size()) {
        char d = s[i];
        if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P')) {
          ++i;
          continue;
        }
        if (!ident_char(d) && d != '.' && d != '\'') break;
        ++i;
      }
      kind = Kind::number;
    } else if (c == '"' || c == '\'') {
      kind = Kind::literal;
    } else {
      size_t len = 1;
      for (std::string_view p : kLongPuncts)
        if (s.substr(i, p.size()) == p) {
          len = p.size();
          break;
        }
      i += len;
    }
    if (kind == Kind::literal) {
      char quote = s[i];
      ++i;
      while (i < s.size() && s[i] != quote && s[i] != '\n') i += s[i] == '\\' ? 2 : 1;
      if (i < s.size() && s[i] == quote) ++i;
    }
    tokens.push_back({kind, begin, i - begin, s.substr(begin, i - begin)});
  }
}

const std::map<std::string_view, std::string_view> kAddressSpaces = {
    {"device", "__global"}, {"constant", "__constant"}, {"threadgroup", "__local"}, {"thread", "__private"}};

// OpenCL keywords that are ordinary identifiers in MSL.
const std::set<std::string_view> kOpenClOnlyKeywords = {"global", "local", "generic", "pipe",
                                                        "read_only", "write_only", "read_write"};

// Standard C++ attributes stay as they are; any other [[...]] is Metal's.
const std::set<std::string_view> kStandardAttributes = {"noreturn", "carries_dependency", "deprecated",
                                                        "fallthrough", "nodiscard", "maybe_unused",
                                                        "likely", "unlikely", "no_unique_address"};

const std::set<std::string_view> kExpressionKeywords = {"return", "case", "co_return", "co_yield", "throw"};

bool is_vector_type_name(std::string_view name) {
  static const std::set<std::string, std::less<>> names = [] {
    std::set<std::string, std::less<>> out;
    for (const char* base : {"bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half",
                             "float", "bfloat"})
      for (int n = 2; n <= 4; ++n) out.insert(fmt::format("{}{}", base, n));
    return out;
  }();
  return names.contains(name);
}

bool allowed_header(std::string_view name) { return name == "metal_stdlib" || name.starts_with("metal_"); }

struct Edit {
  size_t offset;
  size_t length;
  std::string text;
};

class Lowering {
 public:
  explicit Lowering(std::string_view source) : source_(source) {
    tokenize(source, tokens_, directives_);
    in_attribute_.assign(tokens_.size(), false);
  }

  LoweredMsl run() {
    check_includes();
    lower_template_kernels();
    lower_attributes();
    check_std();
    lower_vector_syntax();
    map_keywords();
    return apply();
  }

 private:
  size_t count() const { return tokens_.size(); }
  std::string_view text(size_t k) const { return k < tokens_.size() ? tokens_[k].text : std::string_view(); }
  bool is(size_t k, std::string_view s) const { return k < tokens_.size() && tokens_[k].text == s; }
  bool is_identifier(size_t k) const { return k < tokens_.size() && tokens_[k].kind == Kind::identifier; }
  void replace(size_t k, std::string s) {
    edits_.push_back({tokens_[k].offset, tokens_[k].length, std::move(s)});
    replaced_.insert(k);
  }
  void insert_before(size_t k, std::string s) { edits_.push_back({tokens_[k].offset, 0, std::move(s)}); }

  size_t matching(size_t k) const {
    std::string_view open = text(k);
    std::string_view close = open == "(" ? ")" : open == "[" ? "]" : open == "{" ? "}" : ">";
    int depth = 0;
    for (size_t j = k; j < count(); ++j) {
      if (text(j) == open) ++depth;
      if (text(j) == close && --depth == 0) return j;
    }
    return count();
  }

  void finding(std::string_view rule, size_t offset, std::string message) {
    findings_.push_back({rule, offset, std::move(message)});
  }

  void check_includes() {
    for (const Directive& d : directives_) {
      std::string_view line = source_.substr(d.offset, d.length);
      size_t i = 1;
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (line.substr(i, 7) != "include" && line.substr(i, 6) != "import") continue;
      while (i < line.size() && ident_char(line[i])) ++i;
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      std::string_view header;
      if (i < line.size() && (line[i] == '<' || line[i] == '"')) {
        char close = line[i] == '<' ? '>' : '"';
        size_t end = line.find(close, i + 1);
        header = line.substr(i + 1, end == std::string_view::npos ? std::string_view::npos : end - i - 1);
      }
      if (allowed_header(header)) continue;
      finding(rules::kInclude, d.offset + std::min(i, line.size()),
              header.empty() ? std::string("only <metal_stdlib> and the <metal_*> headers may be included")
                             : fmt::format("'{}' is not a Metal header: only <metal_stdlib> and the <metal_*> "
                                           "headers may be included",
                                           header));
      // Blank the directive so that parsing goes on without it.
      std::string blank(d.length, ' ');
      for (size_t j = 0; j < d.length; ++j)
        if (source_[d.offset + j] == '\n') blank[j] = '\n';
      edits_.push_back({d.offset, d.length, blank});
    }
  }

  // Whether token k belongs to a declaration that starts with `template`:
  // a function template or an explicit instantiation. Walks back to the end
  // of the previous declaration (`;`, `{` or `}` outside brackets).
  bool in_template_declaration(size_t k) const {
    int depth = 0;
    size_t j = k;
    while (j > 0) {
      --j;
      std::string_view t = text(j);
      if (t == ")" || t == "]") ++depth;
      if (t == "(" || t == "[") --depth;
      if (depth == 0 && (t == ";" || t == "{" || t == "}")) return is(j + 1, "template");
    }
    return is(0, "template");
  }

  // Metal allows templated kernels, instantiated under host names:
  // `template <class T> kernel void f(...)` and `template [[host_name("f_float")]]
  // kernel void f<float>(...)`. OpenCL's `kernel` does not, so in a template
  // declaration the keyword becomes the msl:kernel annotation that is_kernel()
  // reads (and clang's kernel-only checks are the rules' job there).
  void lower_template_kernels() {
    for (size_t k = 0; k < count(); ++k) {
      if (!is(k, "kernel") || (k > 0 && (is(k - 1, ".") || is(k - 1, "->") || is(k - 1, "::")))) continue;
      if (in_template_declaration(k)) replace(k, kKernelAnnotation);
    }
  }
  static constexpr const char* kKernelAnnotation = "__attribute__((annotate(\"msl:kernel\")))";

  // [[a, b(x)]] -> __attribute__((annotate("msl:a"), annotate("msl:b(x)"))).
  void lower_attributes() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (!is(k, "[") || !is(k + 1, "[")) continue;
      size_t end = matching(k);
      if (end >= count() || !is(end - 1, "]")) continue;
      for (size_t j = k; j <= end; ++j) in_attribute_[j] = true;
      std::vector<std::string> names, texts;
      size_t begin = k + 2;
      int depth = 0;
      for (size_t j = k + 2; j < end; ++j) {
        if (is(j, "(") || is(j, "[") || is(j, "{")) ++depth;
        if (is(j, ")") || is(j, "]") || is(j, "}")) --depth;
        if ((depth == 0 && is(j, ",")) || (j == end - 1 && depth == -1)) {
          if (j > begin) {
            names.emplace_back(text(begin));
            texts.emplace_back(source_.substr(tokens_[begin].offset,
                                              tokens_[j - 1].offset + tokens_[j - 1].length - tokens_[begin].offset));
          }
          begin = j + 1;
        }
      }
      bool standard = !names.empty() && std::all_of(names.begin(), names.end(), [&](const std::string& n) {
        return kStandardAttributes.contains(n) || n == "clang" || n == "gnu";
      });
      if (standard) {
        k = end;
        continue;
      }
      std::string lowered;
      std::string annotations;
      bool function_constant = false;
      for (size_t a = 0; a < names.size(); ++a) {
        if (names[a] == "kernel") {
          lowered += in_template_declaration(k) ? std::string(kKernelAnnotation) + " " : "kernel ";
          continue;
        }
        if (names[a] == "function_constant") function_constant = true;
        std::string escaped;
        for (char c : texts[a]) {
          if (c == '"' || c == '\\') escaped += '\\';
          escaped += c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
        }
        annotations += fmt::format("{}annotate(\"msl:{}\")", annotations.empty() ? "" : ", ", escaped);
      }
      if (!annotations.empty()) lowered += fmt::format("__attribute__(({}))", annotations);
      size_t span_end = tokens_[end].offset + tokens_[end].length;
      edits_.push_back({tokens_[k].offset, span_end - tokens_[k].offset, lowered});
      // OpenCL requires an initializer on program-scope constants.
      if (function_constant && is(end + 1, ";")) insert_before(end + 1, " = {}");
      k = end;
    }
  }

  void check_std() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (in_attribute_[k] || !is(k, "std") || !is(k + 1, "::")) continue;
      if (k > 0 && (is(k - 1, "::") || is(k - 1, ".") || is(k - 1, "->"))) continue;
      std::string name = is_identifier(k + 2) ? fmt::format("std::{}", text(k + 2)) : "std::";
      finding(rules::kStdLibrary, tokens_[k].offset,
              fmt::format("'{}': Metal has no C++ standard library (use the metal:: equivalent)", name));
    }
    for (size_t k = 0; k + 2 < count(); ++k)
      if (is(k, "using") && is(k + 1, "namespace") && is(k + 2, "std"))
        finding(rules::kStdLibrary, tokens_[k + 2].offset, "'using namespace std': Metal has no C++ standard library");
  }

  // float4(...) -> ::metal::__mf_vec_ctor<float4>(...);  (float4)x -> ::metal::__mf_vec_cast<float4>{} ->* x
  void lower_vector_syntax() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (in_attribute_[k]) continue;
      if (lower_vec_template(k)) continue;
      if (is(k, "(") && is_vector_type_name(text(k + 1)) && is(k + 2, ")") && is_cast_context(k, k + 3)) {
        replace(k, "");
        replace(k + 1, fmt::format("::metal::__mf_vec_cast<{}>{{}} ->*", text(k + 1)));
        replace(k + 2, "");
        k += 2;
        continue;
      }
      if (!is_vector_type_name(text(k)) || !is(k + 1, "(")) continue;
      if (k > 0 && (is(k - 1, "operator") || is(k - 1, ".") || is(k - 1, "->"))) continue;
      bool qualified = k >= 2 && is(k - 1, "::") && is(k - 2, "metal");
      if (k >= 1 && is(k - 1, "::") && !qualified) continue;
      replace(k, qualified ? fmt::format("__mf_vec_ctor<::metal::{}>", text(k))
                           : fmt::format("::metal::__mf_vec_ctor<{}>", text(k)));
    }
  }

  bool lower_vec_template(size_t k) {
    size_t type = is(k, "(") ? k + 1 : k;
    if (!is(type, "vec") || !is(type + 1, "<") || (type >= 1 && (is(type - 1, ".") || is(type - 1, "->"))))
      return false;
    size_t close = matching(type + 1);
    if (close >= count()) return false;
    bool qualified = type >= 2 && is(type - 1, "::") && is(type - 2, "metal");
    if (type == k + 1) {
      if (!is(close + 1, ")") || !is_cast_context(k, close + 2)) return false;
      replace(k, "");
      replace(type, "::metal::__mf_vec_cast<::metal::vec");
      replace(close, ">>{} ->*");
      replace(close + 1, "");
      return true;
    }
    if (!is(close + 1, "(") || (type >= 1 && is(type - 1, "operator"))) return false;
    replace(type, qualified ? "__mf_vec_ctor<::metal::vec" : "::metal::__mf_vec_ctor<::metal::vec");
    replace(close, ">>");
    return true;
  }

  bool is_cast_context(size_t k, size_t next) const {
    if (k == 0) return false;
    std::string_view prev = text(k - 1);
    std::string_view after = text(next);
    if (after == ";" || after == ")" || after == "," || after == "]" || after == "{" || after.empty()) return false;
    if (is_identifier(k - 1) && !kExpressionKeywords.contains(prev)) return false;
    if (prev == ")" || prev == "]") return false;
    return true;
  }

  void map_keywords() {
    for (size_t k = 0; k < count(); ++k) {
      if (in_attribute_[k] || !is_identifier(k) || replaced_.contains(k)) continue;
      if (k > 0 && (is(k - 1, ".") || is(k - 1, "->"))) continue;
      auto space = kAddressSpaces.find(text(k));
      if (space != kAddressSpaces.end()) replace(k, std::string(space->second));
      else if (kOpenClOnlyKeywords.contains(text(k))) replace(k, fmt::format("__mf_id_{}", text(k)));
    }
  }

  LoweredMsl apply() {
    std::stable_sort(edits_.begin(), edits_.end(), [](const Edit& a, const Edit& b) { return a.offset < b.offset; });
    LoweredMsl out;
    out.text.reserve(source_.size() + source_.size() / 4);
    out.origin.reserve(out.text.capacity());
    size_t at = 0;
    auto copy_to = [&](size_t end) {
      for (; at < end; ++at) {
        out.text += source_[at];
        out.origin.push_back(static_cast<uint32_t>(at));
      }
    };
    for (const Edit& e : edits_) {
      if (e.offset < at) continue;  // overlapping edit (never produced on purpose)
      copy_to(e.offset);
      for (char c : e.text) {
        out.text += c;
        out.origin.push_back(static_cast<uint32_t>(e.offset));
      }
      // Keep line numbers: a replaced span's newlines stay.
      for (size_t j = e.offset; j < e.offset + e.length; ++j)
        if (source_[j] == '\n' && e.text.find('\n') == std::string::npos) {
          out.text += '\n';
          out.origin.push_back(static_cast<uint32_t>(j));
        }
      at = e.offset + e.length;
    }
    copy_to(source_.size());
    out.origin.push_back(static_cast<uint32_t>(source_.size()));
    out.findings = std::move(findings_);
    return out;
  }

  std::string_view source_;
  std::vector<Token> tokens_;
  std::vector<Directive> directives_;
  std::vector<bool> in_attribute_;
  std::set<size_t> replaced_;
  std::vector<Edit> edits_;
  std::vector<LexicalFinding> findings_;
};

}  // namespace

LoweredMsl lower_for_check(std::string_view source) { return Lowering(source).run(); }

LineColumn line_column(std::string_view text, size_t offset) {
  LineColumn lc;
  offset = std::min(offset, text.size());
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++lc.line;
      lc.column = 1;
    } else {
      ++lc.column;
    }
  }
  return lc;
}

}  // namespace mfagen::check
