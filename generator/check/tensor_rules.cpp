#include "check/tensor_rules.h"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

#include "check/ast_support.h"
#include "check/rules.h"

namespace mfagen::check {
namespace {

using clang::LangAS;

constexpr uint32_t kMaxSimdgroups = 32;  // 1024 threads per threadgroup

// The specialization of the class template `name` (qualified) that `type` is, or null.
const clang::ClassTemplateSpecializationDecl* specialization_of(clang::QualType type, std::string_view name) {
  if (type.isNull() || type->isDependentType()) return nullptr;
  const auto* spec = llvm::dyn_cast_or_null<clang::ClassTemplateSpecializationDecl>(type->getAsCXXRecordDecl());
  if (!spec || spec->getSpecializedTemplate()->getQualifiedNameAsString() != name) return nullptr;
  return spec;
}

// N of a matmul2d over execution_simdgroups<N> (1 for execution_simdgroup);
// nothing for another type or scope.
std::optional<uint32_t> scope_simdgroups(clang::QualType type) {
  if (!type.isNull() && (type->isPointerType() || type->isReferenceType())) type = type->getPointeeType();
  const auto* op = specialization_of(type, "mpp::tensor_ops::matmul2d");
  if (!op || op->getTemplateArgs().size() < 2 || op->getTemplateArgs()[1].getKind() != clang::TemplateArgument::Type)
    return std::nullopt;
  const auto* scope = specialization_of(op->getTemplateArgs()[1].getAsType(), "metal::execution_simdgroups");
  if (!scope || scope->getTemplateArgs().size() < 1 ||
      scope->getTemplateArgs()[0].getKind() != clang::TemplateArgument::Integral)
    return std::nullopt;
  return static_cast<uint32_t>(scope->getTemplateArgs()[0].getAsIntegral().getZExtValue());
}

// Whether `type` is a cooperative tensor or holds one (array elements,
// fields and bases; not through pointers).
bool holds_cooperative_tensor(clang::QualType type, int depth = 0) {
  while (const clang::ArrayType* array = type->getAsArrayTypeUnsafe()) type = array->getElementType();
  if (specialization_of(type, "metal::cooperative_tensor")) return true;
  const clang::CXXRecordDecl* record = type->getAsCXXRecordDecl();
  if (!record || !record->hasDefinition() || depth > 8) return false;
  record = record->getDefinition();
  for (const clang::FieldDecl* field : record->fields())
    if (!field->getType()->isPointerType() && !field->getType()->isReferenceType() &&
        holds_cooperative_tensor(field->getType(), depth + 1))
      return true;
  for (const clang::CXXBaseSpecifier& base : record->bases())
    if (holds_cooperative_tensor(base.getType(), depth + 1)) return true;
  return false;
}



// What one function of the checked file does with tensor operations.
struct FunctionFacts {
  std::vector<std::pair<uint32_t, clang::SourceLocation>> scopes;  // N of each use of a matmul2d
  std::vector<const clang::FunctionDecl*> callees;                 // functions it calls, with a body
};

class BodyScanner : public clang::RecursiveASTVisitor<BodyScanner> {
 public:
  explicit BodyScanner(FunctionFacts& facts) : facts_(facts) {}

  bool VisitVarDecl(clang::VarDecl* var) {
    use(var->getType(), var->getLocation());
    return true;
  }
  bool VisitCXXTemporaryObjectExpr(clang::CXXTemporaryObjectExpr* e) {
    use(e->getType(), e->getBeginLoc());
    return true;
  }
  bool VisitCXXMemberCallExpr(clang::CXXMemberCallExpr* call) {
    // An op reached through a reference, a pointer or a member.
    if (const clang::Expr* object = call->getImplicitObjectArgument())
      use(object->IgnoreParenImpCasts()->getType(), call->getExprLoc());
    return true;
  }
  bool VisitCallExpr(clang::CallExpr* call) {
    const clang::FunctionDecl* callee = call->getDirectCallee();
    const clang::FunctionDecl* definition = nullptr;
    if (callee && callee->hasBody(definition) && in_checked_code(*definition)) facts_.callees.push_back(definition);
    return true;
  }
  bool VisitCXXConstructExpr(clang::CXXConstructExpr* e) {
    const clang::FunctionDecl* definition = nullptr;
    if (e->getConstructor() && e->getConstructor()->hasBody(definition) && in_checked_code(*definition))
      facts_.callees.push_back(definition);
    return true;
  }

 private:
  void use(clang::QualType type, clang::SourceLocation at) {
    if (std::optional<uint32_t> n = scope_simdgroups(type)) facts_.scopes.push_back({*n, at});
  }
  FunctionFacts& facts_;
};

FunctionFacts scan(const clang::FunctionDecl& fn) {
  FunctionFacts facts;
  if (fn.hasBody()) {
    BodyScanner scanner(facts);
    scanner.TraverseStmt(fn.getBody());
    // A constructor's member initializers run tensor operations too.
    if (const auto* ctor = llvm::dyn_cast<clang::CXXConstructorDecl>(&fn))
      for (const clang::CXXCtorInitializer* init : ctor->inits())
        if (init->isWritten()) scanner.TraverseStmt(init->getInit());
  }
  return facts;
}

// Every scope use reachable from `kernel`, in call order.
std::vector<std::pair<uint32_t, clang::SourceLocation>> reachable_scopes(const clang::FunctionDecl& kernel) {
  std::vector<std::pair<uint32_t, clang::SourceLocation>> out;
  std::set<const clang::FunctionDecl*> seen;
  std::vector<const clang::FunctionDecl*> pending = {&kernel};
  while (!pending.empty()) {
    const clang::FunctionDecl* fn = pending.back();
    pending.pop_back();
    if (!seen.insert(fn).second) continue;
    FunctionFacts facts = scan(*fn);
    out.insert(out.end(), facts.scopes.begin(), facts.scopes.end());
    pending.insert(pending.end(), facts.callees.rbegin(), facts.callees.rend());
  }
  return out;
}

std::optional<uint32_t> max_total_threads(const clang::FunctionDecl& kernel) {
  for (const MslAttribute& a : msl_attributes(kernel))
    if (a.name == "max_total_threads_per_threadgroup") return attribute_index(a);
  return std::nullopt;
}

// The kernels of the checked file: definitions, and templated kernels' instantiations.
void collect_functions(const clang::Decl* d, std::vector<const clang::FunctionDecl*>& out) {
  if (const auto* dc = llvm::dyn_cast<clang::NamespaceDecl>(d)) {
    for (const clang::Decl* inner : dc->decls()) collect_functions(inner, out);
  } else if (const auto* templated = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) {
    for (const clang::FunctionDecl* instance : templated->specializations()) out.push_back(instance);
  } else if (const auto* fn = llvm::dyn_cast<clang::FunctionDecl>(d)) {
    if (fn->isThisDeclarationADefinition()) out.push_back(fn);
  }
}

// Declarations and casts that put a cooperative tensor outside thread memory.
class SpaceScanner : public clang::RecursiveASTVisitor<SpaceScanner> {
 public:
  SpaceScanner(const clang::SourceManager& sm, std::vector<Finding>& findings) : sm_(sm), findings_(findings) {}
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool VisitValueDecl(clang::ValueDecl* decl) {
    if (llvm::isa<clang::FunctionDecl>(decl) || !in_checked_code(sm_, decl->getLocation())) return true;
    check(decl->getType(), decl->getLocation(), fmt::format("'{}'", decl->getNameAsString()));
    return true;
  }
  bool VisitExplicitCastExpr(clang::ExplicitCastExpr* cast) {
    if (in_checked_code(sm_, cast->getBeginLoc())) check(cast->getTypeAsWritten(), cast->getBeginLoc(), "a cast");
    return true;
  }

 private:
  void check(clang::QualType type, clang::SourceLocation at, const std::string& what) {
    if (type.isNull() || type->isDependentType()) return;
    clang::QualType target = type;
    while (const clang::ArrayType* array = target->getAsArrayTypeUnsafe()) target = array->getElementType();
    const char* verb = target->isPointerType() ? "points to" : target->isReferenceType() ? "refers to" : "puts";
    if (target->isPointerType() || target->isReferenceType()) target = target->getPointeeType();
    const LangAS space = target.getAddressSpace();
    if (!in_named_space(space) || !holds_cooperative_tensor(target)) return;
    if (!reported_.insert(at.getRawEncoding()).second) return;
    findings_.push_back(
        {rules::kCooperativeTensorSpace, at,
         fmt::format("{} {} a cooperative tensor in {} memory: cooperative tensors are thread-private (each thread of "
                     "the operation's scope holds its part of the elements); share data through a tensor over {} "
                     "memory with store() and load()",
                     what, verb, space_name(space), space_name(space))});
  }
  const clang::SourceManager& sm_;
  std::vector<Finding>& findings_;
  std::set<clang::SourceLocation::UIntTy> reported_;
};

}  // namespace

std::vector<TensorOpScope> tensor_op_scopes(const clang::FunctionDecl& kernel, const LineOf& line_of) {
  std::vector<TensorOpScope> scopes;
  for (const auto& [n, at] : reachable_scopes(kernel)) {
    if (n <= 1) continue;
    bool known = false;
    for (const TensorOpScope& s : scopes) known |= s.simdgroups == n;
    if (!known) scopes.push_back({n, line_of(at)});
  }
  return scopes;
}

void find_tensor_op_misuse(clang::ASTContext& context, const std::vector<clang::Decl*>& top_level,
                           std::vector<Finding>& findings) {
  SpaceScanner spaces(context.getSourceManager(), findings);
  for (clang::Decl* d : top_level) spaces.TraverseDecl(d);

  std::vector<const clang::FunctionDecl*> functions;
  for (const clang::Decl* d : top_level) collect_functions(d, functions);
  std::set<clang::SourceLocation::UIntTy> reported;
  auto report = [&](clang::SourceLocation at, std::string message) {
    if (reported.insert(at.getRawEncoding()).second)
      findings.push_back({rules::kTensorOpScope, at, std::move(message)});
  };
  for (const clang::FunctionDecl* fn : functions) {
    if (!in_checked_code(*fn)) continue;
    for (const auto& [n, at] : scan(*fn).scopes)
      if (n > kMaxSimdgroups)
        report(at, fmt::format("execution_simdgroups<{}> needs {} threads per threadgroup: a threadgroup has at most "
                               "{} ({} SIMD groups)",
                               n, 32 * n, 32 * kMaxSimdgroups, kMaxSimdgroups));
    if (!is_kernel(*fn)) continue;
    std::optional<uint32_t> limit = max_total_threads(*fn);
    if (!limit) continue;
    for (const auto& [n, at] : reachable_scopes(*fn))
      if (32 * n > *limit && n <= kMaxSimdgroups)
        report(at, fmt::format("execution_simdgroups<{}> needs {} threads per threadgroup but kernel '{}' has at most "
                               "{} ([[max_total_threads_per_threadgroup({})]])",
                               n, 32 * n, fn->getNameAsString(), *limit, *limit));
  }
}

}  // namespace mfagen::check
