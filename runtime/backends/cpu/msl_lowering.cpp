#include "msl_lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <optional>
#include <set>

#include <functional>
#include <regex>

#include "msl_tokens.h"

namespace mfagen::cpu {
namespace {

const std::map<std::string_view, std::string_view> kAddressSpaces = {
    // constant memory is read-only, so Metal treats `constant T*` as pointing to
    // const T (llama.cpp passes `constant float[]` tables to `constant float*`).
    {"device", "__global"}, {"constant", "const __constant"}, {"threadgroup", "__local"}, {"thread", ""}};  // see thread_points_to

// Function constant types as a host names them: int32_t is int (llama.cpp
// declares `constant int32_t FC_... [[function_constant(i)]]`).
std::string canonical_scalar(std::string_view type) {
  static const std::map<std::string_view, std::string_view> kAliases = {
      {"int32_t", "int"}, {"uint32_t", "uint"}, {"unsigned int", "uint"}, {"int16_t", "short"},
      {"uint16_t", "ushort"}, {"unsigned short", "ushort"}, {"metal::int32_t", "int"}, {"metal::uint32_t", "uint"}};
  auto alias = kAliases.find(type);
  return std::string(alias == kAliases.end() ? type : alias->second);
}

// OpenCL keywords that are ordinary identifiers in MSL.
const std::set<std::string_view> kOpenClOnlyKeywords = {"global", "local", "generic", "pipe", "read_only",
                                                        "write_only", "read_write", "private_"};

// Builtin kernel arguments: attribute -> field of __mf_launch_args, and
// whether the value is a 3-component position (scalar otherwise).
struct BuiltinArg {
  std::string_view field;
  bool vector;
};
const std::map<std::string_view, BuiltinArg> kBuiltinArgs = {
    {"thread_position_in_grid", {"thread_position_in_grid", true}},
    {"threadgroup_position_in_grid", {"threadgroup_position_in_grid", true}},
    {"thread_position_in_threadgroup", {"thread_position_in_threadgroup", true}},
    {"threads_per_threadgroup", {"threads_per_threadgroup", true}},
    {"dispatch_threads_per_threadgroup", {"threads_per_threadgroup", true}},
    {"threadgroups_per_grid", {"threadgroups_per_grid", true}},
    {"threads_per_grid", {"threads_per_grid", true}},
    {"thread_index_in_threadgroup", {"thread_index_in_threadgroup", false}},
    {"thread_index_in_simdgroup", {"thread_index_in_simdgroup", false}},
    {"simdgroup_index_in_threadgroup", {"simdgroup_index_in_threadgroup", false}},
    {"simdgroups_per_threadgroup", {"simdgroups_per_threadgroup", false}},
    {"threads_per_simdgroup", {"threads_per_simdgroup", false}},
};

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

class Lowering {
 public:
  Lowering(std::string_view text, const std::map<uint32_t, ConstantValue>& constants)
      : tokens_(tokenize(text)), constants_(constants) {
    for (size_t i = 0; i < tokens_.size(); ++i)
      if (tokens_[i].significant()) sig_.push_back(i);
    in_attribute_.assign(sig_.size(), false);
  }

  LoweredSource run() {
    mark_attributes();
    reject_unsupported_tokens();
    lower_function_constants();
    find_kernels();
    lower_decltype();
    lower_reference_reinterpret_casts();
    lower_function_pointer_template_parameters();
    lower_short_vector_braces();
    lower_dependent_casts();
    lower_vec_in_alias_templates();
    lower_threadgroup_declarations();
    lower_vector_syntax();
    map_keywords();
    LoweredSource out;
    // Metal has function pointers (llama.cpp passes dequantizers as template
    // arguments); `mfagen check` keeps rejecting them in generated kernels.
    out.text = "#pragma OPENCL EXTENSION __cl_clang_function_pointers : enable\n";
    out.text += join_tokens(tokens_);
    out.text += "\n# 1 \"<mfagen entry thunks>\"\n";
    for (const Kernel& k : kernels_) out.text += k.thunk;
    for (const Kernel& k : kernels_) out.kernels.push_back(k.signature);
    out.function_constants = function_constants_;
    for (const auto& [index, value] : constants_) {
      bool used = std::any_of(function_constants_.begin(), function_constants_.end(),
                              [&](const FunctionConstant& c) { return c.index == index; });
      if (!used) {
        std::string declared;
        for (const FunctionConstant& c : function_constants_)
          declared += fmt::format("{}{} ({} {})", declared.empty() ? "" : ", ", c.index, c.type, c.name);
        throw CompileError(fmt::format("error: function constant {} was given but the source declares no "
                                       "[[function_constant({})]] (declared: {})",
                                       index, index, declared.empty() ? "none" : declared));
      }
    }
    return out;
  }

 private:
  struct Kernel {
    KernelSignature signature;
    std::string thunk;
  };

  // --- token access (k indexes significant tokens) ---
  size_t count() const { return sig_.size(); }
  Token& at(size_t k) { return tokens_[sig_[k]]; }
  std::string_view text(size_t k) const { return k < sig_.size() ? std::string_view(tokens_[sig_[k]].text) : ""; }
  bool is(size_t k, std::string_view s) const { return k < sig_.size() && tokens_[sig_[k]].text == s; }
  bool is_identifier(size_t k) const { return k < sig_.size() && tokens_[sig_[k]].kind == TokenKind::identifier; }
  void replace(size_t k, std::string s) { tokens_[sig_[k]].text = std::move(s); }

  [[noreturn]] void fail(size_t k, const std::string& message) const {
    const Token& t = tokens_[sig_[std::min(k, sig_.size() - 1)]];
    throw CompileError(fmt::format("{}:{}: error: {}", t.file, t.line, message));
  }

  // Index of the token closing the bracket opened at k.
  size_t matching(size_t k) const {
    std::string_view open = text(k);
    std::string_view close = open == "(" ? ")" : open == "[" ? "]" : open == "{" ? "}" : ">";
    int depth = 0;
    for (size_t j = k; j < count(); ++j) {
      if (text(j) == open) ++depth;
      if (text(j) == close && --depth == 0) return j;
    }
    fail(k, fmt::format("unbalanced '{}'", open));
  }

  // Lowered text of tokens [begin, end), one space between tokens.
  // Text of tokens [begin, end), spaced only where two words would merge;
  // `lowered` maps address-space keywords.
  std::string joined_text(size_t begin, size_t end, bool lowered) const {
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::string out;
    for (size_t k = begin; k < end; ++k) {
      std::string_view t = text(k);
      auto space = kAddressSpaces.find(t);
      if (lowered && space != kAddressSpaces.end() && !in_attribute_[k]) t = space->second;
      if (auto sub = substitutions_.find(std::string(t)); sub != substitutions_.end()) t = sub->second;
      if (!out.empty() && !t.empty() && word(out.back()) && word(t.front())) out += ' ';
      out += t;
    }
    return out;
  }
  std::string lowered_text(size_t begin, size_t end) const { return joined_text(begin, end, true); }
  std::string original_text(size_t begin, size_t end) const { return joined_text(begin, end, false); }

  // --- passes ---
  void mark_attributes() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (!is(k, "[") || !is(k + 1, "[")) continue;
      size_t end = matching(k);
      for (size_t j = k; j <= end; ++j) in_attribute_[j] = true;
      k = end;
    }
  }

  void reject_unsupported_tokens() {
    for (size_t k = 0; k < count(); ++k) {
      if (in_attribute_[k] || !is_identifier(k)) continue;
      if (text(k) == "double") fail(k, "'double' is not supported by Metal (use float)");
      if (kOpenClOnlyKeywords.contains(text(k))) replace(k, fmt::format("__mf_id_{}", text(k)));
    }
  }

  // `constant T name [[function_constant(i)]];` at namespace scope.
  void lower_function_constants() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (!(is(k, "[") && is(k + 1, "[") && is(k + 2, "function_constant") && is(k + 3, "("))) continue;
      size_t attr_end = matching(k);
      if (!is(attr_end + 1, ";")) continue;  // a parameter attribute, handled with kernels
      size_t begin = k;
      while (begin > 0 && !is(begin - 1, ";") && !is(begin - 1, "}") && !is(begin - 1, "{")) --begin;
      if (!is(begin, "constant")) fail(k, "a function constant must be declared 'constant T name [[function_constant(i)]];'");
      if (k - begin < 3) fail(k, "malformed function constant declaration");
      size_t name = k - 1;
      std::string type = original_text(begin + 1, name);
      // llama.cpp writes [[function_constant(FC_MUL_MM + 1)]]: after the
      // preprocessor, an integer constant expression.
      std::optional<long> index_value = integer_expression(k + 4, matching(k + 3));
      if (!index_value || *index_value < 0 || *index_value > 65535)
        fail(k, "function_constant index must be an integer constant expression in 0..65535");
      uint32_t index = static_cast<uint32_t>(*index_value);
      std::string constant_name(text(name));
      for (const FunctionConstant& other : function_constants_)
        if (other.index == index)
          fail(k, fmt::format("function_constant index {} is declared twice ('{}' and '{}')", index, other.name,
                              constant_name));
      function_constants_.push_back(FunctionConstant{index, constant_name, type});
      auto given = constants_.find(index);
      std::string value = "0";
      if (given != constants_.end()) {
        if (canonical_scalar(given->second.type) != canonical_scalar(type))
          fail(k, fmt::format("function constant {} ('{}') is declared '{}' but was given as '{}'", index,
                              constant_name, type, given->second.type));
        value = given->second.literal;
      }
      for (size_t j = begin; j <= attr_end; ++j) replace(j, "");
      replace(begin, fmt::format("static constexpr __constant {} {} = ({})({}); enum : bool {{ __mf_fc_defined_{} = {} }}",
                                 type, constant_name, type, value, constant_name,
                                 given != constants_.end() ? "true" : "false"));
      fc_defined_.insert(constant_name);
      k = attr_end;
    }
    for (size_t k = 0; k + 3 < count(); ++k) {
      if (!is(k, "is_function_constant_defined") || !is(k + 1, "(") || !is(k + 3, ")")) continue;
      if (!fc_defined_.contains(std::string(text(k + 2))))
        fail(k, fmt::format("'{}' is not a function constant", text(k + 2)));
      replace(k, fmt::format("__mf_fc_defined_{}", text(k + 2)));
      replace(k + 1, "");
      replace(k + 2, "");
      replace(k + 3, "");
    }
  }

  // Value of the integer literals, + - * and parentheses in tokens [begin, end).
  std::optional<long> integer_expression(size_t begin, size_t end) const {
    size_t k = begin;
    std::function<std::optional<long>()> sum, factor;
    factor = [&]() -> std::optional<long> {
      if (k < end && is(k, "(")) {
        ++k;
        std::optional<long> inner = sum();
        if (!inner || k >= end || !is(k, ")")) return std::nullopt;
        ++k;
        return inner;
      }
      if (k < end && is(k, "-")) {
        ++k;
        std::optional<long> operand = factor();
        return operand ? std::optional(-*operand) : std::nullopt;
      }
      if (k >= end || tokens_[sig_[k]].kind != TokenKind::number) return std::nullopt;
      std::string literal(text(k++));
      while (!literal.empty() && (literal.back() == 'u' || literal.back() == 'U' || literal.back() == 'l' ||
                                  literal.back() == 'L'))
        literal.pop_back();
      try {
        size_t used = 0;
        long value = std::stol(literal, &used, 0);
        return used == literal.size() ? std::optional(value) : std::nullopt;
      } catch (const std::exception&) {
        return std::nullopt;
      }
    };
    auto product = [&]() -> std::optional<long> {
      std::optional<long> value = factor();
      while (value && k < end && is(k, "*")) {
        ++k;
        std::optional<long> rhs = factor();
        value = rhs ? std::optional(*value * *rhs) : std::nullopt;
      }
      return value;
    };
    sum = [&]() -> std::optional<long> {
      std::optional<long> value = product();
      while (value && k < end && (is(k, "+") || is(k, "-"))) {
        bool plus = is(k++, "+");
        std::optional<long> rhs = product();
        value = rhs ? std::optional(plus ? *value + *rhs : *value - *rhs) : std::nullopt;
      }
      return value;
    };
    std::optional<long> value = sum();
    return k == end ? value : std::nullopt;
  }

  // C++ for OpenCL types a local or parameter `int x` as `__private int`, so
  // decltype(x) would carry an address space Metal's `thread int` does not
  // show (MLX: integral_constant<decltype(res), res> with a static constant
  // member). __mf_unprivate_t drops a top-level __private and nothing else.
  void lower_decltype() {
    for (size_t k = 0; k + 2 < count(); ++k) {
      if (!is(k, "decltype") || !is(k + 1, "(") || is(k + 2, "auto") || in_attribute_[k]) continue;
      size_t close = matching(k + 1);
      // decltype(f<...>) names a function type (llama.cpp's kernel typedefs); leave it.
      if (is_identifier(k + 2) && is(k + 3, "<") && matching(k + 3) + 1 == close) continue;
      replace(k, "__mf_unprivate_t<decltype");
      replace(close, ")> ");
    }
  }

  // reinterpret_cast<thread T&>(x) -> __mf_reinterpret_ref<T&>(x) (see
  // mfagen_standin/lowering_support.h); casts to device, threadgroup or
  // constant references keep their matching address space and stay as written.
  void lower_reference_reinterpret_casts() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (!is(k, "reinterpret_cast") || !is(k + 1, "<")) continue;
      size_t close = matching(k + 1);
      if (!is(close - 1, "&") || is(close - 2, "&")) continue;
      bool shared_space = false;
      for (size_t j = k + 2; j < close; ++j)
        shared_space |= is(j, "device") || is(j, "constant") || is(j, "threadgroup");
      if (!shared_space) replace(k, "__mf_reinterpret_ref");
    }
  }

  // clang-16's C++ for OpenCL rejects every argument for a pointer-to-function
  // template parameter (`template <void (*deq)(...)>`, llama.cpp's
  // dequantizers); a reference-to-function parameter takes the same function
  // names and is called the same way.
  void lower_function_pointer_template_parameters() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (!is(k, "template") || !is(k + 1, "<")) continue;
      size_t close = matching(k + 1);
      for (size_t j = k + 2; j + 3 < close; ++j)
        if (is(j, "(") && is(j + 1, "*") && is_identifier(j + 2) && is(j + 3, ")") && is(j + 4, "("))
          replace(j + 1, "&");
    }
  }

  // Metal's vec<T, N> deduces T and N; the stand-in's goes through a trait
  // (so that vec<bfloat, N> and vec<bool, N>, which clang cannot make ext
  // vectors of, exist) and does not. Alias templates over vec exist to be
  // deduced through (MLX: `template <class U> using dtype_frag_t =
  // typename metal::vec<U, 2>;` in `mma(thread dtype_frag_t<A>& a)`), so
  // there vec is spelled as the ext vector itself: deducible, and a compile
  // error for bfloat or bool elements rather than anything silent.
  void lower_vec_in_alias_templates() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (!is(k, "template") || !is(k + 1, "<")) continue;
      if (at(k).file.find("/mfagen_standin/") != std::string::npos) continue;
      size_t close = matching(k + 1);
      if (!is(close + 1, "using") || !is_identifier(close + 2) || !is(close + 3, "=")) continue;
      for (size_t j = close + 4; j + 1 < count() && !is(j, ";"); ++j) {
        if (!is(j, "vec") || !is(j + 1, "<") || is(j - 1, ".") || is(j - 1, "->")) continue;
        bool qualified = j >= 2 && is(j - 1, "::") && is(j - 2, "metal");
        if (qualified) replace(j - 2, "");
        replace(j, qualified ? "__mf_ext_vec" : "::__mf_ext_vec");
      }
    }
  }

  // `(T)x` and `T(x)` inside a template whose type parameter T may turn out
  // to be a vector (llama.cpp: `(q4_t) q4[i]`, `s2_t(x)` with q4_t = half4):
  // clang would bit-cast or reject them, Metal converts values. They become
  // `::metal::__mf_dep_cast<T>{} ->* x` and `::metal::__mf_dep_ctor<T>(x)`,
  // which decide at instantiation (mfagen_standin/conversions.h).
  void lower_dependent_casts() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (!is(k, "template") || !is(k + 1, "<")) continue;
      // The stand-in spells its own conversions out (and implements these).
      if (at(k).file.find("/mfagen_standin/") != std::string::npos) continue;
      size_t close = matching(k + 1);
      std::set<std::string, std::less<>> type_parameters;
      for (size_t j = k + 2; j + 1 < close; ++j)
        if ((is(j, "typename") || is(j, "class")) && is_identifier(j + 1) && !is(j + 1, "...") &&
            (is(j + 2, ",") || is(j + 2, "=") || j + 2 == close))
          type_parameters.emplace(text(j + 1));
      if (type_parameters.empty()) continue;
      size_t body = close + 1;
      for (int depth = 0; body < count(); ++body) {
        if (is(body, "(") || is(body, "[")) ++depth;
        if (is(body, ")") || is(body, "]")) --depth;
        if (depth == 0 && (is(body, "{") || is(body, ";"))) break;
      }
      if (!is(body, "{")) continue;
      size_t end = matching(body);
      for (size_t j = body; j + 3 < end; ++j) {
        bool functional = type_parameters.contains(text(j)) && is(j + 1, "(") && !is(j - 1, ".") &&
                          !is(j - 1, "->") && !is(j - 1, "::") && !is(j - 1, "operator");
        if (functional) {  // T(args...)
          replace(j, fmt::format("::metal::__mf_dep_ctor<{}>", text(j)));
          continue;
        }
        if (!is(j, "(") || !is(j + 2, ")") || !type_parameters.contains(text(j + 1))) continue;
        if (!is_cast_context(j, j + 3)) continue;
        replace(j, "");
        replace(j + 1, fmt::format("::metal::__mf_dep_cast<{}>{{}} ->*", text(j + 1)));
        replace(j + 2, "");
      }
    }
  }

  // `float4 acc = {0.f};`: Metal zero-fills the elements a brace list leaves
  // out, C++ for OpenCL rejects the short list. Declarations of builtin
  // vector types with a brace initializer become __mf_vector_braces<T>(...)
  // (mfagen_standin/lowering_support.h), which does what Metal does.
  void lower_short_vector_braces() {
    static const std::regex vector_type("(float|half|int|uint|short|ushort|char|uchar|long|ulong)[234]");
    for (size_t k = 0; k + 3 < count(); ++k) {
      if (!is_identifier(k) || !std::regex_match(std::string(text(k)), vector_type)) continue;
      // `float4 a = {0.f}, b = {0.f};`: every declarator of the declaration.
      for (size_t name = k + 1; is_identifier(name) && is(name + 1, "=") && is(name + 2, "{");) {
        size_t close = matching(name + 2);
        bool nested = false;
        for (size_t j = name + 3; j < close; ++j) nested |= is(j, "{");
        if (!nested) {
          replace(name + 2, fmt::format("__mf_vector_braces<{}>(", text(k)));
          replace(close, ")");
        }
        if (!is(close + 1, ",")) break;
        name = close + 2;
      }
    }
  }

  // `kernel void name(params) {` or `[[kernel]] void name(...)`.
  void find_kernels() {
    std::vector<std::pair<size_t, std::string>> namespaces;  // (closing brace, name)
    for (size_t k = 0; k < count(); ++k) {
      while (!namespaces.empty() && k > namespaces.back().first) namespaces.pop_back();
      if (is(k, "namespace") && !in_attribute_[k]) {
        size_t j = k + 1;
        std::string name;
        while (j < count() && !is(j, "{") && !is(j, ";") && !is(j, "=")) name += text(j++);
        if (is(j, "{")) namespaces.emplace_back(matching(j), name);
        continue;
      }
      bool keyword = is(k, "kernel") && !in_attribute_[k];
      size_t attribute_end = kernel_attribute_end(k);
      if (!keyword && attribute_end == npos) continue;
      size_t start = keyword ? k + 1 : attribute_end + 1;
      std::vector<std::string> scope;
      for (auto& ns : namespaces) scope.push_back(ns.second);
      if (k > 0 && (is(k - 1, "]") || is(k - 1, "template")) && instantiation_start(k) != npos) {
        lower_instantiation(instantiation_start(k), k, start);
        continue;
      }
      if (!is(start, "void")) fail(k, "a kernel must return void");
      if (!is_identifier(start + 1) || !is(start + 2, "("))
        fail(k, "expected 'kernel void NAME(...)'");
      size_t close = matching(start + 2);
      if (!is(close + 1, "{")) continue;  // a declaration; the definition comes later
      for (size_t j = k; j < start; ++j) replace(j, "");
      if (k > 0 && is(k - 1, ">")) {
        // template <...> kernel void NAME(...): entry points come from its
        // explicit instantiations `template [[host_name("x")]] [[kernel]] ...`.
        templates_[std::string(text(start + 1))] = TemplateKernel{start + 1, close, scope, template_parameters(k - 1)};
      } else {
        kernels_.push_back(build_kernel(start + 1, close, scope, std::string(text(start + 1)), ""));
      }
      kernel_bodies_.emplace_back(close + 1, matching(close + 1));
      k = close;
    }
  }

  static constexpr size_t npos = ~size_t(0);

  // `[[kernel]]` or `[[kernel, max_total_threads_per_threadgroup(N)]]` at k:
  // the index of its last `]`, or npos.
  size_t kernel_attribute_end(size_t k) const {
    if (!is(k, "[") || !is(k + 1, "[")) return npos;
    size_t end = matching(k);
    int depth = 0;
    bool kernel = false;
    for (size_t j = k + 2; j + 1 < end; ++j) {
      if (is(j, "(")) ++depth;
      if (is(j, ")")) --depth;
      if (depth == 0 && is(j, "kernel") && (is(j - 1, "[") || is(j - 1, ",")) && (is(j + 1, "]") || is(j + 1, ",")))
        kernel = true;
    }
    return kernel ? end : npos;
  }

  // `template [[host_name("x")]] [[kernel]]`: index of `template`, or npos.
  size_t instantiation_start(size_t kernel_attribute) const {
    size_t k = kernel_attribute;
    while (k >= 2 && is(k - 1, "]") && in_attribute_[k - 1]) {
      size_t open = k - 1;
      while (open > 0 && !(is(open, "[") && is(open + 1, "[") && (open == 0 || !in_attribute_[open - 1]))) --open;
      k = open;
    }
    return k > 0 && is(k - 1, "template") ? k - 1 : npos;
  }

  // Names of the parameters of the `template <...>` whose `>` is at `close`.
  std::vector<std::string> template_parameters(size_t close) const {
    int depth = 0;
    size_t open = close;
    for (; open > 0; --open) {
      if (is(open, ">")) ++depth;
      if (is(open, "<") && --depth == 0) break;
    }
    std::vector<std::string> names;
    depth = 0;
    for (size_t j = open + 1; j < close; ++j) {
      if (is(j, "<") || is(j, "(")) ++depth;
      if (is(j, ">") || is(j, ")")) --depth;
      if (depth == 0 && is_identifier(j) && (is(j + 1, ",") || j + 1 == close || is(j + 1, "=")))
        names.emplace_back(text(j));
    }
    return names;
  }

  // template [[host_name("x")]] [[kernel]] decltype(NAME<ARGS>) NAME<ARGS>;
  void lower_instantiation(size_t begin, size_t kernel_attribute, size_t after_attributes) {
    std::string host_name;
    for (size_t j = begin; j < kernel_attribute; ++j)
      if (is(j, "host_name") && is(j + 1, "(")) {
        // Adjacent string literals concatenate: host_name("softmax_" "float32").
        for (size_t l = j + 2; l < count() && at(l).kind == TokenKind::literal; ++l)
          host_name += std::string(text(l)).substr(1, text(l).size() - 2);
      }
    if (host_name.empty()) fail(begin, "explicit kernel instantiations need [[host_name(\"name\")]]");
    size_t semi = after_attributes;
    while (semi < count() && !is(semi, ";")) ++semi;
    size_t name = after_attributes;
    while (name < semi && !(templates_.contains(std::string(text(name))) && is(name + 1, "<"))) ++name;
    if (name == semi) fail(begin, fmt::format("kernel '{}' instantiates no templated kernel defined before it", host_name));
    const TemplateKernel& t = templates_.at(std::string(text(name)));
    size_t args_close = matching(name + 1);
    std::vector<std::string> args;
    size_t arg_begin = name + 2;
    int depth = 0;
    for (size_t j = name + 2; j <= args_close; ++j) {
      if (is(j, "<") || is(j, "(")) ++depth;
      if ((is(j, ">") || is(j, ")")) && j != args_close) --depth;
      if ((depth == 0 && is(j, ",")) || j == args_close) {
        args.push_back(lowered_text(arg_begin, j));
        arg_begin = j + 1;
      }
    }
    std::string callee = lowered_text(name, args_close + 1);
    for (size_t i = 0; i < t.parameters.size() && i < args.size(); ++i) substitutions_[t.parameters[i]] = args[i];
    kernels_.push_back(build_kernel(t.name_token, t.close, t.scope, host_name, callee));
    substitutions_.clear();
    for (size_t j = begin; j <= semi; ++j) replace(j, "");
  }

  Kernel build_kernel(size_t name_token, size_t close, const std::vector<std::string>& scope, std::string entry,
                      std::string callee) {
    Kernel kernel;
    kernel.signature.name = entry;
    if (callee.empty()) callee = entry;
    kernel.signature.location = fmt::format("{}:{}", at(name_token).file, at(name_token).line);
    std::vector<std::string> arguments;
    std::vector<std::pair<size_t, size_t>> spans;  // token range of each parameter
    std::set<uint32_t> buffer_indices, threadgroup_indices;
    size_t begin = name_token + 2;
    while (begin < close) {
      size_t end = begin;
      int depth = 0;
      while (end < close) {
        std::string_view t = text(end);
        if (t == "(" || t == "[" || t == "<" || t == "{") ++depth;
        if (t == ")" || t == "]" || t == ">" || t == "}") --depth;
        if (t == "," && depth == 0) break;
        ++end;
      }
      if (end > begin) {
        KernelParam param = parse_param(begin, end);
        bool implicit = param.attribute.empty();
        if (param.kind == KernelParam::Kind::buffer && !implicit && !buffer_indices.insert(param.index).second)
          fail(begin, fmt::format("duplicate [[buffer({})]] in kernel '{}'", param.index, kernel.signature.name));
        if (param.kind == KernelParam::Kind::threadgroup_buffer && !threadgroup_indices.insert(param.index).second)
          fail(begin, fmt::format("duplicate [[threadgroup({})]] in kernel '{}'", param.index, kernel.signature.name));
        spans.emplace_back(begin, end);
        kernel.signature.params.push_back(std::move(param));
      }
      begin = end + 1;
    }
    // Buffers without [[buffer(n)]] take the lowest free indices in
    // declaration order, as the Metal compiler assigns them.
    uint32_t next_free = 0;
    for (KernelParam& param : kernel.signature.params) {
      if (param.kind != KernelParam::Kind::buffer || !param.attribute.empty()) continue;
      while (buffer_indices.contains(next_free)) ++next_free;
      if (next_free > 30) fail(name_token, fmt::format("kernel '{}' has more than 31 buffers", kernel.signature.name));
      param.index = next_free;
      param.attribute = "buffer";
      buffer_indices.insert(next_free);
    }
    for (size_t i = 0; i < spans.size(); ++i)
      arguments.push_back(thunk_argument(kernel.signature.params[i], spans[i].first, spans[i].second));
    std::string body = fmt::format("extern \"C\" void {}{}(const __mf_launch_args* __mf_a) {{\n  {}(", "__mf_kernel_",
                                   kernel.signature.name, callee);
    for (size_t i = 0; i < arguments.size(); ++i) body += (i ? ",\n    " : "") + arguments[i];
    body += ");\n}\n";
    for (auto it = scope.rbegin(); it != scope.rend(); ++it) body = fmt::format("namespace {} {{\n{}}}\n", *it, body);
    kernel.thunk = body;
    return kernel;
  }

  // Parameter tokens [begin, end): TYPE NAME [[attributes]].
  KernelParam parse_param(size_t begin, size_t end) {
    size_t attr = begin;
    while (attr < end && !(is(attr, "[") && in_attribute_[attr])) ++attr;
    size_t name = attr - 1;
    if (!is_identifier(name) || name <= begin) fail(begin, "kernel parameter needs a type and a name");
    KernelParam param;
    param.name = std::string(text(name));
    param.type = original_text(begin, name);
    bool pointer = false;
    for (size_t j = begin; j < name; ++j) {
      if (text(j) == "const") param.is_const = true;
      if (text(j) == "&") param.is_reference = true;
      if (text(j) == "*") pointer = true;
      if (text(j) == "device") param.space = AddressSpace::device;
      if (text(j) == "constant") param.space = AddressSpace::constant;
      if (text(j) == "threadgroup") param.space = AddressSpace::threadgroup;
    }
    if (attr == end) {  // an implicit buffer: a device or constant pointer or reference
      bool buffer_space = param.space == AddressSpace::device || param.space == AddressSpace::constant;
      if (!buffer_space || !(pointer || param.is_reference))
        fail(begin, fmt::format("kernel parameter '{}' needs an attribute ([[buffer(n)]], "
                                "[[thread_position_in_grid]], ...)",
                                param.name));
      param.kind = KernelParam::Kind::buffer;
      return param;  // index assigned by build_kernel
    }
    // Attribute list: [[a, b(x), ...]] possibly repeated.
    bool have_kind = false;
    for (size_t j = attr; j < end; ++j) {
      if (!is_identifier(j) || !(is(j - 1, "[") || is(j - 1, ","))) continue;
      std::string_view attribute = text(j);
      std::string argument;
      if (is(j + 1, "(")) argument = original_text(j + 2, matching(j + 1));
      auto integer = [&]() -> uint32_t {
        try {
          size_t used = 0;
          unsigned long v = std::stoul(argument, &used, 0);
          if (used != argument.size() || v > 30) throw std::out_of_range("index");
          return static_cast<uint32_t>(v);
        } catch (const std::exception&) {
          fail(j, fmt::format("[[{}(...)]] needs an integer index 0..30, got '{}'", attribute, argument));
        }
      };
      if (attribute == "function_constant") {
        param.function_constant = argument;
        continue;
      }
      if (have_kind) fail(j, fmt::format("parameter '{}' has two binding attributes", param.name));
      have_kind = true;
      param.attribute = std::string(attribute);
      if (attribute == "buffer") {
        param.kind = KernelParam::Kind::buffer;
        param.index = integer();
        if (param.space != AddressSpace::device && param.space != AddressSpace::constant)
          fail(j, fmt::format("[[buffer]] parameter '{}' must point to device or constant memory", param.name));
      } else if (attribute == "threadgroup") {
        param.kind = KernelParam::Kind::threadgroup_buffer;
        param.index = integer();
        if (param.space != AddressSpace::threadgroup)
          fail(j, fmt::format("[[threadgroup]] parameter '{}' must point to threadgroup memory", param.name));
      } else if (kBuiltinArgs.contains(attribute)) {
        param.kind = KernelParam::Kind::builtin;
      } else {
        fail(j, fmt::format("kernel parameter attribute '{}' is not supported by the cpu backend", attribute));
      }
    }
    if (!have_kind) fail(attr, fmt::format("kernel parameter '{}' has no binding attribute", param.name));
    if (param.kind != KernelParam::Kind::builtin && !param.is_reference) {
      if (!pointer) fail(begin, fmt::format("buffer parameter '{}' must be a pointer or a reference", param.name));
    }
    return param;
  }

  std::string thunk_argument(const KernelParam& param, size_t begin, size_t end) {
    size_t name = begin;
    while (name < end && text(name) != param.name) ++name;
    std::string type = lowered_text(begin, name);
    switch (param.kind) {
      case KernelParam::Kind::buffer:
      case KernelParam::Kind::threadgroup_buffer: {
        const char* table = param.kind == KernelParam::Kind::buffer ? "buffers" : "threadgroup_buffers";
        if (param.is_reference) {
          std::string pointer = type.substr(0, type.rfind('&')) + "*";
          return fmt::format("*({})(__mf_a->{}[{}])", pointer, table, param.index);
        }
        return fmt::format("({})(__mf_a->{}[{}])", type, table, param.index);
      }
      case KernelParam::Kind::builtin: {
        std::string value_type;
        for (size_t j = begin; j < name; ++j)
          if (text(j) != "const" && text(j) != "thread") value_type += (value_type.empty() ? "" : " ") + std::string(text(j));
        const BuiltinArg& arg = kBuiltinArgs.at(param.attribute);
        if (arg.vector) return fmt::format("__mf_thread_id<{}>(__mf_a->{})", value_type, arg.field);
        return fmt::format("({})(__mf_a->{})", value_type, arg.field);
      }
    }
    return "";
  }

  // Kernel-scope `threadgroup T name[dims];` -> reference to per-threadgroup storage.
  void lower_threadgroup_declarations() {
    for (auto [body_begin, body_end] : kernel_bodies_) {
      for (size_t k = body_begin + 1; k < body_end; ++k) {
        if (!is(k, "threadgroup") || !(is(k - 1, "{") || is(k - 1, "}") || is(k - 1, ";"))) continue;
        size_t semi = k;
        int depth = 0;
        bool initialized = false, pointer = false, several = false;
        size_t first_bracket = 0;
        for (; semi < body_end; ++semi) {
          std::string_view t = text(semi);
          if (t == ";" && depth == 0) break;
          if (t == "(" || t == "[" || t == "<" || t == "{") {
            if (t == "[" && depth == 0 && !first_bracket) first_bracket = semi;
            ++depth;
          }
          if (t == ")" || t == "]" || t == ">" || t == "}") --depth;
          if (depth == 0 && t == "=") initialized = true;
          if (depth == 0 && (t == "*" || t == "&") && !first_bracket) pointer = true;
          if (depth == 0 && t == ",") several = true;
        }
        if (pointer) continue;  // a private pointer/reference to threadgroup memory
        if (initialized) fail(k, "threadgroup variables cannot have initializers");
        if (several) fail(k, "declare one threadgroup variable per statement");
        size_t name = first_bracket ? first_bracket - 1 : semi - 1;
        if (!is_identifier(name) || name <= k + 1) fail(k, "malformed threadgroup variable declaration");
        std::string type = lowered_text(k + 1, name);
        std::string dims = first_bracket ? original_text(first_bracket, semi) : "";
        std::string decl = fmt::format(
            "__local {0} (&{1}){2} = *(__local {0} (*){2})(unsigned long)__mf_tg_alloc({3}u, sizeof({0}{2}), "
            "alignof({0}{2}), \"{1}\")",
            type, text(name), dims, tg_sites_++);
        for (size_t j = k; j < semi; ++j) replace(j, "");
        replace(k, decl);
        k = semi;
      }
    }
  }

  // float4(...) -> __mf_vec_ctor<float4>(...);  (float4)x -> __mf_vec_cast<float4>{} ->* x
  void lower_vector_syntax() {
    for (size_t k = 0; k + 1 < count(); ++k) {
      if (in_attribute_[k]) continue;
      if (lower_vec_template(k)) continue;
      if (is(k, "(") && is_vector_type_name(text(k + 1)) && is(k + 2, ")")) {
        if (lower_vector_cast(k)) {
          k += 2;
          continue;
        }
      }
      if (!is_vector_type_name(text(k)) || !is(k + 1, "(")) continue;
      if (k > 0 && (is(k - 1, "operator") || is(k - 1, ".") || is(k - 1, "->"))) continue;
      bool qualified = k >= 2 && is(k - 1, "::") && is(k - 2, "metal");
      if (k >= 1 && is(k - 1, "::") && !qualified) fail(k, "unsupported qualified vector constructor");
      replace(k, qualified ? fmt::format("__mf_vec_ctor<::metal::{}>", text(k))
                           : fmt::format("::metal::__mf_vec_ctor<{}>", text(k)));
    }
  }

  // metal::vec<T, N>(...) and (vec<T, N>)x, the template spelling of vectors.
  bool lower_vec_template(size_t k) {
    size_t type = is(k, "(") ? k + 1 : k;
    if (!is(type, "vec") || !is(type + 1, "<") || (type >= 1 && (is(type - 1, ".") || is(type - 1, "->"))))
      return false;
    size_t close = matching(type + 1);
    bool qualified = type >= 2 && is(type - 1, "::") && is(type - 2, "metal");
    if (type == k + 1) {  // a C-style cast
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

  // Whether `( TYPE )` at k (operand starting at `next`) is a cast expression
  // rather than sizeof(TYPE), a parameter list or a call.
  bool is_cast_context(size_t k, size_t next) {
    if (k == 0) return false;
    std::string_view prev = text(k - 1);
    std::string_view after = text(next);
    if (after == ";" || after == ")" || after == "," || after == "]" || after == "{" || after.empty()) return false;
    if (is_identifier(k - 1) && !kExpressionKeywords.contains(prev)) return false;
    if (prev == ")" || prev == "]") return false;
    static const std::set<std::string_view> unary = {"-", "+", "!", "~", "*", "&"};
    if (unary.contains(prev)) {
      bool operand_before = k >= 2 && (at(k - 2).kind == TokenKind::number || at(k - 2).kind == TokenKind::literal ||
                                       is(k - 2, ")") || is(k - 2, "]") ||
                                       (is_identifier(k - 2) && !kExpressionKeywords.contains(text(k - 2))));
      if (!operand_before)
        fail(k, fmt::format("write '{}T(...)' instead of a unary operator before a C-style vector cast", prev));
    }
    return true;
  }

  bool lower_vector_cast(size_t k) {
    if (!is_cast_context(k, k + 3)) return false;
    replace(k, "");
    replace(k + 1, fmt::format("::metal::__mf_vec_cast<{}>{{}} ->*", text(k + 1)));
    replace(k + 2, "");
    return true;
  }

  void map_keywords() {
    for (size_t k = 0; k < count(); ++k) {
      if (in_attribute_[k] || !is_identifier(k)) continue;
      if (is(k, "thread")) {
        replace(k, thread_points_to(k) ? "__generic" : "");
        continue;
      }
      // A method qualifier (`complex64_t(T x) const constant`, MLX) takes no
      // extra const; on a constructor, Metal accepts `const`, clang does not.
      if (is(k, "constant") && k > 0 && (is(k - 1, ")") || is(k - 1, "const"))) {
        replace(k, "__constant");
        if (is(k - 1, "const") && k > 1 && is(k - 2, ")") && is_constructor_declarator(k - 2)) replace(k - 1, "");
        continue;
      }
      auto space = kAddressSpaces.find(text(k));
      if (space != kAddressSpaces.end()) replace(k, std::string(space->second));
    }
  }

  // Whether the parameter list closed at `close` declares a constructor: its
  // name follows a specifier or the end of a member, not a return type.
  bool is_constructor_declarator(size_t close) const {
    int depth = 0;
    size_t open = close;
    for (; open > 0; --open) {
      if (is(open, ")")) ++depth;
      if (is(open, "(") && --depth == 0) break;
    }
    if (open < 2 || !is_identifier(open - 1)) return false;
    size_t before = open - 2;
    return is(before, "constexpr") || is(before, "explicit") || is(before, "inline") || is(before, ")") ||
           is(before, ";") || is(before, "{") || is(before, "}") || is(before, ":");
  }

  // Metal's default address space is `thread`; C++ for OpenCL's is generic
  // with private locals. `thread` therefore lowers to nothing (locals stay
  // private; `thread` methods, references and the temporaries bound to them
  // behave as in Metal) except before a pointer declarator, where the
  // explicit __generic lets `thread T*` deduce T = float from a local's
  // `__private float*` (clang deduces `__private float` for a bare `T*`).
  bool thread_points_to(size_t k) const {
    size_t j = k + 1;
    while (j < count()) {
      if (is(j, "<")) {
        j = matching(j) + 1;
      } else if (is_identifier(j) || is(j, "::")) {
        ++j;
      } else {
        break;
      }
    }
    return is(j, "*");
  }

  std::vector<Token> tokens_;
  std::vector<size_t> sig_;
  std::vector<bool> in_attribute_;
  const std::map<uint32_t, ConstantValue>& constants_;
  std::vector<Kernel> kernels_;
  struct TemplateKernel {
    size_t name_token, close;
    std::vector<std::string> scope;
    std::vector<std::string> parameters;
  };
  std::map<std::string, TemplateKernel> templates_;
  std::map<std::string, std::string> substitutions_;  // template parameter -> argument text
  std::vector<std::pair<size_t, size_t>> kernel_bodies_;
  std::vector<FunctionConstant> function_constants_;
  std::set<std::string> fc_defined_;
  uint32_t tg_sites_ = 0;
};

}  // namespace

LoweredSource lower_msl(std::string_view preprocessed, const std::map<uint32_t, ConstantValue>& constants) {
  return Lowering(preprocessed, constants).run();
}

}  // namespace mfagen::cpu
