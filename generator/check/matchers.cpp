#include "check/matchers.h"

#include <clang/AST/Attr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/ASTMatchers/ASTMatchers.h>
#include <clang/Lex/Lexer.h>
#include <fmt/format.h>

#include <map>
#include <set>

#include "check/ast_support.h"
#include "check/rules.h"

namespace mfagen::check {
namespace {

using namespace clang::ast_matchers;
using clang::LangAS;

// A rule: a callback that reports into the shared findings.
class Rule : public MatchFinder::MatchCallback {
 public:
  explicit Rule(std::vector<Finding>& findings) : findings_(findings) {}

 protected:
  void report(std::string_view rule, clang::SourceLocation at, std::string message) {
    findings_.push_back({rule, at, std::move(message)});
  }

 private:
  std::vector<Finding>& findings_;
};

bool in_private_or_generic(LangAS space) {
  return space == LangAS::opencl_private || space == LangAS::opencl_generic || space == LangAS::Default;
}
bool is_generic(LangAS space) { return space == LangAS::opencl_generic || space == LangAS::Default; }

// metal::visible_function_table<T> (MSL section 2.15), which a kernel takes by
// value with [[buffer(n)]].
bool is_visible_function_table(clang::QualType type) {
  const auto* record = type.getNonReferenceType()->getAsCXXRecordDecl();
  return record && record->getQualifiedNameAsString() == "metal::visible_function_table";
}


// goto
class GotoRule : public Rule {
 public:
  using Rule::Rule;
  void run(const MatchFinder::MatchResult& r) override {
    if (const auto* s = r.Nodes.getNodeAs<clang::Stmt>("goto"))
      report(rules::kGoto, s->getBeginLoc(), "'goto' is not allowed in Metal");
  }
};

// double (Metal has no double precision). A floating literal without a
// suffix is valid Metal: it is a float there, and both the cpu backend and
// this parse type it so (mfagen/msl/literal_types.h); an `l`/`L` suffix
// names a long double, which Metal does not have.
class DoubleRule : public Rule {
 public:
  using Rule::Rule;
  void run(const MatchFinder::MatchResult& r) override {
    if (const auto* literal = r.Nodes.getNodeAs<clang::FloatingLiteral>("literal")) {
      if (!literal->getType()->isSpecificBuiltinType(clang::BuiltinType::LongDouble)) return;
      const clang::SourceManager& sm = *r.SourceManager;
      const clang::SourceLocation at = sm.getSpellingLoc(literal->getLocation());
      const std::string spelling =
          clang::Lexer::getSourceText(clang::CharSourceRange::getTokenRange(at), sm, r.Context->getLangOpts()).str();
      report(rules::kDouble, literal->getLocation(),
             fmt::format("floating literal '{}' is a long double, which Metal does not support (write it without "
                         "the 'L' for float, or with 'h' for half)",
                         spelling));
      return;
    }
    const auto* loc = r.Nodes.getNodeAs<clang::TypeLoc>("type");
    if (!loc) return;
    const auto* builtin = loc->getTypePtr()->getAs<clang::BuiltinType>();
    if (!builtin || !loc->getAs<clang::BuiltinTypeLoc>()) return;
    if (builtin->getKind() == clang::BuiltinType::Double || builtin->getKind() == clang::BuiltinType::LongDouble)
      report(rules::kDouble, loc->getBeginLoc(), "'double' is not supported by Metal (use float)");
  }
};

// static local variables
class StaticLocalRule : public Rule {
 public:
  using Rule::Rule;
  void run(const MatchFinder::MatchResult& r) override {
    const auto* var = r.Nodes.getNodeAs<clang::VarDecl>("var");
    if (!var || var->getType().getAddressSpace() == LangAS::opencl_constant) return;
    report(rules::kStaticLocal, var->getLocation(),
           fmt::format("static local variable '{}' is not allowed in Metal (use a program-scope constant or a "
                       "threadgroup variable)",
                       var->getName().str()));
  }
};

// new, delete, malloc & co
class AllocationRule : public Rule {
 public:
  using Rule::Rule;
  void run(const MatchFinder::MatchResult& r) override {
    if (const auto* e = r.Nodes.getNodeAs<clang::CXXNewExpr>("new"))
      report(rules::kDynamicAllocation, e->getBeginLoc(), "'new' is not allowed in Metal (no dynamic allocation)");
    if (const auto* e = r.Nodes.getNodeAs<clang::CXXDeleteExpr>("delete"))
      report(rules::kDynamicAllocation, e->getBeginLoc(), "'delete' is not allowed in Metal (no dynamic allocation)");
    if (const auto* e = r.Nodes.getNodeAs<clang::CallExpr>("alloc"))
      report(rules::kDynamicAllocation, e->getBeginLoc(),
             fmt::format("'{}' is not available in Metal (no dynamic allocation)",
                         e->getDirectCallee()->getNameAsString()));
  }
};

// A pointer to thread memory stored into device memory outlives the thread's
// registers: `device_struct->p = &local;`, `out[i] = (ulong)&local;`.
// The same for a struct (or array) holding a pointer to thread memory,
// copied or aggregate-initialized into device memory: `out[i] = Holder{&x};`.
class ThreadPointerEscapeRule : public Rule {
 public:
  using Rule::Rule;
  void run(const MatchFinder::MatchResult& r) override {
    if (const auto* copy = r.Nodes.getNodeAs<clang::CXXOperatorCallExpr>("copy")) {
      // The object converts to the generic `this` of operator=: its own type names the space.
      if (copy->getNumArgs() == 2)
        check_record(copy->getArg(0)->IgnoreParenImpCasts()->getType(), copy->getOperatorLoc());
      return;
    }
    const auto* op = r.Nodes.getNodeAs<clang::BinaryOperator>("assign");
    if (!op) return;
    clang::QualType target = op->getLHS()->getType();
    if (target.getAddressSpace() != LangAS::opencl_global) return;
    if (check_record(target, op->getOperatorLoc())) return;
    const clang::Expr* value = op->getRHS()->IgnoreParenCasts();
    const auto* pointer = value->getType()->getAs<clang::PointerType>();
    if (!pointer || !in_private_or_generic(pointer->getPointeeType().getAddressSpace())) return;
    report(rules::kThreadPointerEscape, op->getOperatorLoc(),
           "a pointer to thread memory is stored into device memory (it does not outlive the thread)");
  }

 private:
  // Reports a device-memory `target` of class type holding a thread pointer.
  bool check_record(clang::QualType target, clang::SourceLocation at) {
    if (target.getAddressSpace() != LangAS::opencl_global || target->isDependentType()) return false;
    const std::string field = thread_pointer_field(target, 0);
    if (field.empty()) return false;
    report(rules::kThreadPointerEscape, at,
           fmt::format("a '{}' holding a pointer to thread memory ('{}') is stored into device memory (the pointer "
                       "does not outlive the thread)",
                       target.getUnqualifiedType().getAsString(), field));
    return true;
  }
  // The path of the first field (through nested structs and arrays) that
  // points to thread memory, or "".
  static std::string thread_pointer_field(clang::QualType type, int depth) {
    if (depth > 8) return "";
    while (const clang::ArrayType* array = type->getAsArrayTypeUnsafe()) type = array->getElementType();
    const auto* record = type->getAsRecordDecl();
    if (!record || !record->getDefinition()) return "";
    for (const clang::FieldDecl* f : record->getDefinition()->fields()) {
      clang::QualType field = f->getType();
      while (const clang::ArrayType* array = field->getAsArrayTypeUnsafe()) field = array->getElementType();
      if (const auto* pointer = field->getAs<clang::PointerType>();
          pointer && in_private_or_generic(pointer->getPointeeType().getAddressSpace()))
        return f->getName().str();
      if (std::string inner = thread_pointer_field(field, depth + 1); !inner.empty())
        return f->getName().str() + "." + inner;
    }
    return "";
  }
};

// `float* p = device_ptr;`: C++ for OpenCL converts named address spaces to
// the generic one implicitly; Metal has no generic address space and
// rejects it.
class GenericPointerRule : public Rule {
 public:
  using Rule::Rule;
  void run(const MatchFinder::MatchResult& r) override {
    if (const auto* var = r.Nodes.getNodeAs<clang::VarDecl>("var")) {
      if (var->getInit())
        check(var->getType(), var->getInit(), var->getLocation(), fmt::format("'{}'", var->getName().str()));
    }
    if (const auto* op = r.Nodes.getNodeAs<clang::BinaryOperator>("assign")) {
      std::string name;
      if (const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(op->getLHS()->IgnoreParenImpCasts()))
        name = ref->getDecl()->getNameAsString();
      check(op->getLHS()->getType(), op->getRHS(), op->getOperatorLoc(), fmt::format("'{}'", name));
    }
    if (const auto* call = r.Nodes.getNodeAs<clang::CallExpr>("call")) {
      const clang::FunctionDecl* callee = call->getDirectCallee();
      if (!callee) return;
      // A class's implicit copy or move assignment copies from any address
      // space in Metal (`*(threadgroup V*)dst = *(const device V*)src;`,
      // MLX's steel loaders); only C++ for OpenCL gives its parameter the
      // generic one. The cpu backend runs such copies as written.
      if (callee->isImplicit()) return;
      // A member operator's first argument is its object (ImplicitObjectRule), not a parameter.
      const unsigned first = llvm::isa<clang::CXXOperatorCallExpr>(call) && llvm::isa<clang::CXXMethodDecl>(callee);
      for (unsigned i = 0; i + first < call->getNumArgs() && i < callee->getNumParams(); ++i) {
        const clang::ParmVarDecl* param = callee->getParamDecl(i);
        check(param->getType(), call->getArg(i + first), call->getArg(i + first)->getBeginLoc(),
              fmt::format("'{}' of '{}'", param->getName().str(), callee->getNameAsString()));
      }
    }
    // `float* at(device float* p) { return p; }`: the return type is generic.
    if (const auto* ret = r.Nodes.getNodeAs<clang::ReturnStmt>("return")) {
      const auto* fn = r.Nodes.getNodeAs<clang::FunctionDecl>("returning");
      if (fn && ret->getRetValue())
        check(fn->getReturnType(), ret->getRetValue(), ret->getReturnLoc(),
              fmt::format("the return value of '{}'", fn->getNameAsString()));
    }
  }

 private:
  // `what` names the receiver of the value, quoted: "'p'", "'x' of 'fill'".
  void check(clang::QualType target, const clang::Expr* init, clang::SourceLocation at, const std::string& what) {
    if (target->isDependentType()) return;
    LangAS from = LangAS::Default;
    if (target->isPointerType()) {
      if (!is_generic(target->getPointeeType().getAddressSpace())) return;
      const clang::Expr* e = init->IgnoreParens();
      if (const auto* cleanups = llvm::dyn_cast<clang::ExprWithCleanups>(e)) e = cleanups->getSubExpr()->IgnoreParens();
      const auto* cast = llvm::dyn_cast<clang::ImplicitCastExpr>(e);
      if (!cast || cast->getCastKind() != clang::CK_AddressSpaceConversion) return;
      const auto* source = cast->getSubExpr()->getType()->getAs<clang::PointerType>();
      if (!source) return;
      from = source->getPointeeType().getAddressSpace();
    } else if (target->isReferenceType()) {
      if (!is_generic(target->getPointeeType().getAddressSpace())) return;
      from = init->IgnoreParenImpCasts()->getType().getAddressSpace();
    } else {
      return;
    }
    if (!in_named_space(from)) return;
    report(rules::kGenericPointer, at,
           fmt::format("{} to {} memory given to {}, which has no address space: Metal has no generic "
                       "address space (write '{} {}')",
                       target->isPointerType() ? "pointer" : "reference", space_name(from), what, space_name(from),
                       target->isPointerType() ? "T*" : "T&"));
  }
};

// `device Acc* a; a[i].get();`: a member function without an address-space
// qualifier takes a thread (generic) `this`; Metal rejects calling it on an
// object in device, threadgroup or constant memory unless the function is
// declared for that space (`float get() const device`). Only functions of
// the checked file: the stand-in's classes emulate Metal's builtin types.
class ImplicitObjectRule : public Rule {
 public:
  using Rule::Rule;
  void run(const MatchFinder::MatchResult& r) override {
    const clang::CXXMethodDecl* method = nullptr;
    const clang::Expr* object = nullptr;
    clang::SourceLocation at;
    if (const auto* call = r.Nodes.getNodeAs<clang::CXXMemberCallExpr>("member")) {
      method = call->getMethodDecl();
      object = call->getImplicitObjectArgument();
      at = call->getExprLoc();
    } else if (const auto* call = r.Nodes.getNodeAs<clang::CXXOperatorCallExpr>("operator")) {
      method = llvm::dyn_cast_or_null<clang::CXXMethodDecl>(call->getDirectCallee());
      object = call->getNumArgs() > 0 ? call->getArg(0) : nullptr;
      at = call->getOperatorLoc();
    }
    if (!method || !object || method->isImplicit() || method->isStatic()) return;
    if (!is_generic(method->getMethodQualifiers().getAddressSpace())) return;
    clang::QualType type = object->IgnoreParenImpCasts()->getType();
    if (type->isPointerType()) type = type->getPointeeType();
    const LangAS space = type.getAddressSpace();
    if (!in_named_space(space)) return;
    report(rules::kGenericPointer, at,
           fmt::format("'{}' is called on an object in {} memory, but it takes a thread 'this': Metal has no generic "
                       "address space (declare it '{}(...) {}')",
                       method->getQualifiedNameAsString(), space_name(space), method->getNameAsString(),
                       space_name(space)));
  }
};

// Kernel entry points: void, and every parameter bound by an attribute,
// each buffer/threadgroup/texture index once.
class KernelSignatureRule : public Rule {
 public:
  using Rule::Rule;
  void run(const MatchFinder::MatchResult& r) override {
    const auto* fn = r.Nodes.getNodeAs<clang::FunctionDecl>("fn");
    if (!fn || !is_kernel(*fn)) return;
    if (!fn->hasAttr<clang::OpenCLKernelAttr>() && !fn->getReturnType()->isVoidType())
      report(rules::kKernelReturnType, fn->getLocation(),
             fmt::format("kernel '{}' must return void", fn->getNameAsString()));
    std::map<std::pair<std::string, uint32_t>, const clang::ParmVarDecl*> bound;
    for (const clang::ParmVarDecl* param : fn->parameters()) {
      std::string name = param->getName().str();
      bool binding = false;
      for (const MslAttribute& a : msl_attributes(*param)) {
        if (a.name == "function_constant") continue;
        if (is_builtin_attribute(a.name) || a.name == "stage_in") {
          binding = true;
          continue;
        }
        if (a.name != "buffer" && a.name != "threadgroup" && a.name != "texture" && a.name != "sampler") {
          report(rules::kKernelParameterAttribute, param->getLocation(),
                 fmt::format("kernel parameter '{}' has an unknown attribute '[[{}]]'", name, a.name));
          binding = true;
          continue;
        }
        binding = true;
        std::optional<uint32_t> index = attribute_index(a);
        if (!index) {
          report(rules::kKernelParameterAttribute, param->getLocation(),
                 fmt::format("[[{}(...)]] of kernel parameter '{}' needs an integer index, got '{}'", a.name, name,
                             a.argument));
          continue;
        }
        auto [it, inserted] = bound.emplace(std::pair{a.name, *index}, param);
        if (!inserted)
          report(rules::kDuplicateBindingIndex, param->getLocation(),
                 fmt::format("[[{}({})]] is bound twice in kernel '{}': '{}' and '{}'", a.name, *index,
                             fn->getNameAsString(), it->second->getName().str(), name));
        if (a.name == "buffer") {
          clang::QualType type = param->getType();
          LangAS space = type->isPointerType() || type->isReferenceType() ? type->getPointeeType().getAddressSpace()
                                                                            : LangAS::Default;
          if (space != LangAS::opencl_global && space != LangAS::opencl_constant && !is_visible_function_table(type))
            report(rules::kKernelParameterAttribute, param->getLocation(),
                   fmt::format("[[buffer({})]] parameter '{}' must be a device or constant pointer or reference, "
                               "or a visible_function_table",
                               *index, name));
        }
      }
      if (!binding && !is_implicit_buffer(*param))
        report(rules::kKernelParameterAttribute, param->getLocation(),
               fmt::format("kernel parameter '{}' of '{}' has no attribute ([[buffer(n)]], [[threadgroup(n)]], "
                           "[[thread_position_in_grid]], ...) and is not a device or constant pointer or reference, "
                           "which Metal would bind to the next free buffer index",
                           name, fn->getNameAsString()));
    }
  }
};

template <class T>
std::unique_ptr<MatchFinder::MatchCallback> make(std::vector<Finding>& findings) {
  return std::make_unique<T>(findings);
}

}  // namespace

RuleMatchers::RuleMatchers(std::vector<Finding>& findings) {
  callbacks_.push_back(make<GotoRule>(findings));
  callbacks_.push_back(make<DoubleRule>(findings));
  callbacks_.push_back(make<StaticLocalRule>(findings));
  callbacks_.push_back(make<AllocationRule>(findings));
  callbacks_.push_back(make<ThreadPointerEscapeRule>(findings));
  callbacks_.push_back(make<GenericPointerRule>(findings));
  callbacks_.push_back(make<KernelSignatureRule>(findings));
  callbacks_.push_back(make<ImplicitObjectRule>(findings));
}

RuleMatchers::~RuleMatchers() = default;

void RuleMatchers::register_on(MatchFinder& finder) {
  auto cb = [&](size_t i) { return callbacks_[i].get(); };
  finder.addMatcher(gotoStmt(isExpansionInCheckedCode()).bind("goto"), cb(0));
  finder.addMatcher(addrLabelExpr(isExpansionInCheckedCode()).bind("goto"), cb(0));  // computed goto
  finder.addMatcher(typeLoc(isExpansionInCheckedCode(), loc(qualType(realFloatingPointType()))).bind("type"), cb(1));
  finder.addMatcher(floatLiteral(isExpansionInCheckedCode()).bind("literal"), cb(1));
  finder.addMatcher(varDecl(isExpansionInCheckedCode(), isStaticLocal()).bind("var"), cb(2));
  finder.addMatcher(cxxNewExpr(isExpansionInCheckedCode()).bind("new"), cb(3));
  finder.addMatcher(cxxDeleteExpr(isExpansionInCheckedCode()).bind("delete"), cb(3));
  finder.addMatcher(callExpr(isExpansionInCheckedCode(),
                             callee(functionDecl(hasAnyName("::malloc", "::calloc", "::realloc", "::free",
                                                            "::aligned_alloc", "::posix_memalign"))))
                        .bind("alloc"),
                    cb(3));
  finder.addMatcher(binaryOperator(isExpansionInCheckedCode(), isAssignmentOperator()).bind("assign"), cb(4));
  finder.addMatcher(varDecl(isExpansionInCheckedCode(), hasInitializer(expr())).bind("var"), cb(5));
  finder.addMatcher(binaryOperator(isExpansionInCheckedCode(), isAssignmentOperator()).bind("assign"), cb(5));
  finder.addMatcher(callExpr(isExpansionInCheckedCode(), callee(functionDecl(isExpansionInCheckedCode()))).bind("call"),
                    cb(5));
  finder.addMatcher(functionDecl(isExpansionInCheckedCode(), isDefinition()).bind("fn"), cb(6));
  finder.addMatcher(cxxOperatorCallExpr(isExpansionInCheckedCode(), hasOverloadedOperatorName("=")).bind("copy"), cb(4));
  finder.addMatcher(returnStmt(isExpansionInCheckedCode(), hasReturnValue(expr()),
                               forFunction(functionDecl().bind("returning")))
                        .bind("return"),
                    cb(5));
  finder.addMatcher(
      cxxMemberCallExpr(isExpansionInCheckedCode(), callee(cxxMethodDecl(isExpansionInCheckedCode()))).bind("member"), cb(7));
  finder.addMatcher(
      cxxOperatorCallExpr(isExpansionInCheckedCode(), callee(cxxMethodDecl(isExpansionInCheckedCode()))).bind("operator"),
      cb(7));
}

}  // namespace mfagen::check
