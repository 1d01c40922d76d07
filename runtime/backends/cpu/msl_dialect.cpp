#include "msl_dialect.h"

#include <string>
#include <vector>

#include "mfagen/msl/decltype_of_locals.h"
#include "mfagen/msl/dependent_casts.h"
#include "mfagen/msl/function_pointers.h"
#include "mfagen/msl/short_vector_braces.h"
#include "mfagen/msl/vec_alias_templates.h"
#include "mfagen/msl/vec_partial_specializations.h"

namespace mfagen::cpu {
namespace {

using msl::TokenView;

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

}  // namespace

void lower_dialect_differences(TokenView& v) {
  msl::lower_decltype(v);
  lower_reference_reinterpret_casts(v);
  // The function pointers extension (msl_lowering.cpp) admits them too.
  if (std::vector<size_t> at = msl::virtual_specifiers(v); !at.empty()) v.fail(at.front(), msl::kVirtualFunctionMessage);
  msl::lower_function_pointer_template_parameters(v);
  msl::lower_short_vector_braces(v);
  msl::lower_dependent_casts(v, [&](size_t k, const std::string& message) { v.fail(k, message); });
  msl::lower_vec_partial_specializations(v);
  msl::lower_vec_in_alias_templates(v);
}

}  // namespace mfagen::cpu
