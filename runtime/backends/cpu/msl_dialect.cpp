#include "msl_dialect.h"

#include <fmt/format.h>

#include <regex>
#include <set>
#include <string>

#include "mfagen/msl/cast_context.h"

namespace mfagen::cpu {
namespace {

using msl::TokenView;

// From the stand-in's own headers, which spell out what the passes insert.
bool in_standin(const TokenView& v, size_t k) { return v.file(k).find("/mfagen_standin/") != std::string::npos; }

// C++ for OpenCL types a local or parameter `int x` as `__private int`, so
// decltype(x) would carry an address space Metal's `thread int` does not
// show (MLX: integral_constant<decltype(res), res> with a static constant
// member). __mf_unprivate_t drops a top-level __private and nothing else.
void lower_decltype(TokenView& v) {
  for (size_t k = 0; k + 2 < v.count(); ++k) {
    if (!v.is(k, "decltype") || !v.is(k + 1, "(") || v.is(k + 2, "auto") || v.in_attribute(k)) continue;
    size_t close = v.matching(k + 1);
    // decltype(f<...>) names a function type (llama.cpp's kernel typedefs); leave it.
    if (v.is_identifier(k + 2) && v.is(k + 3, "<") && v.matching(k + 3) + 1 == close) continue;
    v.replace(k, "__mf_unprivate_t<decltype");
    v.replace(close, ")> ");
  }
}

// reinterpret_cast<thread T&>(x) -> __mf_reinterpret_ref<T&>(x) (see
// mfagen_standin/lowering_support.h); casts to device, threadgroup or
// constant references keep their matching address space and stay as written.
void lower_reference_reinterpret_casts(TokenView& v) {
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "reinterpret_cast") || !v.is(k + 1, "<")) continue;
    size_t close = v.matching(k + 1);
    if (!v.is(close - 1, "&") || v.is(close - 2, "&")) continue;
    bool shared_space = false;
    for (size_t j = k + 2; j < close; ++j)
      shared_space |= v.is(j, "device") || v.is(j, "constant") || v.is(j, "threadgroup");
    if (!shared_space) v.replace(k, "__mf_reinterpret_ref");
  }
}

// clang-16's C++ for OpenCL rejects every argument for a pointer-to-function
// template parameter (`template <void (*deq)(...)>`, llama.cpp's
// dequantizers); a reference-to-function parameter takes the same function
// names and is called the same way.
void lower_function_pointer_template_parameters(TokenView& v) {
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<")) continue;
    size_t close = v.matching(k + 1);
    for (size_t j = k + 2; j + 3 < close; ++j)
      if (v.is(j, "(") && v.is(j + 1, "*") && v.is_identifier(j + 2) && v.is(j + 3, ")") && v.is(j + 4, "("))
        v.replace(j + 1, "&");
  }
}

// Metal's vec<T, N> deduces T and N; the stand-in's goes through a trait
// (so that vec<bfloat, N> and vec<bool, N>, which clang cannot make ext
// vectors of, exist) and does not. Alias templates over vec exist to be
// deduced through (MLX: `template <class U> using dtype_frag_t =
// typename metal::vec<U, 2>;` in `mma(thread dtype_frag_t<A>& a)`), so
// there vec is spelled as the ext vector itself: deducible, and a compile
// error for bfloat or bool elements rather than anything silent.
void lower_vec_in_alias_templates(TokenView& v) {
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<")) continue;
    if (in_standin(v, k)) continue;
    size_t close = v.matching(k + 1);
    if (!v.is(close + 1, "using") || !v.is_identifier(close + 2) || !v.is(close + 3, "=")) continue;
    for (size_t j = close + 4; j + 1 < v.count() && !v.is(j, ";"); ++j) {
      if (!v.is(j, "vec") || !v.is(j + 1, "<") || v.is(j - 1, ".") || v.is(j - 1, "->")) continue;
      bool qualified = j >= 2 && v.is(j - 1, "::") && v.is(j - 2, "metal");
      if (qualified) v.replace(j - 2, "");
      v.replace(j, qualified ? "__mf_ext_vec" : "::__mf_ext_vec");
    }
  }
}

// `(T)x` and `T(x)` inside a template whose type parameter T may turn out
// to be a vector (llama.cpp: `(q4_t) q4[i]`, `s2_t(x)` with q4_t = half4):
// clang would bit-cast or reject them, Metal converts values. They become
// `::metal::__mf_dep_cast<T>{} ->* x` and `::metal::__mf_dep_ctor<T>(x)`,
// which decide at instantiation (mfagen_standin/conversions.h).
void lower_dependent_casts(TokenView& v) {
  for (size_t k = 0; k + 1 < v.count(); ++k) {
    if (!v.is(k, "template") || !v.is(k + 1, "<")) continue;
    // The stand-in spells its own conversions out (and implements these).
    if (in_standin(v, k)) continue;
    size_t close = v.matching(k + 1);
    std::set<std::string, std::less<>> type_parameters;
    for (size_t j = k + 2; j + 1 < close; ++j)
      if ((v.is(j, "typename") || v.is(j, "class")) && v.is_identifier(j + 1) && !v.is(j + 1, "...") &&
          (v.is(j + 2, ",") || v.is(j + 2, "=") || j + 2 == close))
        type_parameters.emplace(v.text(j + 1));
    if (type_parameters.empty()) continue;
    size_t body = close + 1;
    for (int depth = 0; body < v.count(); ++body) {
      if (v.is(body, "(") || v.is(body, "[")) ++depth;
      if (v.is(body, ")") || v.is(body, "]")) --depth;
      if (depth == 0 && (v.is(body, "{") || v.is(body, ";"))) break;
    }
    if (!v.is(body, "{")) continue;
    size_t end = v.matching(body);
    for (size_t j = body; j + 3 < end; ++j) {
      bool functional = type_parameters.contains(v.text(j)) && v.is(j + 1, "(") && !v.is(j - 1, ".") &&
                        !v.is(j - 1, "->") && !v.is(j - 1, "::") && !v.is(j - 1, "operator");
      if (functional) {  // T(args...)
        v.replace(j, fmt::format("::metal::__mf_dep_ctor<{}>", v.text(j)));
        continue;
      }
      if (!v.is(j, "(") || !v.is(j + 2, ")") || !type_parameters.contains(v.text(j + 1))) continue;
      msl::CastContext context = msl::cast_context(v, j, j + 3);
      if (context == msl::CastContext::cast_after_unary_operator)
        v.fail(j, msl::unary_operator_before_cast_message(v, j));
      if (context == msl::CastContext::not_a_cast) continue;
      v.replace(j, "");
      v.replace(j + 1, fmt::format("::metal::__mf_dep_cast<{}>{{}} ->*", v.text(j + 1)));
      v.replace(j + 2, "");
    }
  }
}

// `float4 acc = {0.f};`: Metal zero-fills the elements a brace list leaves
// out, C++ for OpenCL rejects the short list. Declarations of builtin
// vector types with a brace initializer become __mf_vector_braces<T>(...)
// (mfagen_standin/lowering_support.h), which does what Metal does. The type
// may also be `vec<T, N>` / `metal::vec<T, N>` and the initializer a direct
// list, `metal::vec<float, 2> sum{0};` (MLX's steel_attention_nax.h).
void lower_short_vector_braces(TokenView& v) {
  static const std::regex vector_type("(float|half|int|uint|short|ushort|char|uchar|long|ulong)[234]");
  for (size_t k = 0; k + 3 < v.count(); ++k) {
    size_t last = k;  // the type's last token
    std::string type;
    if (v.is_identifier(k) && std::regex_match(std::string(v.text(k)), vector_type)) {
      type = v.text(k);
    } else if (v.is(k, "vec") && v.is(k + 1, "<") && (!v.is(k - 1, "::") || v.is(k - 2, "metal"))) {
      last = v.find_matching(k + 1);
      if (last >= v.count()) continue;
      type = v.is(k - 1, "::") ? "metal::" : "";
      for (size_t j = k; j <= last; ++j) type += fmt::format("{}{}", v.text(j), v.is(j, ",") ? " " : "");
    } else {
      continue;
    }
    // `float4 a = {0.f}, b{0.f};`: every declarator of the declaration.
    for (size_t name = last + 1; v.is_identifier(name);) {
      const bool copy = v.is(name + 1, "=") && v.is(name + 2, "{");
      if (!copy && !v.is(name + 1, "{")) break;
      const size_t open = copy ? name + 2 : name + 1;
      size_t close = v.matching(open);
      bool nested = false;
      for (size_t j = open + 1; j < close; ++j) nested |= v.is(j, "{");
      if (!nested) {
        v.replace(open, fmt::format("{}__mf_vector_braces<{}>(", copy ? "" : "= ", type));
        v.replace(close, ")");
      }
      if (!v.is(close + 1, ",")) break;
      name = close + 2;
    }
    k = last;
  }
}

}  // namespace

void lower_dialect_differences(TokenView& v) {
  lower_decltype(v);
  lower_reference_reinterpret_casts(v);
  lower_function_pointer_template_parameters(v);
  lower_short_vector_braces(v);
  lower_dependent_casts(v);
  lower_vec_in_alias_templates(v);
}

}  // namespace mfagen::cpu
