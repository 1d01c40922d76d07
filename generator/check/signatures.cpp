#include "check/signatures.h"

#include <set>

#include <clang/AST/DeclCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>

#include "check/ast_support.h"
#include "check/tensor_rules.h"

namespace mfagen::check {
namespace {

// Kernel-scope `threadgroup T name[...]` declarations of a body.
class ThreadgroupVariables : public clang::RecursiveASTVisitor<ThreadgroupVariables> {
 public:
  explicit ThreadgroupVariables(const clang::ASTContext& context) : context_(context) {}
  bool VisitVarDecl(clang::VarDecl* var) {
    clang::QualType type = var->getType();
    // A template kernel's threadgroup variable is a reference to its storage
    // (lowering.cpp, lower_threadgroup_variables_of_template_kernel).
    if (type->isReferenceType() && is_lowered_threadgroup_variable(*var)) type = type->getPointeeType();
    if (type.getAddressSpace() == clang::LangAS::opencl_local && !type->isDependentType() &&
        !type->isIncompleteType())
      bytes += context_.getTypeSizeInChars(type).getQuantity();
    return true;
  }
  static bool is_lowered_threadgroup_variable(const clang::VarDecl& var) {
    for (const MslAttribute& a : msl_attributes(var))
      if (a.name == "threadgroup_variable") return true;
    return false;
  }
  uint64_t bytes = 0;

 private:
  const clang::ASTContext& context_;
};

BufferParam buffer_param(const clang::ParmVarDecl& param, uint32_t index, const clang::ASTContext& context) {
  BufferParam b;
  b.index = index;
  b.name = param.getName().str();
  clang::QualType type = param.getType();
  b.is_reference = type->isReferenceType();
  if (type->isPointerType() || type->isReferenceType()) {
    clang::QualType pointee = type->getPointeeType();
    b.space = metal_space(pointee.getAddressSpace());
    // Metal's constant space is read-only whether or not `const` is written
    // (the lowering spells it `const __constant`): a signature names it
    // `constant T*`, as the manifest does.
    b.is_const = pointee.isConstQualified() && b.space != AddressSpace::constant;
    b.element_type = metal_type_name(pointee, context);
  } else {
    b.element_type = metal_type_name(type, context);
  }
  return b;
}

// The [[host_name("x")]] of a kernel: its entry-point name.
std::optional<std::string> host_name(const clang::FunctionDecl& fn) {
  for (const MslAttribute& a : msl_attributes(fn))
    if (a.name == "host_name" && a.argument.size() >= 2) return a.argument.substr(1, a.argument.size() - 2);
  return std::nullopt;
}

}  // namespace

std::vector<KernelSignature> extract_kernels(clang::ASTContext& context, const std::vector<clang::Decl*>& top_level,
                                             const LineOf& line_of) {
  std::vector<KernelSignature> kernels;
  for (const clang::Decl* decl : top_level) {
    // Kernels at namespace scope too.
    std::vector<const clang::Decl*> pending = {decl};
    while (!pending.empty()) {
      const clang::Decl* d = pending.back();
      pending.pop_back();
      if (const auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) {
        for (const clang::Decl* inner : ns->decls()) pending.push_back(inner);
        continue;
      }
      // A templated kernel is a kernel once instantiated under a host name:
      // `template [[host_name("f_float")]] kernel void f<float>(...);`.
      if (const auto* templated = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) {
        std::vector<const clang::Decl*> named;
        for (const clang::FunctionDecl* instance : templated->specializations())
          if (host_name(*instance)) named.push_back(instance);
        pending.insert(pending.end(), named.rbegin(), named.rend());  // popped in instantiation order
        continue;
      }
      const auto* fn = llvm::dyn_cast<clang::FunctionDecl>(d);
      if (!fn || !fn->isThisDeclarationADefinition() || !in_checked_code(*fn) || !is_kernel(*fn))
        continue;
      if (fn->getTemplatedKind() == clang::FunctionDecl::TK_FunctionTemplateSpecialization && !host_name(*fn))
        continue;  // an implicit instantiation: not an entry point
      KernelSignature k;
      k.name = host_name(*fn).value_or(fn->getNameAsString());
      k.line = line_of(fn->getLocation());
      for (const clang::ParmVarDecl* param : fn->parameters()) {
        for (const MslAttribute& a : msl_attributes(*param)) {
          std::optional<uint32_t> index = attribute_index(a);
          if (a.name == "buffer" && index) k.buffers.push_back(buffer_param(*param, *index, context));
          if (a.name == "threadgroup" && index) k.threadgroup_buffers.push_back(buffer_param(*param, *index, context));
          if (is_builtin_attribute(a.name))
            k.builtins.push_back({a.name, param->getName().str(), metal_type_name(param->getType(), context)});
        }
      }
      // Buffers without [[buffer(n)]]: the lowest indices left, in declaration order.
      std::set<uint32_t> taken;
      for (const BufferParam& b : k.buffers) taken.insert(b.index);
      uint32_t next_free = 0;
      for (const clang::ParmVarDecl* param : fn->parameters()) {
        if (!is_implicit_buffer(*param)) continue;
        while (taken.contains(next_free)) ++next_free;
        k.buffers.push_back(buffer_param(*param, next_free, context));
        taken.insert(next_free);
      }
      if (fn->hasBody()) {
        ThreadgroupVariables visitor(context);
        visitor.TraverseStmt(fn->getBody());
        k.threadgroup_memory_bytes = visitor.bytes;
        k.tensor_op_scopes = tensor_op_scopes(*fn, line_of);
      }
      kernels.push_back(std::move(k));
    }
  }
  // Stable: the instantiations of one template share its line and keep their order.
  std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.line < b.line; });
  return kernels;
}

std::vector<FunctionConstant> extract_function_constants(clang::ASTContext& context,
                                                         const std::vector<clang::Decl*>& top_level,
                                                         const LineOf& line_of) {
  std::vector<FunctionConstant> constants;
  std::vector<const clang::DeclContext*> pending;  // namespaces still to read, the last one seen first
  auto visit = [&](const clang::Decl* d) {
    if (const auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) pending.push_back(ns);
    const auto* var = llvm::dyn_cast<clang::VarDecl>(d);
    if (!var || !in_checked_code(*var)) return;
    for (const MslAttribute& a : msl_attributes(*var)) {
      if (a.name != "function_constant") continue;
      FunctionConstant c;
      c.index = attribute_index(a).value_or(~0u);
      c.name = var->getName().str();
      c.type = metal_type_name(var->getType(), context);
      c.line = line_of(var->getLocation());
      constants.push_back(std::move(c));
    }
  };
  for (const clang::Decl* d : top_level) visit(d);
  while (!pending.empty()) {
    const clang::DeclContext* dc = pending.back();
    pending.pop_back();
    for (const clang::Decl* d : dc->decls()) visit(d);
  }
  std::sort(constants.begin(), constants.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return constants;
}

}  // namespace mfagen::check
