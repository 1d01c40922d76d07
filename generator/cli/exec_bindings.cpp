#include "exec_bindings.h"

#include <fmt/format.h>

#include <algorithm>

#include "buffer_types.h"
#include "errors.h"

namespace mfagen::cli {
namespace {

std::vector<const cpu::KernelParam*> params_of(const cpu::KernelSignature& kernel, cpu::KernelParam::Kind kind) {
  std::vector<const cpu::KernelParam*> out;
  for (const cpu::KernelParam& p : kernel.params)
    if (p.kind == kind) out.push_back(&p);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->index < b->index; });
  return out;
}

const cpu::KernelParam* param_at(const std::vector<const cpu::KernelParam*>& params, uint32_t index) {
  for (const cpu::KernelParam* p : params)
    if (p->index == index) return p;
  return nullptr;
}

// "0 (x), 1 (y)" for error messages.
std::string list_params(const std::vector<const cpu::KernelParam*>& params) {
  std::vector<std::string> items;
  for (const cpu::KernelParam* p : params) items.push_back(fmt::format("{} ({})", p->index, p->name));
  return fmt::format("{}", fmt::join(items, ", "));
}

std::string declaration(const cpu::KernelParam& p, std::string_view attribute) {
  return fmt::format("`{} {} [[{}({})]]`", p.type, p.name, attribute, p.index);
}

// Function-constant types as the user names them: drop qualifiers/namespace.
std::string plain_type(std::string type) {
  for (std::string_view drop : {"constant ", "const ", "metal::"})
    for (size_t at; (at = type.find(drop)) != std::string::npos;) type.erase(at, drop.size());
  while (!type.empty() && type.back() == ' ') type.pop_back();
  return type;
}

}  // namespace

std::string describe_kernels(const cpu::Module& module) {
  std::vector<std::string> names;
  for (const cpu::KernelSignature& k : module.kernels()) names.push_back(fmt::format("`{}`", k.name));
  if (names.empty()) return "the file declares no kernel functions";
  return fmt::format("kernels in the file: {}", fmt::join(names, ", "));
}

void check_buffers(const cpu::Module& module, const cpu::KernelSignature& kernel,
                   const std::vector<ExecBuffer>& buffers) {
  auto params = params_of(kernel, cpu::KernelParam::Kind::buffer);
  for (const ExecBuffer& b : buffers) {
    const cpu::KernelParam* p = param_at(params, b.index);
    if (!p)
      throw UserError(fmt::format("--buffer {}={}: kernel `{}` has no [[buffer({})]] parameter; {}", b.index,
                                  b.file, kernel.name, b.index,
                                  params.empty() ? "it takes no buffers"
                                                 : "its buffer indices are " + list_params(params)));
    std::string why = buffer_mismatch(p->type, p->is_reference, b.array.dtype, b.array.element_count());
    if (!why.empty())
      throw UserError(fmt::format("--buffer {}={}: does not fit {}: {}", b.index, b.file,
                                  declaration(*p, "buffer"), why));
  }
  std::vector<std::string> missing;
  for (const cpu::KernelParam* p : params) {
    bool given = std::any_of(buffers.begin(), buffers.end(), [&](const ExecBuffer& b) { return b.index == p->index; });
    if (!given && module.parameter_present(*p)) missing.push_back(declaration(*p, "buffer"));
  }
  if (!missing.empty())
    throw UserError(fmt::format("kernel `{}` needs a --buffer INDEX=FILE.npy for {}", kernel.name,
                                fmt::join(missing, ", ")));
}

void check_threadgroup_bytes(const cpu::KernelSignature& kernel, const std::map<uint32_t, uint64_t>& sizes) {
  auto params = params_of(kernel, cpu::KernelParam::Kind::threadgroup_buffer);
  for (const auto& [index, bytes] : sizes) {
    if (!param_at(params, index))
      throw UserError(fmt::format("--threadgroup-bytes {}={}: kernel `{}` has no [[threadgroup({})]] parameter; {}",
                                  index, bytes, kernel.name, index,
                                  params.empty() ? "it takes no threadgroup buffers"
                                                 : "its threadgroup indices are " + list_params(params)));
    if (bytes % 16 != 0)
      throw UserError(fmt::format("--threadgroup-bytes {}={}: Metal requires a multiple of 16 bytes (use {})",
                                  index, bytes, (bytes + 15) / 16 * 16));
  }
  std::vector<std::string> missing;
  for (const cpu::KernelParam* p : params)
    if (!sizes.count(p->index)) missing.push_back(declaration(*p, "threadgroup"));
  if (!missing.empty())
    throw UserError(fmt::format("kernel `{}` needs a --threadgroup-bytes INDEX=N for {}", kernel.name,
                                fmt::join(missing, ", ")));
}

void check_constants(const cpu::Module& module, const std::map<uint32_t, cpu::ConstantValue>& constants) {
  const auto& declared = module.function_constants();
  std::vector<std::string> known;
  for (const cpu::FunctionConstant& c : declared)
    known.push_back(fmt::format("{} ({} {})", c.index, plain_type(c.type), c.name));
  for (const auto& [index, value] : constants) {
    auto it = std::find_if(declared.begin(), declared.end(),
                           [&](const cpu::FunctionConstant& c) { return c.index == index; });
    if (it == declared.end())
      throw UserError(fmt::format("--constant {}: the file declares no [[function_constant({})]]; {}", index, index,
                                  known.empty() ? "it has no function constants"
                                                : fmt::format("it declares {}", fmt::join(known, ", "))));
    // Metal refuses a constant value of another type; compare only the
    // spellings --constant accepts so typedef'd declarations still work.
    std::string type = plain_type(it->type);
    static const std::vector<std::string> kValueTypes = {"bool", "int", "uint", "short", "ushort", "float", "half"};
    if (std::find(kValueTypes.begin(), kValueTypes.end(), type) != kValueTypes.end() && type != value.type)
      throw UserError(fmt::format("--constant {}: function constant `{}` is declared {}, the value is given as {}",
                                  index, it->name, type, value.type));
  }
}

}  // namespace mfagen::cli
