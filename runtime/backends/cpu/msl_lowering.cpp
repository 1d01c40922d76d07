#include "msl_lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <optional>
#include <set>

#include "mfagen/msl/integer_expression.h"
#include "mfagen/msl/coherence_qualifiers.h"
#include "mfagen/msl/constexpr_constants.h"
#include "mfagen/msl/literal_types.h"
#include "mfagen/msl/opencl_keywords.h"
#include "mfagen/msl/redundant_constexpr_definitions.h"
#include "mfagen/msl/syntax_error.h"
#include "mfagen/msl/token_view.h"
#include "mfagen/msl/vector_syntax.h"
#include "msl_dialect.h"

namespace mfagen::cpu {
namespace {

const std::map<std::string_view, std::string_view> kAddressSpaces = {
    // constant memory is read-only, so Metal treats `constant T*` as pointing to
    // const T (llama.cpp passes `constant float[]` tables to `constant float*`).
    {"device", "__global"}, {"constant", "const __constant"}, {"threadgroup", "__local"}, {"thread", ""}};  // see thread_lowering

// Function constant types as a host names them: int32_t is int (llama.cpp
// declares `constant int32_t FC_... [[function_constant(i)]]`).
std::string canonical_scalar(std::string_view type) {
  static const std::map<std::string_view, std::string_view> kAliases = {
      {"int32_t", "int"}, {"uint32_t", "uint"}, {"unsigned int", "uint"}, {"int16_t", "short"},
      {"uint16_t", "ushort"}, {"unsigned short", "ushort"}, {"metal::int32_t", "int"}, {"metal::uint32_t", "uint"}};
  auto alias = kAliases.find(type);
  return std::string(alias == kAliases.end() ? type : alias->second);
}

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
    // A quadgroup is 4 consecutive lanes of a simdgroup (MSL 6.9.2, "Quad-group
    // functions"; MLX's quantized kernels take both indices); simdgroups hold
    // 32 threads, a multiple of 4, so quadgroup q of the threadgroup is
    // threads 4q .. 4q + 3.
    {"quadgroup_index_in_threadgroup", {"thread_index_in_threadgroup / 4u", false}},
    {"thread_index_in_quadgroup", {"thread_index_in_simdgroup % 4u", false}},
};

class Lowering {
 public:
  Lowering(std::string_view text, const std::map<uint32_t, ConstantValue>& constants)
      : view_(text), constants_(constants) {}

  LoweredSource run() {
    reject_unbalanced_attributes();
    reject_unsupported_tokens();
    msl::drop_coherence_qualifiers(view_);
    msl::drop_redundant_constexpr_member_definitions(view_);
    msl::lower_constexpr_constants(view_);
    msl::rename_opencl_only_keywords(view_);
    msl::type_floating_literals_as_float(view_);
    lower_function_constants();
    find_kernels();
    lower_dialect_differences(view_);
    lower_threadgroup_declarations();
    // The rewrite cannot express them, and the text as written would not run as Metal means it.
    msl::lower_vector_syntax(view_, [&](msl::VectorSyntaxProblem, size_t k, const std::string& message) {
      fail(k, message);
    });
    map_keywords();
    LoweredSource out;
    // Metal has function pointers (MSL section 1.5.4; llama.cpp passes
    // dequantizers as template arguments): C++ for OpenCL needs the extension
    // for the references to functions mfagen/msl/function_pointers.h
    // makes of them. The checker's prelude enables it too.
    out.text = "#pragma OPENCL EXTENSION __cl_clang_function_pointers : enable\n";
    out.text += view_.joined();
    out.text += "\n# 1 \"<mfagen entry thunks>\"\n";
    for (const Kernel& k : kernels_) out.text += k.thunk;
    for (const Kernel& k : kernels_) out.kernels.push_back(k.signature);
    out.function_constants = function_constants_;
    out.files = view_.files();
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

  // --- token access (mfagen/msl/token_view.h) ---
  size_t count() const { return view_.count(); }
  std::string_view text(size_t k) const { return view_.text(k); }
  bool is(size_t k, std::string_view s) const { return view_.is(k, s); }
  bool is_identifier(size_t k) const { return view_.is_identifier(k); }
  bool in_attribute(size_t k) const { return view_.in_attribute(k); }
  void replace(size_t k, std::string s) { view_.replace(k, std::move(s)); }
  [[noreturn]] void fail(size_t k, const std::string& message) const { view_.fail(k, message); }
  size_t matching(size_t k) const { return view_.matching(k); }

  // Lowered text of tokens [begin, end), one space between tokens.
  // Text of tokens [begin, end), spaced only where two words would merge;
  // `lowered` maps address-space keywords.
  std::string joined_text(size_t begin, size_t end, bool lowered) const {
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::string out;
    for (size_t k = begin; k < end; ++k) {
      std::string_view t = text(k);
      auto space = kAddressSpaces.find(t);
      if (lowered && space != kAddressSpaces.end() && !in_attribute(k)) t = space->second;
      if (auto sub = substitutions_.find(std::string(t)); sub != substitutions_.end()) t = sub->second;
      if (!out.empty() && !t.empty() && word(out.back()) && word(t.front())) out += ' ';
      out += t;
    }
    return out;
  }
  std::string lowered_text(size_t begin, size_t end) const { return joined_text(begin, end, true); }
  std::string original_text(size_t begin, size_t end) const { return joined_text(begin, end, false); }

  // --- passes ---
  // `[[` opens an attribute list, which must close.
  void reject_unbalanced_attributes() const {
    for (size_t k = 0; k + 1 < count(); ++k)
      if (is(k, "[") && is(k + 1, "[") && !in_attribute(k)) matching(k);
  }

  void reject_unsupported_tokens() const {
    for (size_t k = 0; k < count(); ++k) {
      if (in_attribute(k)) continue;
      if (is_identifier(k) && text(k) == "double") fail(k, "'double' is not supported by Metal (use float)");
      // An unsuffixed floating literal is a float, as in Metal (literal_types.h); an L suffix a long double.
      if (view_.is_number(k) && msl::is_long_double_literal(text(k)))
        fail(k, fmt::format("floating literal '{}' is a long double, which Metal does not support", text(k)));
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
      // MLX's steel headers write `STEEL_CONST bool inv_ [[function_constant(0)]];`
      // with STEEL_CONST `static constant constexpr const` (Apple's compiler
      // accepts it): the leading specifiers, in any order, around `constant`.
      size_t type_begin = begin;
      bool in_constant_space = false;
      while (type_begin < k && (is(type_begin, "constant") || is(type_begin, "static") ||
                                is(type_begin, "constexpr") || is(type_begin, "const"))) {
        in_constant_space = in_constant_space || is(type_begin, "constant");
        ++type_begin;
      }
      if (!in_constant_space)
        fail(k, "a function constant must be declared 'constant T name [[function_constant(i)]];'");
      size_t name = k - 1;
      if (name <= type_begin) fail(k, "malformed function constant declaration");
      std::string type = original_text(type_begin, name);
      // llama.cpp writes [[function_constant(FC_MUL_MM + 1)]]: after the
      // preprocessor, an integer constant expression.
      std::optional<long> index_value = msl::integer_expression(view_, k + 4, matching(k + 3));
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

  // `kernel void name(params) {` or `[[kernel]] void name(...)`.
  void find_kernels() {
    std::vector<std::pair<size_t, std::string>> namespaces;  // (closing brace, name)
    for (size_t k = 0; k < count(); ++k) {
      while (!namespaces.empty() && k > namespaces.back().first) namespaces.pop_back();
      if (is(k, "namespace") && !in_attribute(k)) {
        size_t j = k + 1;
        std::string name;
        while (j < count() && !is(j, "{") && !is(j, ";") && !is(j, "=")) name += text(j++);
        if (is(j, "{")) namespaces.emplace_back(matching(j), name);
        continue;
      }
      bool keyword = is(k, "kernel") && !in_attribute(k);
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
        // Overloads of one name are kept apart (MLX's steel_gemm_masked.h has
        // two block_masked_gemm templates); an instantiation picks by its
        // template arguments (template_for).
        templates_[std::string(text(start + 1))].push_back(
            TemplateKernel{start + 1, close, scope, template_parameters(k - 1), type_parameters(k - 1)});
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
    while (k >= 2 && is(k - 1, "]") && in_attribute(k - 1)) {
      size_t open = k - 1;
      while (open > 0 && !(is(open, "[") && is(open + 1, "[") && (open == 0 || !in_attribute(open - 1)))) --open;
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

  // Whether each template parameter of the list closing at `close` is a
  // type (`typename T`, `class T`) rather than a value (`int BM`).
  std::vector<bool> type_parameters(size_t close) const {
    int depth = 0;
    size_t open = close;
    for (; open > 0; --open) {
      if (is(open, ">")) ++depth;
      if (is(open, "<") && --depth == 0) break;
    }
    std::vector<bool> kinds;
    depth = 0;
    bool type = false;
    for (size_t j = open + 1; j < close; ++j) {
      if (is(j, "<") || is(j, "(")) ++depth;
      if (is(j, ">") || is(j, ")")) --depth;
      if (depth == 0 && (is(j, "typename") || is(j, "class"))) type = true;
      if (depth == 0 && is_identifier(j) && (is(j + 1, ",") || j + 1 == close || is(j + 1, "="))) {
        kinds.push_back(type);
        type = false;
      }
    }
    return kinds;
  }

  // The overload of a templated kernel that explicit template arguments
  // name: as many parameters as arguments, each argument a value where the
  // parameter is one (a number or true/false) and a type where it is a type;
  // else one with more parameters whose first ones match (defaults); else the
  // last definition.
  const auto& template_for(const std::string& name, const std::vector<std::string>& args) const {
    const std::vector<TemplateKernel>& overloads = templates_.at(name);
    auto is_value = [](const std::string& a) {
      const size_t first = a.find_first_not_of(" \t\n");
      const std::string t = first == std::string::npos ? std::string() : a.substr(first);
      return t.empty() || std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-' || t.starts_with("true") ||
             t.starts_with("false");
    };
    auto kinds_match = [&](const TemplateKernel& t) {
      if (t.type_parameters.size() < args.size()) return false;
      for (size_t i = 0; i < args.size(); ++i)
        if (t.type_parameters[i] == is_value(args[i])) return false;
      return true;
    };
    for (const TemplateKernel& t : overloads)
      if (t.type_parameters.size() == args.size() && kinds_match(t)) return t;
    for (const TemplateKernel& t : overloads)
      if (kinds_match(t)) return t;
    return overloads.back();
  }

  // template [[host_name("x")]] [[kernel]] decltype(NAME<ARGS>) NAME<ARGS>;
  void lower_instantiation(size_t begin, size_t kernel_attribute, size_t after_attributes) {
    std::string host_name;
    for (size_t j = begin; j < kernel_attribute; ++j)
      if (is(j, "host_name") && is(j + 1, "(")) {
        // Adjacent string literals concatenate: host_name("softmax_" "float32").
        for (size_t l = j + 2; l < count() && view_.is_literal(l); ++l)
          host_name += std::string(text(l)).substr(1, text(l).size() - 2);
      }
    if (host_name.empty()) fail(begin, "explicit kernel instantiations need [[host_name(\"name\")]]");
    size_t semi = after_attributes;
    while (semi < count() && !is(semi, ";")) ++semi;
    size_t name = after_attributes;
    while (name < semi && !(templates_.contains(std::string(text(name))) && is(name + 1, "<"))) ++name;
    if (semi == count()) fail(begin, fmt::format("explicit kernel instantiation '{}' needs a closing ';'", host_name));
    if (name == semi) {
      // `template [[host_name("x")]] [[kernel]] void NAME(const device float* in [[buffer(0)]], ...);`
      // (MLX's conv.metal): no template argument list; C++14 [temp.explicit]/6
      // deduces them from the declared parameter types ([temp.deduct.decl]).
      // The kernel takes the instantiation's own parameter list, and the
      // thunk names the specialization by that function type:
      // static_cast<void (&)(types)>(NAME), deduction from a function type as
      // in the declaration ([temp.deduct.funcaddr]).
      size_t open = after_attributes;
      while (open < semi && !(templates_.contains(std::string(text(open))) && is(open + 1, "("))) ++open;
      if (open == semi || matching(open + 1) + 1 != semi)
        fail(begin, fmt::format("kernel '{}' instantiates no templated kernel defined before it", host_name));
      const TemplateKernel& t = templates_.at(std::string(text(open))).back();
      kernels_.push_back(build_kernel(open, matching(open + 1), t.scope, host_name, std::string(text(open)), true));
      for (size_t j = begin; j <= semi; ++j) replace(j, "");
      return;
    }
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
    const TemplateKernel& t = template_for(std::string(text(name)), args);
    std::string callee = lowered_text(name, args_close + 1);
    for (size_t i = 0; i < t.parameters.size() && i < args.size(); ++i) substitutions_[t.parameters[i]] = args[i];
    kernels_.push_back(build_kernel(t.name_token, t.close, t.scope, host_name, callee));
    substitutions_.clear();
    for (size_t j = begin; j <= semi; ++j) replace(j, "");
  }

  // deduced: callee is a template's name whose arguments follow from the
  // parameter types at [name_token + 2, close), an explicit instantiation's.
  Kernel build_kernel(size_t name_token, size_t close, const std::vector<std::string>& scope, std::string entry,
                      std::string callee, bool deduced = false) {
    Kernel kernel;
    kernel.signature.name = entry;
    if (callee.empty()) callee = entry;
    kernel.signature.location = fmt::format("{}:{}", view_.file(name_token), view_.line(name_token));
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
    if (deduced) {
      std::string types;
      for (size_t i = 0; i < spans.size(); ++i)
        types += (i ? ", " : "") + parameter_type(kernel.signature.params[i], spans[i].first, spans[i].second);
      callee = fmt::format("static_cast<void (&)({})>({})", types, callee);
    }
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
    while (attr < end && !(is(attr, "[") && in_attribute(attr))) ++attr;
    size_t name = attr - 1;
    // `constant const int64_t strides[3]` (MLX's rope and binary kernels): a
    // parameter of array type is adjusted to a pointer to its element (C++14
    // [dcl.fct]/5, which MSL follows), so Metal binds it as a buffer.
    std::string array_dims = array_declarator_dims(name);
    if (!array_dims.empty()) name = array_declarator_name(name);
    if (!is_identifier(name) || name <= begin) fail(begin, "kernel parameter needs a type and a name");
    KernelParam param;
    param.name = std::string(text(name));
    param.type = original_text(begin, name) + adjusted_array_pointer(array_dims);
    bool pointer = !array_dims.empty();
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
        // By value, it is a resource handle bound like a buffer: a
        // visible_function_table (MSL 2.15); the thunk bit-casts the bound
        // 64-bit value to it (buffer_handle below).
        // A scalar or vector is none (the type's last name: not a template
        // argument): it is a value that needs a pointer.
        const std::string_view last_name = name > begin ? text(name - 1) : std::string_view();
        const bool named_value_type = msl::is_scalar_type_name(last_name) || msl::is_vector_type_name(last_name);
        const bool handle = param.space == AddressSpace::none && !pointer && !param.is_reference && !named_value_type;
        if (!handle && param.space != AddressSpace::device && param.space != AddressSpace::constant)
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
    if (param.kind != KernelParam::Kind::builtin && !param.is_reference && !is_buffer_handle(param)) {
      if (!pointer) fail(begin, fmt::format("buffer parameter '{}' must be a pointer or a reference", param.name));
    }
    return param;
  }

  // The `[N]...` suffixes of an array declarator ending at `last` (a `]`),
  // as written; "" when the parameter is not an array.
  std::string array_declarator_dims(size_t last) const {
    if (!is(last, "]")) return "";
    return original_text(array_declarator_name(last) + 1, last + 1);
  }
  // The name token before the `[N][M]` suffixes ending at `last`.
  size_t array_declarator_name(size_t last) const {
    while (is(last, "]") && last > 0) {
      int depth = 0;
      for (; last > 0; --last) {
        if (is(last, "]")) ++depth;
        if (is(last, "[") && --depth == 0) break;
      }
      --last;
    }
    return last;
  }
  // `T a[N]` is a `T*`; `T a[N][M]` a `T (*)[M]`.
  static std::string adjusted_array_pointer(const std::string& dims) {
    if (dims.empty()) return "";
    size_t inner = dims.find(']');
    std::string rest = dims.substr(inner + 1);
    return rest.empty() ? "*" : " (*)" + rest;
  }

  // The lowered type of the parameter at [begin, end), arrays adjusted.
  std::string parameter_type(const KernelParam& param, size_t begin, size_t end) {
    size_t name = begin;
    while (name < end && text(name) != param.name) ++name;
    std::string type = lowered_text(begin, name);
    size_t attr = name + 1;
    while (attr < end && !(is(attr, "[") && in_attribute(attr))) ++attr;
    return type + adjusted_array_pointer(array_declarator_dims(attr - 1));
  }

  // A [[buffer]] parameter passed by value in no address space: a resource
  // handle such as a visible_function_table, not a pointer to memory.
  static bool is_buffer_handle(const KernelParam& param) {
    return param.kind == KernelParam::Kind::buffer && param.space == AddressSpace::none && !param.is_reference &&
           param.type.find('*') == std::string::npos;
  }

  std::string thunk_argument(const KernelParam& param, size_t begin, size_t end) {
    std::string type = parameter_type(param, begin, end);
    size_t name = begin;
    while (name < end && text(name) != param.name) ++name;
    switch (param.kind) {
      case KernelParam::Kind::buffer:
      case KernelParam::Kind::threadgroup_buffer: {
        const char* table = param.kind == KernelParam::Kind::buffer ? "buffers" : "threadgroup_buffers";
        if (is_buffer_handle(param)) return fmt::format("__mf_buffer_handle<{}>(__mf_a->buffers[{}])", type, param.index);
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
  //
  // An initializer (`threadgroup float local_buffer[32] = {0};`, MLX's
  // layer_norm) is accepted and not applied. Apple's compiler accepts it (MLX
  // ships it), the MSL specification gives it no meaning (section 4.4 says a
  // threadgroup variable is allocated per threadgroup and lives as long as
  // it; nothing says who would store the initial value, or when relative to
  // the other threads), and OpenCL C, whose compiler Metal's descends from,
  // forbids initializing `__local` variables. Applying it would be a guess:
  // once per threadgroup, or by every thread as it reaches the declaration
  // (a race with the writes of threads already past it). Not applied, the
  // storage starts unwritten like any threadgroup allocation: a kernel that
  // writes before it reads (MLX zeroes local_buffer in initialize_buffer, then
  // synchronizes) computes what Metal computes under any reading, and one
  // that reads the initial value gets an uninitialized-read finding from the
  // detectors rather than a value chosen here (docs/verification.md,
  // "Third-party kernels").
  void lower_threadgroup_declarations() {
    for (auto [body_begin, body_end] : kernel_bodies_) {
      for (size_t k = body_begin + 1; k < body_end; ++k) {
        if (!is(k, "threadgroup") || !(is(k - 1, "{") || is(k - 1, "}") || is(k - 1, ";"))) continue;
        size_t semi = k;
        int depth = 0;
        bool pointer = false;
        size_t first_bracket = 0;
        std::vector<size_t> commas;  // between declarators: `threadgroup float a[4][8], b[4][8];` (Metal accepts it)
        std::vector<size_t> initializers;  // the `=` of each declarator that has one (see above)
        for (; semi < body_end; ++semi) {
          std::string_view t = text(semi);
          if (t == ";" && depth == 0) break;
          if (t == "(" || t == "[" || t == "<" || t == "{") {
            if (t == "[" && depth == 0 && !first_bracket) first_bracket = semi;
            ++depth;
          }
          if (t == ")" || t == "]" || t == ">" || t == "}") --depth;
          if (depth == 0 && t == "=") initializers.push_back(semi);
          if (depth == 0 && (t == "*" || t == "&") && !first_bracket) pointer = true;
          if (depth == 0 && t == ",") commas.push_back(semi);
        }
        if (pointer) continue;  // a private pointer/reference to threadgroup memory
        // A declarator ends at its `=` when it has an initializer.
        auto declarator_end = [&](size_t begin, size_t end) {
          for (size_t e : initializers)
            if (e > begin && e < end) return e;
          return end;
        };
        const size_t first_end = declarator_end(k, commas.empty() ? semi : commas.front());
        if (first_bracket > first_end) first_bracket = 0;
        size_t name = first_bracket ? first_bracket - 1 : first_end - 1;
        if (!is_identifier(name) || name <= k + 1) fail(k, "malformed threadgroup variable declaration");
        std::string type = lowered_text(k + 1, name);
        // One allocation per declarator, each `name[dims]` of the same type.
        std::string decl;
        commas.push_back(semi);
        for (size_t d = 0, begin = name; d < commas.size(); begin = commas[d] + 1, ++d) {
          if (!is_identifier(begin) || begin >= commas[d]) fail(k, "malformed threadgroup variable declaration");
          const size_t end = declarator_end(begin, commas[d]);
          for (size_t j = begin + 1; j + 1 < end; ++j)
            if (is(j, "[") && is(j + 1, "]"))
              fail(k, fmt::format("threadgroup array '{}' needs its size (its initializer is not applied)", text(begin)));
          std::string dims = original_text(begin + 1, end);
          decl += fmt::format(
              "{4}__local {0} (&{1}){2} = *(__local {0} (*){2})(unsigned long)__mf_tg_alloc({3}u, sizeof({0}{2}), "
              "alignof({0}{2}), \"{1}\")",
              type, text(begin), dims, tg_sites_++, decl.empty() ? "" : "; ");
        }
        for (size_t j = k; j < semi; ++j) replace(j, "");
        replace(k, decl);
        k = semi;
      }
    }
  }

  void map_keywords() {
    for (size_t k = 0; k < count(); ++k) {
      if (in_attribute(k) || !is_identifier(k)) continue;
      if (is(k, "thread")) {
        replace(k, std::string(thread_lowering(k)));
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
  // behave as in Metal) except:
  //  - before a pointer declarator, where the explicit __generic lets
  //    `thread T*` deduce T = float from a local's `__private float*` (clang
  //    deduces `__private float` for a bare `T*`);
  //  - before a reference to an array, `thread ValT (&vals)[N]` (MLX's
  //    sort.h), which is __private: a thread array is a local, and a generic
  //    reference would make its elements __generic lvalues, from which a
  //    `thread T&` parameter deduces T = __generic ValT and `T w = a;` is
  //    an automatic variable in the generic space (clang's error). The
  //    checker lowers `thread` to __private throughout.
  std::string_view thread_lowering(size_t k) const {
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
    if (is(j, "*")) return "__generic";
    if (j > k + 1 && is(j, "(") && is(j + 1, "&") && is_identifier(j + 2) && is(j + 3, ")") && is(j + 4, "["))
      return "__private";
    return "";
  }

  msl::TokenView view_;
  const std::map<uint32_t, ConstantValue>& constants_;
  std::vector<Kernel> kernels_;
  struct TemplateKernel {
    size_t name_token, close;
    std::vector<std::string> scope;
    std::vector<std::string> parameters;
    std::vector<bool> type_parameters;  // per parameter: a type (typename/class), not a value
  };
  std::map<std::string, std::vector<TemplateKernel>> templates_;  // overloads in definition order
  std::map<std::string, std::string> substitutions_;  // template parameter -> argument text
  std::vector<std::pair<size_t, size_t>> kernel_bodies_;
  std::vector<FunctionConstant> function_constants_;
  std::set<std::string> fc_defined_;
  uint32_t tg_sites_ = 0;
};

}  // namespace

LoweredSource lower_msl(std::string_view preprocessed, const std::map<uint32_t, ConstantValue>& constants) {
  try {
    return Lowering(preprocessed, constants).run();
  } catch (const msl::SyntaxError& e) {
    throw CompileError(e.what());  // the same "file:line: error: ..." text
  }
}

}  // namespace mfagen::cpu
