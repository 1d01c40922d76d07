// Libraries (MSL compiled by the cpu backend), functions specialized by
// function constant values, and compute pipeline states.
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "objects.h"

namespace mfagen::metal_standin {
namespace {

// MTLLibraryErrorDomain codes (Apple's MTLLibraryError).
constexpr std::string_view kLibraryErrorDomain = "MTLLibraryErrorDomain";
constexpr NS::Integer kLibraryErrorUnsupported = 1, kLibraryErrorCompileFailure = 3,
                      kLibraryErrorFunctionNotFound = 5, kLibraryErrorFileNotFound = 6;
constexpr std::string_view kPipelineErrorDomain = "MTLComputePipelineErrorDomain";

// The first header of Metal 4's TensorOps that `source` includes
// (<metal_tensor>, <metal_cooperative_tensor>, <MetalPerformancePrimitives/...>),
// or empty.
std::string tensor_ops_header(std::string_view source) {
  size_t at = 0;
  while ((at = source.find("#", at)) != std::string_view::npos) {
    size_t i = at + 1;
    while (i < source.size() && (source[i] == ' ' || source[i] == '\t')) ++i;
    if (source.substr(i, 7) == "include") {
      const size_t open = source.find_first_of("<\"", i + 7), close = source.find_first_of(">\"\n", open + 1);
      if (open != std::string_view::npos && close != std::string_view::npos && source[close] != '\n') {
        const std::string_view header = source.substr(open + 1, close - open - 1);
        if (header == "metal_tensor" || header == "metal_cooperative_tensor" ||
            header.starts_with("MetalPerformancePrimitives/"))
          return std::string(header);
      }
    }
    at = i;
  }
  return {};
}

std::string_view version_text(MTL::LanguageVersion v) {
  switch (v) {
    case MTL::LanguageVersion2_4: return "2.4";
    case MTL::LanguageVersion3_0: return "3.0";
    case MTL::LanguageVersion3_1: return "3.1";
    case MTL::LanguageVersion3_2: return "3.2";
    case MTL::LanguageVersion4_0: return "4.0";
  }
  return "unknown";
}

// Why Apple's compiler would refuse `source` on this device before compiling
// it, or empty: a language version the device's OS lacks, or TensorOps
// headers below Metal 4.0 or where the SDK has none (DeviceOptions).
std::string refusal(const DeviceImpl& device, std::string_view source, MTL::LanguageVersion version) {
  const bool metal4 = supports_family(device.options, MTL::GPUFamilyMetal4);
  if (version >= MTL::LanguageVersion4_0 && !metal4)
    return fmt::format("language version {} is not supported on this device ({} lacks GPUFamilyMetal4)",
                       version_text(version), device.options.name);
  const std::string header = tensor_ops_header(source);
  if (header.empty()) return {};
  if (!metal4 || !device.options.tensor_ops)
    return fmt::format("program_source: fatal error: '{}' file not found (this OS and device have no Metal 4 "
                       "TensorOps)",
                       header);
  if (version < MTL::LanguageVersion4_0)
    return fmt::format("program_source: error: <{}> needs Metal Shading Language 4.0; this library is compiled as "
                       "{} (set MTL::LanguageVersion4_0)",
                       header, version_text(version));
  return {};
}

std::shared_ptr<const cpu::Module> compile(const DeviceImpl& device, std::string_view source,
                                           std::map<uint32_t, cpu::ConstantValue> constants) {
  cpu::CompileOptions options;
  options.instrument = device.options.detectors;
  options.constants = std::move(constants);
  return cpu::compile(source, "library source", options);
}

std::string_view type_name(MTL::DataType type) {
  switch (type) {
    case MTL::DataTypeBool: return "bool";
    case MTL::DataTypeInt: return "int";
    case MTL::DataTypeUInt: return "uint";
    case MTL::DataTypeShort: return "short";
    case MTL::DataTypeUShort: return "ushort";
    case MTL::DataTypeFloat: return "float";
    case MTL::DataTypeHalf: return "half";
    case MTL::DataTypeChar: return "char";
    case MTL::DataTypeUChar: return "uchar";
    default: return "unknown";
  }
}

// The value's bytes as the text cpu::parse_constant_value reads.
std::string value_text(const FunctionConstantValuesImpl::Value& v) {
  auto read = [&](auto sample) {
    decltype(sample) x;
    std::memcpy(&x, v.bytes.data(), sizeof x);
    return x;
  };
  switch (v.type) {
    case MTL::DataTypeBool: return read(bool{}) ? "true" : "false";
    case MTL::DataTypeInt: return std::to_string(read(int32_t{}));
    case MTL::DataTypeUInt: return std::to_string(read(uint32_t{}));
    case MTL::DataTypeShort: return std::to_string(read(int16_t{}));
    case MTL::DataTypeUShort: return std::to_string(read(uint16_t{}));
    case MTL::DataTypeFloat: return fmt::format("{:a}", read(float{}));
    case MTL::DataTypeHalf: return fmt::format("{:a}", float(read(_Float16{})));
    default: return "";
  }
}

size_t value_bytes(MTL::DataType type) {
  switch (type) {
    case MTL::DataTypeBool: case MTL::DataTypeChar: case MTL::DataTypeUChar: return 1;
    case MTL::DataTypeShort: case MTL::DataTypeUShort: case MTL::DataTypeHalf: return 2;
    default: return 4;
  }
}

}  // namespace
}  // namespace mfagen::metal_standin

namespace MTL {

using namespace mfagen::metal_standin;

CompileOptions* CompileOptions::alloc() { return new CompileOptionsImpl; }
CompileOptions* CompileOptions::init() { return this; }
bool CompileOptions::fastMathEnabled() const { return impl<CompileOptionsImpl>(this)->fast_math; }
void CompileOptions::setFastMathEnabled(bool enabled) { impl<CompileOptionsImpl>(this)->fast_math = enabled; }
LanguageVersion CompileOptions::languageVersion() const { return impl<CompileOptionsImpl>(this)->version; }
void CompileOptions::setLanguageVersion(LanguageVersion version) { impl<CompileOptionsImpl>(this)->version = version; }

FunctionConstantValues* FunctionConstantValues::alloc() { return new FunctionConstantValuesImpl; }
FunctionConstantValues* FunctionConstantValues::init() { return this; }
void FunctionConstantValues::setConstantValue(const void* value, DataType type, NS::UInteger index) {
  FunctionConstantValuesImpl::Value v;
  v.type = type;
  std::memcpy(v.bytes.data(), value, value_bytes(type));
  impl<FunctionConstantValuesImpl>(this)->values[uint32_t(index)] = v;
}
void FunctionConstantValues::reset() { impl<FunctionConstantValuesImpl>(this)->values.clear(); }

NS::String* Function::name() const { return impl<FunctionImpl>(this)->function_name.get(); }
Device* Function::device() const { return impl<FunctionImpl>(this)->library->device(); }
Device* Library::device() const { return impl<LibraryImpl>(this)->owner.get(); }

Function* Library::newFunction(const NS::String* functionName) {
  return newFunction(functionName, nullptr, nullptr);
}

Function* Library::newFunction(const NS::String* name, const FunctionConstantValues* constantValues,
                               NS::Error** error) {
  LibraryImpl* self = impl<LibraryImpl>(this);
  const std::string entry = name ? name->utf8String() : "";
  if (!self->module->find(entry)) {
    report_error(error, kLibraryErrorDomain, kLibraryErrorFunctionNotFound,
                 fmt::format("Function {} was not found in the library", entry));
    return nullptr;
  }
  auto* function = new FunctionImpl;
  function->library = Owned<Library>::retained(this);
  function->function_name = Owned<NS::String>(new StringImpl(entry));
  if (constantValues) {
    for (const auto& [index, value] : impl<FunctionConstantValuesImpl>(constantValues)->values) {
      const cpu::FunctionConstant* declared = nullptr;
      for (const cpu::FunctionConstant& c : self->module->function_constants())
        if (c.index == index) declared = &c;
      if (!declared) continue;  // Metal ignores values for constants the library does not declare
      if (declared->type != type_name(value.type)) {
        function->release();
        report_error(error, kLibraryErrorDomain, kLibraryErrorFunctionNotFound,
                     fmt::format("function constant {} ({}) is declared {} but was given a {} value", declared->name,
                                 index, declared->type, type_name(value.type)));
        return nullptr;
      }
      function->constants[index] = cpu::parse_constant_value(value_text(value), declared->type);
    }
  }
  return function;
}

Library* Device::newLibrary(const NS::String* source, const CompileOptions* options, NS::Error** error) {
  DeviceImpl* self = impl<DeviceImpl>(this);
  ++self->libraries_compiled;
  auto* library = new LibraryImpl;
  library->owner = Owned<Device>::retained(this);
  library->source = source ? source->utf8String() : "";
  const MTL::LanguageVersion version = options ? options->languageVersion() : kDefaultLanguageVersion;
  if (std::string refused = refusal(*self, library->source, version); !refused.empty()) {
    library->release();
    report_error(error, kLibraryErrorDomain, kLibraryErrorCompileFailure, std::move(refused));
    return nullptr;
  }
  try {
    library->module = compile(*self, library->source, {});
  } catch (const cpu::CompileError& e) {
    library->release();
    report_error(error, kLibraryErrorDomain, kLibraryErrorCompileFailure, e.what());
    return nullptr;
  }
  return library;
}

Library* Device::newLibrary(const NS::String* filepath, NS::Error** error) {
  const std::filesystem::path path = filepath ? filepath->utf8String() : "";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    report_error(error, kLibraryErrorDomain, kLibraryErrorFileNotFound,
                 fmt::format("Library file {} not found or not readable", path.string()));
    return nullptr;
  }
  char magic[4] = {};
  in.read(magic, 4);
  const bool metallib = in.gcount() == 4 && std::memcmp(magic, "MTLB", 4) == 0;
  report_error(error, kLibraryErrorDomain, kLibraryErrorUnsupported,
               metallib ? fmt::format("{}: the Metal stand-in cannot run compiled AIR code; load the .metal source "
                                      "instead (the cpu backend compiles MSL)",
                                      path.string())
                        : fmt::format("{} is not a metallib (no MTLB header)", path.string()));
  return nullptr;
}

ComputePipelineState* Device::newComputePipelineState(const Function* function, NS::Error** error) {
  DeviceImpl* self = impl<DeviceImpl>(this);
  ++self->pipelines_built;
  const FunctionImpl* f = impl<FunctionImpl>(function);
  const LibraryImpl* library = impl<LibraryImpl>(f->library.get());
  auto* pipeline = new PipelineImpl;
  pipeline->owner = Owned<Device>::retained(this);
  pipeline->max_threads = self->options.max_threads_per_threadgroup;
  try {
    pipeline->module = f->constants.empty() ? library->module : compile(*self, library->source, f->constants);
  } catch (const cpu::CompileError& e) {
    pipeline->release();
    report_error(error, kPipelineErrorDomain, 1, e.what());
    return nullptr;
  }
  pipeline->kernel = pipeline->module->find(f->function_name->utf8String());
  return pipeline;
}

NS::UInteger ComputePipelineState::maxTotalThreadsPerThreadgroup() const {
  return impl<PipelineImpl>(this)->max_threads;
}
NS::UInteger ComputePipelineState::threadExecutionWidth() const { return 32; }  // every Apple GPU's SIMD width
Device* ComputePipelineState::device() const { return impl<PipelineImpl>(this)->owner.get(); }

}  // namespace MTL
