// Everything a check reports (diagnostics, kernel signatures, function
// constants) as text, so that two checks of one source compare byte for
// byte and a difference shows as a readable diff.
#pragma once

#include <fmt/format.h>

#include <string>

#include "check/check.h"

namespace mfagen::check::test {

inline std::string result_text(const CheckResult& r) {
  std::string out = fmt::format("file {}\n", r.file);
  for (const Diagnostic& d : r.diagnostics) out += d.to_string() + "\n";
  for (const KernelSignature& k : r.kernels) {
    out += fmt::format("kernel {} line {} threadgroup_memory {}\n", k.name, k.line, k.threadgroup_memory_bytes);
    for (const BufferParam& b : k.buffers) out += fmt::format("  buffer({}) {} {}\n", b.index, b.metal_type(), b.name);
    for (const BufferParam& b : k.threadgroup_buffers)
      out += fmt::format("  threadgroup({}) {} {}\n", b.index, b.metal_type(), b.name);
    for (const BuiltinParam& b : k.builtins) out += fmt::format("  [[{}]] {} {}\n", b.attribute, b.type, b.name);
    for (const TensorOpScope& s : k.tensor_op_scopes)
      out += fmt::format("  execution_simdgroups<{}> line {}\n", s.simdgroups, s.line);
  }
  for (const FunctionConstant& c : r.function_constants)
    out += fmt::format("function_constant({}) {} {} line {}\n", c.index, c.type, c.name, c.line);
  return out;
}

}  // namespace mfagen::check::test
