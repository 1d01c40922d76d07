#include "mfagen/msl/vector_syntax.h"

#include <fmt/format.h>

#include <set>
#include <vector>

#include "mfagen/msl/cast_context.h"

namespace mfagen::msl {
namespace {

bool after_member_access(const TokenView& v, size_t k) { return k > 0 && (v.is(k - 1, ".") || v.is(k - 1, "->")); }
bool metal_qualified(const TokenView& v, size_t k) { return k >= 2 && v.is(k - 1, "::") && v.is(k - 2, "metal"); }

class VectorSyntaxLowering {
 public:
  VectorSyntaxLowering(TokenView& v, const VectorSyntaxProblemHandler& on_problem) : v_(v), on_problem_(on_problem) {}

  void run() {
    collect_vector_aliases();
    for (size_t k = 0; k + 1 < v_.count(); ++k) {
      if (v_.in_attribute(k)) continue;
      if (lower_alias(k)) continue;
      if (lower_vec_template(k)) continue;
      if (v_.is(k, "(") && is_vector_type_name(v_.text(k + 1)) && v_.is(k + 2, ")") && lower_cast(k)) {
        k += 2;
        continue;
      }
      if (is_vector_type_name(v_.text(k)) && v_.is(k + 1, "(")) lower_constructor(k);
      if ((is_vector_type_name(v_.text(k)) || is_vector_alias_at(k)) && !after_member_access(v_, k))
        lower_direct_initialization(k);
    }
  }

 private:
  // Whether `( TYPE )` at k is a cast the rewrite can express.
  bool rewritable_cast(size_t k, size_t operand) {
    switch (cast_context(v_, k, operand)) {
      case CastContext::not_a_cast:
        return false;
      case CastContext::cast:
        return true;
      case CastContext::cast_after_unary_operator:
        on_problem_(VectorSyntaxProblem::unary_operator_before_cast, k, unary_operator_before_cast_message(v_, k));
        return false;
    }
    return false;
  }

  // (float4)x
  bool lower_cast(size_t k) {
    if (!rewritable_cast(k, k + 3)) return false;
    v_.replace(k, "");
    v_.replace(k + 1, fmt::format("::metal::__mf_vec_cast<{}>{{}} ->*", v_.text(k + 1)));
    v_.replace(k + 2, "");
    return true;
  }

  // float4(...), metal::float4(...)
  void lower_constructor(size_t k) {
    if (after_member_access(v_, k) || v_.is(k - 1, "operator")) return;
    bool qualified = metal_qualified(v_, k);
    if (v_.is(k - 1, "::") && !qualified) {
      on_problem_(VectorSyntaxProblem::qualified_constructor, k, "unsupported qualified vector constructor");
      return;
    }
    v_.replace(k, qualified ? fmt::format("__mf_vec_ctor<::metal::{}>", v_.text(k))
                            : fmt::format("::metal::__mf_vec_ctor<{}>", v_.text(k)));
  }

  // `ushort2 origin(n, m);`: a variable direct-initialized by the vector
  // constructor (C++14 [dcl.init]/16: the initializer list is the
  // constructor's arguments; MSL section 2.2 gives vectors those
  // constructors, and metal-flash-attention v1 writes its tile origins so).
  // clang's vectors have no constructors, so the declaration becomes
  // `ushort2 origin = ::metal::__mf_vec_ctor<ushort2>(n, m);`. A function
  // declarator (`float2 f(float x);`, `float2 f() {`) stays: its parentheses
  // are empty or hold a parameter declaration (two names in a row, as in
  // `float x` or `const T`), or a body follows them.
  void lower_direct_initialization(size_t k) {
    const size_t name = k + 1, open = k + 2;
    if (!v_.is_identifier(name) || !v_.is(open, "(") || v_.text(name).starts_with("__")) return;  // __attribute__
    if (v_.file(k).find("/mfagen_standin/") != std::string_view::npos) return;
    const size_t close = v_.find_matching(open);
    if (close >= v_.count() || close == open + 1) return;
    if (!v_.is(close + 1, ";") && !v_.is(close + 1, ",")) return;
    int depth = 0;
    for (size_t j = open + 1; j < close; ++j) {
      if (v_.is(j, "(") || v_.is(j, "[") || v_.is(j, "{")) ++depth;
      if (v_.is(j, ")") || v_.is(j, "]") || v_.is(j, "}")) --depth;
      if (depth != 0) continue;
      if (v_.is_identifier(j) && v_.is_identifier(j + 1)) return;
      // An unnamed parameter (`float2 f(float, device int*);`): a type name
      // that is not a functional cast.
      if (names_a_type(v_.text(j)) && !v_.is(j + 1, "(")) return;
    }
    v_.replace(open, fmt::format("= ::metal::__mf_vec_ctor<{}>(", v_.text(k)));
  }

  static bool names_a_type(std::string_view t) {
    static const std::set<std::string_view> qualifiers = {"void", "const", "device", "thread", "constant",
                                                          "threadgroup"};
    return qualifiers.contains(t) || is_scalar_type_name(t) || is_vector_type_name(t);
  }

  // metal::vec<T, N>(...) and (vec<T, N>)x, the template spelling of vectors.
  bool lower_vec_template(size_t k) {
    size_t type = v_.is(k, "(") ? k + 1 : k;
    if (!v_.is(type, "vec") || !v_.is(type + 1, "<") || after_member_access(v_, type)) return false;
    size_t close = v_.find_matching(type + 1);
    if (close == v_.count()) {
      on_problem_(VectorSyntaxProblem::unbalanced_template_arguments, type + 1, "unbalanced '<'");
      return false;
    }
    if (type == k + 1) {  // a C-style cast
      if (!v_.is(close + 1, ")") || !rewritable_cast(k, close + 2)) return false;
      v_.replace(k, "");
      v_.replace(type, "::metal::__mf_vec_cast<::metal::vec");
      v_.replace(close, ">>{} ->*");
      v_.replace(close + 1, "");
      return true;
    }
    if (!v_.is(close + 1, "(") || v_.is(type - 1, "operator")) return false;
    v_.replace(type, metal_qualified(v_, type) ? "__mf_vec_ctor<::metal::vec" : "::metal::__mf_vec_ctor<::metal::vec");
    v_.replace(close, ">>");
    return true;
  }

  // An alias of a vector type names that vector type (C++14 [dcl.typedef]/2:
  // a typedef-name is a synonym for its type), so `complex_T(x, -y)` with
  // `using complex_T = vec<scalar_T, 2>;` is Metal's vector constructor, as
  // `float2(x, -y)` is (MSL section 2.2: vec<T, n> names the builtin
  // vectors; MLX's fft/readwrite.h). clang sees a functional cast to a
  // (dependent) ext vector type instead, which takes one scalar. The alias
  // definitions counted: `using NAME = [typename] [::][metal::]vec<...>;`,
  // `using NAME = [metal::]float2;` (any builtin vector name or an alias
  // counted before), and the same as `typedef ... NAME;`. A use is rewritten
  // from the declaration to the end of the braces enclosing it (the class,
  // function or namespace body; the file at global scope), where the name
  // means the alias. Aliases of the stand-in's own headers are left alone.
  struct VectorAlias {
    std::string name;
    size_t begin = 0;  // the first token after the declaration
    size_t end = 0;    // the token closing the enclosing braces, or count()
  };

  // Token index after `[typename] [::] [metal ::]` at j.
  size_t skip_type_prefix(size_t j) const {
    if (v_.is(j, "typename")) ++j;
    if (v_.is(j, "::")) ++j;
    if (v_.is(j, "metal") && v_.is(j + 1, "::")) j += 2;
    return j;
  }

  // The token after a vector type spelled at j (`vec<...>`, `float2`, a
  // vector alias), or 0 when j spells no vector type.
  size_t vector_type_end(size_t j, const std::set<std::string, std::less<>>& known) const {
    j = skip_type_prefix(j);
    if (v_.is(j, "vec") && v_.is(j + 1, "<")) {
      size_t close = v_.find_matching(j + 1);
      return close < v_.count() ? close + 1 : 0;
    }
    if (v_.is_identifier(j) && (is_vector_type_name(v_.text(j)) || known.contains(v_.text(j)))) return j + 1;
    return 0;
  }

  size_t enclosing_close(size_t k) const {
    int depth = 0;
    for (size_t j = k; j < v_.count(); ++j) {
      if (v_.is(j, "{")) ++depth;
      if (v_.is(j, "}") && --depth < 0) return j;
    }
    return v_.count();
  }

  void collect_vector_aliases() {
    std::set<std::string, std::less<>> known;
    for (size_t k = 0; k + 3 < v_.count(); ++k) {
      if (v_.in_attribute(k) || v_.file(k).find("/mfagen_standin/") != std::string_view::npos) continue;
      if (v_.is(k, "using") && v_.is_identifier(k + 1) && v_.is(k + 2, "=")) {
        size_t end = vector_type_end(k + 3, known);
        if (!end || !v_.is(end, ";")) continue;
        known.emplace(v_.text(k + 1));
        aliases_.push_back({std::string(v_.text(k + 1)), end + 1, enclosing_close(end + 1)});
      } else if (v_.is(k, "typedef")) {
        size_t end = vector_type_end(k + 1, known);
        if (!end || !v_.is_identifier(end) || !v_.is(end + 1, ";")) continue;
        known.emplace(v_.text(end));
        aliases_.push_back({std::string(v_.text(end)), end + 2, enclosing_close(end + 2)});
      }
    }
  }

  bool is_vector_alias_at(size_t k) const {
    if (aliases_.empty() || !v_.is_identifier(k)) return false;
    for (const VectorAlias& a : aliases_)
      if (k >= a.begin && k < a.end && v_.is(k, a.name)) return true;
    return false;
  }

  // NAME(...) and (NAME)x for a vector alias NAME in its scope.
  bool lower_alias(size_t k) {
    if (v_.is(k, "(") && is_vector_alias_at(k + 1) && v_.is(k + 2, ")") && !v_.is(k - 1, "::")) {
      if (!rewritable_cast(k, k + 3)) return false;
      v_.replace(k, "");
      v_.replace(k + 1, fmt::format("::metal::__mf_vec_cast<{}>{{}} ->*", v_.text(k + 1)));
      v_.replace(k + 2, "");
      return true;
    }
    if (!is_vector_alias_at(k) || !v_.is(k + 1, "(")) return false;
    if (after_member_access(v_, k) || v_.is(k - 1, "operator") || v_.is(k - 1, "::")) return false;
    v_.replace(k, fmt::format("::metal::__mf_vec_ctor<{}>", v_.text(k)));
    return true;
  }

  TokenView& v_;
  const VectorSyntaxProblemHandler& on_problem_;
  std::vector<VectorAlias> aliases_;
};

}  // namespace

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

bool is_scalar_type_name(std::string_view name) {
  static const std::set<std::string_view> names = {
      "bool",    "char",     "uchar",   "short",    "ushort",   "int",      "uint",     "long",
      "ulong",   "half",     "float",   "bfloat",   "int8_t",   "uint8_t",  "int16_t",  "uint16_t",
      "int32_t", "uint32_t", "int64_t", "uint64_t", "size_t",   "unsigned", "signed"};
  return names.contains(name);
}

void lower_vector_syntax(TokenView& v, const VectorSyntaxProblemHandler& on_problem) {
  VectorSyntaxLowering(v, on_problem).run();
}

}  // namespace mfagen::msl
