#include "session/score_function_inputs.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>

#include "io/npy.h"
#include "session/call_error.h"

namespace mfagen::session {

namespace {

// "name=rest" -> (name, rest), for the option named `option`.
std::pair<std::string, std::string> split_assignment(const std::string& argument, const char* option,
                                                     const char* what) {
  const size_t eq = argument.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == argument.size())
    throw CallError(fmt::format("{} {}: expected NAME={}", option, argument, what));
  return {argument.substr(0, eq), argument.substr(eq + 1)};
}

// The arguments as values per declared name, in declaration order: each name
// given once, none unknown, none missing.
std::vector<std::string> by_declared_name(const std::vector<std::string>& arguments,
                                          const std::vector<std::string>& declared, const char* option,
                                          const char* what, const std::string& kernel) {
  std::vector<std::optional<std::string>> values(declared.size());
  for (const std::string& argument : arguments) {
    auto [name, value] = split_assignment(argument, option, what);
    size_t i = 0;
    while (i < declared.size() && declared[i] != name) ++i;
    if (i == declared.size())
      throw CallError(fmt::format("{} {}: kernel {} has no {} named {} (it has: {})", option, argument, kernel,
                                  option + 2, name, declared.empty() ? "none" : fmt::format("{}", fmt::join(declared, ", "))));
    if (values[i]) throw CallError(fmt::format("{} {}: {} is given twice", option, argument, name));
    values[i] = value;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < declared.size(); ++i) {
    if (!values[i])
      throw CallError(fmt::format("kernel {} reads {} {}: give {} {}={}", kernel, option + 2, declared[i], option,
                                  declared[i], what));
    out.push_back(*values[i]);
  }
  return out;
}

}  // namespace

std::vector<std::vector<std::byte>> read_captured_tensors(const std::vector<std::string>& arguments,
                                                          const spec::KernelSpec& spec, const AttentionShape& shape) {
  std::vector<std::string> names;
  for (const expr::CaptureDecl& c : spec.mods.captures) names.push_back(c.name);
  const std::vector<std::string> files = by_declared_name(arguments, names, "--capture", "FILE.npy", spec.name);
  const std::array<int64_t, 5> sizes{int64_t(shape.batch), int64_t(shape.heads_q), int64_t(shape.heads_kv),
                                     int64_t(shape.seq_q), int64_t(shape.seq_k)};
  std::vector<std::vector<std::byte>> out;
  for (size_t i = 0; i < files.size(); ++i) {
    const expr::CaptureDecl& c = spec.mods.captures[i];
    const std::string what = fmt::format("--capture {}={}", c.name, files[i]);
    std::vector<uint64_t> expected;
    for (const expr::LinearForm& e : c.extents) {
      int64_t n = 0;
      try {
        n = e.at(sizes);
      } catch (const std::overflow_error&) {
        throw CallError(fmt::format("{}: extent {} of {} overflows for this call's shape", what, e.text(), c.name));
      }
      if (n < 1)
        throw CallError(fmt::format("{}: extent {} of {} is {} for this call's shape; it must be at least 1", what,
                                    e.text(), c.name, n));
      expected.push_back(uint64_t(n));
    }
    const io::NpyArray array = io::read_npy(files[i]);
    const char* dtype = c.type == expr::CaptureType::float32 ? "<f4" : "<i4";
    if (array.dtype != dtype)
      throw CallError(fmt::format("{}: expected dtype {} ({} is {}), found {}", what, dtype, c.name,
                                  expr::spelling(c.type), array.dtype));
    if (array.shape != expected)
      throw CallError(fmt::format("{}: expected shape {} (the extents {} at this call's shape), found {}", what,
                                  io::shape_repr(expected), fmt::join(c.extent_text, ", "),
                                  io::shape_repr(array.shape)));
    out.push_back(array.data);
  }
  return out;
}

std::vector<float> read_scalars(const std::vector<std::string>& arguments, const spec::KernelSpec& spec) {
  const std::vector<std::string> texts = by_declared_name(arguments, spec.mods.scalars, "--scalar", "VALUE", spec.name);
  std::vector<float> out;
  for (size_t i = 0; i < texts.size(); ++i) {
    char* end = nullptr;
    const double v = std::strtod(texts[i].c_str(), &end);
    if (end == texts[i].c_str() || *end != '\0' || !std::isfinite(v) || std::fabs(v) > 3.4028234663852886e38)
      throw CallError(fmt::format("--scalar {}={}: expected a finite float32 number", spec.mods.scalars[i], texts[i]));
    out.push_back(float(v));
  }
  return out;
}

}  // namespace mfagen::session
