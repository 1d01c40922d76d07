#include "check/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "check/rules.h"
#include "mfagen/msl/coherence_qualifiers.h"
#include "mfagen/msl/constexpr_constants.h"
#include "mfagen/msl/decltype_of_locals.h"
#include "mfagen/msl/dependent_casts.h"
#include "mfagen/msl/function_pointers.h"
#include "mfagen/msl/literal_types.h"
#include "mfagen/msl/opencl_keywords.h"
#include "mfagen/msl/redundant_constexpr_definitions.h"
#include "mfagen/msl/short_vector_braces.h"
#include "mfagen/msl/token_view.h"
#include "mfagen/msl/vec_alias_templates.h"
#include "mfagen/msl/vec_partial_specializations.h"
#include "mfagen/msl/vector_syntax.h"

namespace mfagen::check {
namespace {

using msl::TokenKind;
using msl::TokenView;

const std::map<std::string_view, std::string_view> kAddressSpaces = {
    {"device", "__global"}, {"constant", "__constant"}, {"threadgroup", "__local"}, {"thread", "__private"}};

// Standard C++ attributes stay as they are; any other [[...]] is Metal's.
const std::set<std::string_view> kStandardAttributes = {"noreturn", "carries_dependency", "deprecated",
                                                        "fallthrough", "nodiscard", "maybe_unused",
                                                        "likely", "unlikely", "no_unique_address"};

constexpr std::string_view kKernelAnnotation = "__attribute__((annotate(\"msl:kernel\")))";

// Metal's own headers, and MetalPerformancePrimitives (Metal 4 TensorOps'
// matmul2d, DESIGN.md section 15) through its umbrella header.
constexpr std::string_view kTensorOpsHeader = "MetalPerformancePrimitives/MetalPerformancePrimitives.h";
bool allowed_header(std::string_view name) {
  return name == "metal_stdlib" || name.starts_with("metal_") || name == kTensorOpsHeader;
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The header an `#include <h>` / `#include "h"` / `#import` directive names
// ("" for another directive or no header), and the offset of the header in
// the directive.
struct IncludedHeader {
  bool is_include = false;
  bool quoted = false;
  std::string_view header;
  size_t offset = 0;
};
IncludedHeader included_header(std::string_view line) {
  size_t i = 1;
  while (i < line.size() && is_blank(line[i])) ++i;
  if (line.substr(i, 7) != "include" && line.substr(i, 6) != "import") return {};
  while (i < line.size() && is_word_char(line[i])) ++i;
  while (i < line.size() && is_blank(line[i])) ++i;
  IncludedHeader out;
  out.is_include = true;
  out.offset = std::min(i, line.size());
  if (i < line.size() && (line[i] == '<' || line[i] == '"')) {
    out.quoted = line[i] == '"';
    size_t end = line.find(line[i] == '<' ? '>' : '"', i + 1);
    out.header = line.substr(i + 1, end == std::string_view::npos ? std::string_view::npos : end - i - 1);
  }
  return out;
}

// `msl:NAME(ARGS)` as a string literal's contents: quotes and backslashes
// escaped, line breaks and tabs as spaces (the annotation stays on its line).
std::string annotation_text(std::string_view attribute) {
  std::string out;
  for (char c : attribute) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
  }
  return out;
}

class Lowering {
 public:
  // `macro_body`: the text is a #define's, from its name on (lower_macro_bodies).
  Lowering(std::string_view source, const HeaderFound& found, bool macro_body = false)
      : view_(source), found_(found), macro_body_(macro_body) {}

  LoweredMsl run() {
    if (!macro_body_) check_includes();
    lower_template_kernels();
    lower_attributes();
    check_std();
    // Before the vector syntax, as in the cpu backend's lowering.
    msl::lower_short_vector_braces(view_);
    msl::lower_dependent_casts(view_, [&](size_t k, const std::string& message) {
      finding(rules::kCpuLowering, view_.offset(k), message);
    });
    msl::lower_vector_syntax(view_, [&](msl::VectorSyntaxProblem problem, size_t k, const std::string& message) {
      // The other problems leave text clang parses as written; this one is
      // valid Metal the cpu backend (where kernels are tested) cannot run.
      if (problem == msl::VectorSyntaxProblem::unary_operator_before_cast)
        finding(rules::kCpuLowering, view_.offset(k), message);
    });
    check_threadgroup_initializers();
    msl::drop_coherence_qualifiers(view_);
    msl::drop_redundant_constexpr_member_definitions(view_);
    msl::lower_constexpr_constants(view_);
    msl::lower_vec_partial_specializations(view_);
    msl::lower_vec_in_alias_templates(view_);
    msl::lower_decltype(view_);
    msl::lower_function_pointer_template_parameters(view_);
    // The prelude's function pointers extension admits them in clang too.
    for (size_t k : msl::virtual_specifiers(view_))
      finding(rules::kVirtualFunction, view_.offset(k), msl::kVirtualFunctionMessage);
    map_address_spaces();
    msl::rename_opencl_only_keywords(view_);
    msl::type_floating_literals_as_float(view_);
    if (!macro_body_) lower_macro_bodies();
    msl::TextWithOrigin lowered = view_.joined_with_origin();
    return LoweredMsl{std::move(lowered.text), std::move(lowered.origin), std::move(findings_)};
  }

 private:
  size_t count() const { return view_.count(); }
  std::string_view text(size_t k) const { return view_.text(k); }
  bool is(size_t k, std::string_view s) const { return view_.is(k, s); }
  bool after_member_access(size_t k) const { return k > 0 && (is(k - 1, ".") || is(k - 1, "->")); }

  void finding(std::string_view rule, size_t offset, std::string message) {
    findings_.push_back({rule, offset, std::move(message)});
  }

  // The checker reads files before preprocessing, where Metal's constructs
  // may sit in macros that the cpu backend sees expanded (MLX's
  // instantiate_kernel: `template [[host_name(name)]] [[kernel]]
  // decltype(func<...>) func<...>;`; bf16_math.h's functions with `thread
  // int&` parameters). Each #define, from its name on, is lowered by the
  // same passes as code; its findings keep their places in the file. The
  // rewritten directive stays one token: a diagnostic inside it is reported
  // at the #define's first line.
  void lower_macro_bodies() {
    for (size_t i = 0; i < view_.tokens().size(); ++i) {
      const msl::Token& token = view_.tokens()[i];
      if (token.kind != TokenKind::directive) continue;
      const size_t body = msl::define_body(token.text);
      if (body == std::string_view::npos) continue;
      const std::string head = token.text.substr(0, body);
      // Every line break of the body is a backslash continuation: lowered as
      // whitespace (a pass may empty the tokens around it, as an attribute
      // list's), then continued again.
      std::string text = token.text.substr(body);
      for (size_t n = text.find("\\\n"); n != std::string::npos; n = text.find("\\\n", n + 1)) text[n] = ' ';
      LoweredMsl lowered = Lowering(text, found_, true).run();
      const size_t at = token.offset + body;
      for (LexicalFinding& f : lowered.findings) finding(f.rule, at + f.offset, std::move(f.message));
      if (lowered.text == text) continue;
      std::string continued = head;
      for (char c : lowered.text) continued += c == '\n' ? std::string("\\\n") : std::string(1, c);
      view_.replace_token(i, std::move(continued));
    }
  }

  // `threadgroup float t[] = {0, 1};`: Metal sizes the array from its
  // initializer, which the cpu backend does not apply (runtime/backends/cpu/
  // msl_lowering.cpp, lower_threadgroup_declarations), so it cannot size it.
  void check_threadgroup_initializers() {
    for (size_t k = 1; k < count(); ++k) {
      if (!is(k, "threadgroup") || view_.in_attribute(k) || !(is(k - 1, "{") || is(k - 1, "}") || is(k - 1, ";")))
        continue;
      int depth = 0;
      bool initialized = false;
      for (size_t j = k + 1; j < count() && !(depth == 0 && is(j, ";")); ++j) {
        std::string_view t = text(j);
        if (t == "(" || t == "[" || t == "{") ++depth;
        if (t == ")" || t == "]" || t == "}") --depth;
        if (depth == 0 && t == "=") initialized = true;
        if (depth == 0 && t == ",") initialized = false;
        if (is(j, "[") && is(j + 1, "]") && depth == 1 && !initialized) {
          size_t e = j + 2;
          while (is(e, "[")) e = view_.find_matching(e) + 1;
          if (is(e, "="))
            finding(rules::kCpuLowering, view_.offset(j),
                    "a threadgroup array sized by its initializer: the cpu backend does not apply threadgroup "
                    "initializers, so it needs the size written");
        }
      }
    }
  }

  // An include of anything but <metal_*> is a finding, and its directive is
  // blanked (newlines kept) so that parsing goes on without it.
  void check_includes() {
    const std::vector<msl::Token>& tokens = view_.tokens();
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i].kind != TokenKind::directive) continue;
      const std::string line = tokens[i].text;
      IncludedHeader include = included_header(line);
      if (!include.is_include || allowed_header(include.header)) continue;
      // The file's own headers, as Metal's compiler finds them.
      if (!include.header.empty() && found_ && found_(include.header, include.quoted)) continue;
      finding(rules::kInclude, tokens[i].offset + include.offset,
              include.header.empty()
                  ? fmt::format("only <metal_stdlib>, the <metal_*> headers, <{}> and the file's own headers may be "
                                "included",
                                kTensorOpsHeader)
                  : fmt::format("'{}' is not a Metal header, and no such file is {}: only <metal_stdlib>, the "
                                "<metal_*> headers, <{}> and the file's own headers may be included",
                                include.header,
                                include.quoted ? "next to the including file or in an -I directory"
                                               : "in an -I directory",
                                kTensorOpsHeader));
      std::string blank(line.size(), ' ');
      for (size_t j = 0; j < line.size(); ++j)
        if (line[j] == '\n') blank[j] = '\n';
      view_.replace_token(i, std::move(blank));
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
  // `[[kernel]]` is lower_attributes' job.
  void lower_template_kernels() {
    for (size_t k = 0; k < count(); ++k) {
      if (!is(k, "kernel") || view_.in_attribute(k) || after_member_access(k) || (k > 0 && is(k - 1, "::"))) continue;
      if (!in_template_declaration(k)) continue;
      view_.replace(k, std::string(kKernelAnnotation));
      lower_threadgroup_variables_of_template_kernel(k);
    }
  }

  // Whether `thread` at k begins `thread const TYPE&` or `thread TYPE
  // const&`: names, `::` and template arguments, a `const`, then `&`.
  bool declares_const_reference(size_t k) const {
    // Not `const thread T&`: MLX's NAX fragments take `const thread
    // dtype_frag_t<T>&` through the vec-alias deduction
    // (mfagen/msl/vec_alias_templates.h), which a generic argument defeats.
    bool is_const = false;
    size_t j = k + 1;
    for (; j < count(); ++j) {
      if (is(j, "const")) {
        is_const = true;
      } else if (is(j, "<")) {
        j = view_.find_matching(j);
        if (j >= count()) return false;
      } else if (!view_.is_identifier(j) && !is(j, "::")) {
        break;
      }
    }
    return is_const && is(j, "&");
  }

  // Whether the parameter list closing at `close` declares a constructor:
  // its name follows no return type (`constexpr complex_t(T x) thread`,
  // after a specifier, or first in a member declaration).
  bool declares_constructor(size_t close) const {
    size_t open = close;
    for (int depth = 0; open > 0; --open) {
      if (is(open, ")")) ++depth;
      if (is(open, "(") && --depth == 0) break;
    }
    if (open < 2 || !view_.is_identifier(open - 1) || is(open - 1, "operator")) return false;
    static const std::set<std::string_view> before = {"constexpr", "explicit", "inline", ";", "{", "}", ":"};
    if (before.contains(text(open - 2))) return true;
    // `METAL_FUNC MMATile() thread {}` (MLX): a specifier macro before the
    // name; the name is then the nearest enclosing class's.
    for (size_t j = open - 1; j-- > 0;)
      if ((is(j, "struct") || is(j, "class")) && view_.is_identifier(j + 1)) return text(j + 1) == text(open - 1);
    return false;
  }

  // A template kernel is a plain function to clang (above), where OpenCL
  // forbids variables in the local address space ("non-kernel function
  // variable cannot be declared in local address space"); Metal allows
  // them at kernel scope (llama.cpp's kernel_lightning_indexer, MLX's steel
  // kernels), and the cpu backend makes every one a reference to the
  // threadgroup's storage (runtime/backends/cpu/msl_lowering.cpp,
  // lower_threadgroup_declarations). So does the checker, for one declarator
  // at the start of a statement of the body (its initializer dropped, as there):
  //   threadgroup half sk[N];  ->  __attribute__((annotate("msl:threadgroup_variable"))) __local
  //                                half (&sk)[N] = ::__mf_check_threadgroup_storage<decltype(sk)>();
  // (declared in the prelude; signatures.cpp counts its bytes). Other forms
  // stay as written, and clang's error with them.
  void lower_threadgroup_variables_of_template_kernel(size_t kernel) {
    const size_t open = view_.declaration_body(kernel + 1);
    if (open >= count()) return;
    const size_t close = view_.find_matching(open);
    if (close >= count()) return;
    size_t lowered_end = close;  // the `;` of the declaration lowered last (its text is rewritten)
    for (size_t k = open + 1; k < close; ++k) {
      // Nested blocks are entered: `if (lsize.y > 1) { threadgroup U
      // shared[N]; ... }` (MLX's reduce_col.h), as in the cpu backend.
      if (is(k, "(") || is(k, "[")) {
        k = std::min(view_.find_matching(k), close);
        continue;
      }
      const bool statement_start = is(k - 1, "{") || is(k - 1, "}") || is(k - 1, ";") || k - 1 == lowered_end;
      if (!is(k, "threadgroup") || view_.in_attribute(k) || !statement_start) continue;
      size_t end = k + 1, first_bracket = 0, initializer = 0;
      bool single = true;
      // Angle brackets count as brackets, as in the cpu backend's lowering:
      // a comma between template arguments (`threadgroup vec<T, 2> buf[N];`,
      // MLX's fft.h) separates no declarators.
      for (int depth = 0; end < close && !(depth == 0 && is(end, ";")); ++end) {
        if (is(end, "(") || is(end, "[") || is(end, "{") || is(end, "<")) {
          if (depth == 0 && is(end, "[") && !first_bracket && !initializer) first_bracket = end;
          ++depth;
        }
        if (is(end, ")") || is(end, "]") || is(end, "}") || is(end, ">")) --depth;
        if (is(end, ">>")) depth -= 2;
        if (depth == 0 && is(end, ",")) single = false;
        if (depth == 0 && is(end, "=") && !initializer) initializer = end;
      }
      const size_t declarator_end = initializer ? initializer : end;
      const size_t name = (first_bracket ? first_bracket : declarator_end) - 1;
      if (!single || end >= close || name <= k + 1 || !view_.is_identifier(name) || is(name - 1, "*") ||
          is(name - 1, "&") || (first_bracket && is(first_bracket + 1, "]")))
        continue;  // an array sized by its initializer is check_threadgroup_initializers' finding
      // An initializer is not applied, as in the cpu backend
      // (`threadgroup float local_buffer[32] = {0};`, MLX's layer_norm; the
      // non-template case is accepted in check.cpp, err_local_cant_init).
      for (size_t j = declarator_end; j < end; ++j) view_.replace(j, "");
      const std::string variable(text(name));
      view_.replace(k, "__attribute__((annotate(\"msl:threadgroup_variable\"))) __local");
      view_.replace(name, "(&" + variable + ")");
      view_.replace(end, " = ::__mf_check_threadgroup_storage<decltype(" + variable + ")>();");
      k = lowered_end = end;
    }
  }

  // [[a, b(x)]] -> __attribute__((annotate("msl:a"), annotate("msl:b(x)"))),
  // [[kernel]] -> kernel. The `[` takes the lowered text; the attribute's
  // other tokens become empty, whitespace and comments between them stay (so
  // do the lines).
  void lower_attributes() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (!is(k, "[") || !is(k + 1, "[") || !view_.in_attribute(k)) continue;
      size_t end = view_.find_matching(k);
      std::vector<std::string_view> names, texts;
      size_t begin = k + 2;
      int depth = 0;
      for (size_t j = k + 2; j < end; ++j) {
        if (is(j, "(") || is(j, "[") || is(j, "{")) ++depth;
        if (is(j, ")") || is(j, "]") || is(j, "}")) --depth;
        if ((depth == 0 && is(j, ",")) || (j == end - 1 && depth == -1)) {
          if (j > begin) {
            names.push_back(text(begin));
            texts.push_back(view_.original_text(begin, j));
          }
          begin = j + 1;
        }
      }
      bool standard = !names.empty() && std::all_of(names.begin(), names.end(), [](std::string_view n) {
        return kStandardAttributes.contains(n) || n == "clang" || n == "gnu";
      });
      if (!standard) lower_attribute_list(k, end, names, texts);
      k = end;
    }
  }

  void lower_attribute_list(size_t open, size_t close, const std::vector<std::string_view>& names,
                            const std::vector<std::string_view>& texts) {
    std::string lowered;
    std::string annotations;
    bool function_constant = false;
    for (size_t a = 0; a < names.size(); ++a) {
      if (names[a] == "kernel") {
        const bool in_template = in_template_declaration(open);
        lowered += in_template ? fmt::format("{} ", kKernelAnnotation) : "kernel ";
        if (in_template) lower_threadgroup_variables_of_template_kernel(close);
        continue;
      }
      if (names[a] == "function_constant") function_constant = true;
      const std::string_view attribute = texts[a];
      const size_t open_paren = attribute.find('('), close_paren = attribute.rfind(')');
      if (names[a] == "host_name" && open_paren != std::string_view::npos && close_paren > open_paren) {
        // The name as an expression, so that a macro's `"f_" #type` is
        // stringified and concatenated (ast_support.cpp reads it back).
        // Line breaks as spaces: the annotation stays on its line.
        std::string name(attribute.substr(open_paren + 1, close_paren - open_paren - 1));
        std::replace_if(name.begin(), name.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
        annotations += fmt::format("{}annotate(\"msl:host_name\", {})", annotations.empty() ? "" : ", ", name);
        continue;
      }
      annotations += fmt::format("{}annotate(\"msl:{}\")", annotations.empty() ? "" : ", ", annotation_text(attribute));
    }
    if (!annotations.empty()) lowered += fmt::format("__attribute__(({}))", annotations);
    // `uint3 tgpig[[threadgroup_position_in_grid]]` (ggml): no space before
    // the list, and the lowered text must not join the parameter's name.
    if (!lowered.empty()) lowered.insert(0, " ");
    view_.replace(open, std::move(lowered));
    for (size_t j = open + 1; j <= close; ++j) view_.replace(j, "");
    // OpenCL requires an initializer on program-scope constants.
    if (function_constant && is(close + 1, ";")) view_.insert_before(close + 1, " = {}");
  }

  void check_std() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (view_.in_attribute(k) || !is(k, "std") || !is(k + 1, "::")) continue;
      if (k > 0 && (is(k - 1, "::") || after_member_access(k))) continue;
      std::string name = view_.is_identifier(k + 2) ? fmt::format("std::{}", text(k + 2)) : "std::";
      finding(rules::kStdLibrary, view_.offset(k),
              fmt::format("'{}': Metal has no C++ standard library (use the metal:: equivalent)", name));
    }
    for (size_t k = 0; k + 2 < count(); ++k)
      if (is(k, "using") && is(k + 1, "namespace") && is(k + 2, "std"))
        finding(rules::kStdLibrary, view_.offset(k + 2), "'using namespace std': Metal has no C++ standard library");
  }

  // device / constant / threadgroup / thread -> __global / __constant / __local / __private.
  void map_address_spaces() {
    for (size_t k = 0; k < count(); ++k) {
      if (view_.in_attribute(k) || !view_.is_identifier(k) || view_.rewritten(k) || after_member_access(k)) continue;
      // Metal's constant address space is read-only: `constant T*` points to
      // const T, so a `constant float[16]` passes for a `constant float*`
      // parameter (llama.cpp's kvalues_iq4nl_f). The cpu backend lowers it to
      // `const __constant` alike (runtime/backends/cpu/msl_lowering.cpp,
      // map_keywords), but as a method qualifier (`T f() const constant`,
      // MLX's complex64_t) it takes no extra const.
      const bool method_qualifier = k > 0 && (is(k - 1, ")") || is(k - 1, "const"));
      if (is(k, "constant") && !method_qualifier) {
        view_.replace(k, "const __constant");
        continue;
      }
      // `complex_t(T re, T im) thread : ...` (MLX's complex.h): a
      // constructor for objects in thread memory. The cpu backend drops the
      // qualifier (its objects are generic), and a __private constructor
      // would construct nothing clang's temporaries can use. A method's
      // `thread` stays __private: its `this` is in thread memory, so that
      // `thread T& frag_at() thread { return member; }` (MLX's steel
      // fragments) binds a thread reference to a thread object.
      if (is(k, "thread") && method_qualifier && is(k - 1, ")") && declares_constructor(k - 1)) {
        view_.replace(k, "");
        continue;
      }
      // `thread const short& lbk` (MLX's steel gemm.h, called with an int):
      // Metal binds a thread const reference to a temporary, which C++ for
      // OpenCL materializes outside __private ("cannot bind to a temporary
      // object because of address space mismatch"). Such a reference is
      // generic, as on the cpu backend; the generic-pointer rule still
      // reports a device or threadgroup object bound to it.
      if (is(k, "thread") && declares_const_reference(k)) {
        view_.replace(k, "");
        continue;
      }
      auto space = kAddressSpaces.find(text(k));
      if (space != kAddressSpaces.end()) view_.replace(k, std::string(space->second));
    }
  }

  TokenView view_;
  const HeaderFound& found_;
  bool macro_body_ = false;
  std::vector<LexicalFinding> findings_;
};

}  // namespace

LoweredMsl lower_for_check(std::string_view source, const HeaderFound& found) {
  return Lowering(source, found).run();
}

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
