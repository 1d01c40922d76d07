// Stand-in for metal-cpp's MTL::CompileOptions, FunctionConstantValues,
// Function and Library. A library compiled from source is MSL compiled by
// the cpu backend (runtime/backends/cpu); a function is an entry point plus
// the function constant values it was specialized with.
#pragma once

#include <Metal/MTLTypes.hpp>

namespace MTL {

class Device;

class CompileOptions : public NS::Referencing<CompileOptions> {
 public:
  static CompileOptions* alloc();
  CompileOptions* init();
  bool fastMathEnabled() const;
  void setFastMathEnabled(bool enabled);
  MTL::LanguageVersion languageVersion() const;
  void setLanguageVersion(MTL::LanguageVersion version);

 protected:
  CompileOptions() = default;
};

class FunctionConstantValues : public NS::Referencing<FunctionConstantValues> {
 public:
  static FunctionConstantValues* alloc();
  FunctionConstantValues* init();
  void setConstantValue(const void* value, MTL::DataType type, NS::UInteger index);
  void reset();

 protected:
  FunctionConstantValues() = default;
};

class Function : public NS::Referencing<Function> {
 public:
  NS::String* name() const;
  Device* device() const;

 protected:
  Function() = default;
};

class Library : public NS::Referencing<Library> {
 public:
  // nullptr when the library has no kernel of that name.
  Function* newFunction(const NS::String* functionName);
  // nullptr and *error set when there is no such kernel or a constant value
  // does not fit the kernel's declaration.
  Function* newFunction(const NS::String* name, const FunctionConstantValues* constantValues, NS::Error** error);
  Device* device() const;

 protected:
  Library() = default;
};

}  // namespace MTL
