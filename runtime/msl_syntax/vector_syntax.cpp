#include "mfagen/msl/vector_syntax.h"

#include <fmt/format.h>

#include <set>

#include "mfagen/msl/cast_context.h"

namespace mfagen::msl {
namespace {

bool after_member_access(const TokenView& v, size_t k) { return k > 0 && (v.is(k - 1, ".") || v.is(k - 1, "->")); }
bool metal_qualified(const TokenView& v, size_t k) { return k >= 2 && v.is(k - 1, "::") && v.is(k - 2, "metal"); }

class VectorSyntaxLowering {
 public:
  VectorSyntaxLowering(TokenView& v, const VectorSyntaxProblemHandler& on_problem) : v_(v), on_problem_(on_problem) {}

  void run() {
    for (size_t k = 0; k + 1 < v_.count(); ++k) {
      if (v_.in_attribute(k)) continue;
      if (lower_vec_template(k)) continue;
      if (v_.is(k, "(") && is_vector_type_name(v_.text(k + 1)) && v_.is(k + 2, ")") && lower_cast(k)) {
        k += 2;
        continue;
      }
      if (is_vector_type_name(v_.text(k)) && v_.is(k + 1, "(")) lower_constructor(k);
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

  TokenView& v_;
  const VectorSyntaxProblemHandler& on_problem_;
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

void lower_vector_syntax(TokenView& v, const VectorSyntaxProblemHandler& on_problem) {
  VectorSyntaxLowering(v, on_problem).run();
}

}  // namespace mfagen::msl
