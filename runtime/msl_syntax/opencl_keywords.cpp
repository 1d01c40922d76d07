#include "mfagen/msl/opencl_keywords.h"

#include <fmt/format.h>

#include <set>

namespace mfagen::msl {

bool is_opencl_only_keyword(std::string_view word) {
  // OpenCL C's address-space and access qualifiers and `pipe`. `private_` is
  // no keyword (clang accepts it); the cpu backend's list has always had it,
  // and a consistent rename changes nothing.
  static const std::set<std::string_view> keywords = {"global",    "local",      "generic",    "pipe",    "read_only",
                                                      "write_only", "read_write", "private_"};
  return keywords.contains(word);
}

void rename_opencl_only_keywords(TokenView& v) {
  for (size_t k = 0; k < v.count(); ++k)
    if (!v.in_attribute(k) && v.is_identifier(k) && !v.rewritten(k) && is_opencl_only_keyword(v.text(k)))
      v.replace(k, fmt::format("__mf_id_{}", v.text(k)));
}

}  // namespace mfagen::msl
