#include "check/manifest_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "check/rules.h"

namespace mfagen::check {
namespace {

using Json = nlohmann::json;

std::string squeeze(std::string_view type) {
  std::string out;
  for (char c : type)
    if (c != ' ' && c != '\t') out += c;
  return out;
}

std::string base_name(std::string_view path) { return std::filesystem::path(std::string(path)).filename().string(); }

// One buffer index across the file's kernels.
struct SourceBuffer {
  BufferParam param;
  std::string kernel;
  bool written = false;  // some kernel binds it as a non-const device pointer
};

class ManifestChecker {
 public:
  ManifestChecker(std::string_view manifest_name, std::vector<Diagnostic>& out) : name_(manifest_name), out_(out) {}

  void check_kernel(const Json& entry, const CheckResult& result) {
    const std::string kernel = entry.value("name", std::string());
    auto error = [&](unsigned line, std::string message) {
      out_.push_back({result.file, line, line ? 1u : 0u, std::string(rules::kManifest),
                      fmt::format("{} (manifest {}, kernel '{}')", message, name_, kernel)});
    };
    // Entry points.
    std::vector<std::string> entries = {kernel};
    if (entry.contains("entries")) {
      // Every kernel function of the file (decode: + combine; backward: preprocess, dkdv, dq).
      entries = entry["entries"].get<std::vector<std::string>>();
    } else if (entry.contains("dispatch") && entry["dispatch"].contains("combine_entry")) {
      entries.push_back(entry["dispatch"]["combine_entry"].get<std::string>());
    }
    for (const std::string& e : entries)
      if (!result.kernel(e))
        error(0, fmt::format("the manifest names entry point '{}' but {} defines no kernel of that name{}", e,
                             result.file, kernel_list(result)));
    if (entry.contains("entries"))
      for (const KernelSignature& k : result.kernels)
        if (std::find(entries.begin(), entries.end(), k.name) == entries.end())
          error(k.line, fmt::format("{} defines kernel '{}' but the manifest's entries do not list it",
                                    result.file, k.name));

    // Buffers: union of the file's kernels by index.
    std::map<uint32_t, SourceBuffer> source;
    for (const KernelSignature& k : result.kernels)
      for (const BufferParam& b : k.buffers) {
        auto [it, inserted] = source.emplace(b.index, SourceBuffer{b, k.name, false});
        if (!inserted && (it->second.param.name != b.name || it->second.param.element_type != b.element_type))
          error(k.line, fmt::format("buffer({}) is '{}' ({}) in kernel '{}' but '{}' ({}) in kernel '{}'", b.index,
                                    it->second.param.name, it->second.param.metal_type(), it->second.kernel, b.name,
                                    b.metal_type(), k.name));
        if (b.space == AddressSpace::device && !b.is_const) it->second.written = true;
      }
    std::map<uint32_t, const Json*> listed;
    for (const Json& b : entry.value("buffers", Json::array())) {
      uint32_t index = b.value("index", ~0u);
      listed[index] = &b;
      const std::string name = b.value("name", std::string());
      const std::string type = b.value("type", std::string());
      const std::string access = b.value("access", std::string());
      auto it = source.find(index);
      if (it == source.end()) {
        error(0, fmt::format("the manifest lists buffer {} '{}' ({}) but no kernel of {} has a [[buffer({})]] "
                             "parameter",
                             index, name, type, result.file, index));
        continue;
      }
      const BufferParam& p = it->second.param;
      unsigned line = line_of(result, it->second.kernel);
      if (p.name != name || squeeze(p.metal_type()) != squeeze(type))
        error(line, fmt::format("buffer {}: the manifest says '{}' ({}) but kernel '{}' declares '{}' ({})", index,
                                name, type, it->second.kernel, p.name, p.metal_type()));
      else if ((access == "write") != it->second.written)
        error(line, fmt::format("buffer {} '{}': the manifest says access '{}' but the kernels {} it", index, name,
                                access, it->second.written ? "write" : "only read"));
    }
    for (const auto& [index, b] : source)
      if (!listed.contains(index))
        error(line_of(result, b.kernel),
              fmt::format("kernel '{}' has [[buffer({})]] '{}' ({}) but the manifest lists no buffer {}", b.kernel,
                          index, b.param.name, b.param.metal_type(), index));

    // Function constants.
    std::map<uint32_t, const FunctionConstant*> declared;
    for (const FunctionConstant& c : result.function_constants) declared[c.index] = &c;
    std::map<uint32_t, bool> manifest_constants;
    for (const Json& c : entry.value("function_constants", Json::array())) {
      uint32_t index = c.value("index", ~0u);
      manifest_constants[index] = true;
      const std::string name = c.value("name", std::string());
      const std::string type = c.value("type", std::string());
      auto it = declared.find(index);
      if (it == declared.end()) {
        error(0, fmt::format("the manifest lists function constant {} '{}' ({}) but {} declares no "
                             "[[function_constant({})]]",
                             index, name, type, result.file, index));
        continue;
      }
      if (it->second->name != name || squeeze(it->second->type) != squeeze(type))
        error(it->second->line,
              fmt::format("function constant {}: the manifest says '{}' ({}) but the source declares '{}' ({})", index,
                          name, type, it->second->name, it->second->type));
    }
    for (const auto& [index, c] : declared)
      if (!manifest_constants.contains(index))
        error(c->line, fmt::format("{} declares function constant {} '{}' ({}) but the manifest lists no "
                                   "function constant {}",
                                   result.file, index, c->name, c->type, index));

    // Tensor operations over execution_simdgroups<N> need N SIMD groups per
    // threadgroup (else undefined behaviour, DESIGN.md section 15).
    if (entry.contains("dispatch")) {
      const Json& dispatch = entry["dispatch"];
      auto check_threads = [&](const std::string& entry_point, const char* key) {
        const KernelSignature* k = result.kernel(entry_point);
        if (!k || !dispatch.contains(key)) return;
        const uint64_t threads = dispatch[key].get<uint64_t>();
        for (const TensorOpScope& scope : k->tensor_op_scopes)
          if (32ull * scope.simdgroups != threads)
            error(scope.line, fmt::format("kernel '{}' runs a tensor operation over execution_simdgroups<{}>, which "
                                          "needs {} threads per threadgroup, but the manifest dispatches {} ({})",
                                          entry_point, scope.simdgroups, 32 * scope.simdgroups, threads, key));
      };
      check_threads(kernel, "threads_per_threadgroup");
      if (dispatch.contains("combine_entry"))
        check_threads(dispatch["combine_entry"].get<std::string>(), "combine_threads_per_threadgroup");
    }

    // Static threadgroup memory.
    if (entry.contains("dispatch") && entry["dispatch"].contains("threadgroup_memory_bytes")) {
      uint64_t manifest_bytes = entry["dispatch"]["threadgroup_memory_bytes"].get<uint64_t>();
      uint64_t largest = 0;
      const KernelSignature* at = nullptr;
      for (const KernelSignature& k : result.kernels)
        if (!at || k.threadgroup_memory_bytes > largest) largest = k.threadgroup_memory_bytes, at = &k;
      if (at && largest != manifest_bytes)
        error(at->line, fmt::format("threadgroup memory: the manifest says {} bytes but kernel '{}' declares {} bytes "
                                    "of threadgroup variables",
                                    manifest_bytes, at->name, largest));
    }
  }

 private:
  static unsigned line_of(const CheckResult& result, const std::string& kernel) {
    const KernelSignature* k = result.kernel(kernel);
    return k ? k->line : 0;
  }
  static std::string kernel_list(const CheckResult& result) {
    std::string names;
    for (const KernelSignature& k : result.kernels) names += (names.empty() ? "" : ", ") + k.name;
    return names.empty() ? "" : fmt::format(" (it defines {})", names);
  }

  std::string name_;
  std::vector<Diagnostic>& out_;
};

}  // namespace

std::vector<Diagnostic> check_manifest(const std::vector<CheckResult>& results, std::string_view manifest_text,
                                       std::string_view manifest_name) {
  std::vector<Diagnostic> out;
  Json manifest;
  try {
    manifest = Json::parse(manifest_text);
  } catch (const Json::exception& e) {
    out.push_back({std::string(manifest_name), 0, 0, std::string(rules::kManifest),
                   fmt::format("not valid JSON: {}", e.what())});
    return out;
  }
  if (!manifest.is_object() || !manifest.contains("kernels") || !manifest["kernels"].is_array()) {
    out.push_back({std::string(manifest_name), 0, 0, std::string(rules::kManifest),
                   "expected an object with a \"kernels\" array"});
    return out;
  }
  ManifestChecker checker(manifest_name, out);
  for (const CheckResult& result : results) {
    bool found = false;
    for (const Json& entry : manifest["kernels"]) {
      if (!entry.is_object() || base_name(entry.value("file", std::string())) != base_name(result.file)) continue;
      found = true;
      try {
        checker.check_kernel(entry, result);
      } catch (const Json::exception& e) {
        out.push_back({result.file, 0, 0, std::string(rules::kManifest),
                       fmt::format("malformed manifest entry for '{}' in {}: {}", entry.value("name", std::string()),
                                   manifest_name, e.what())});
      }
    }
    if (!found && !result.kernels.empty())
      out.push_back({result.file, 0, 0, std::string(rules::kManifest),
                     fmt::format("{} has no kernel entry in manifest {}", base_name(result.file), manifest_name)});
  }
  return out;
}

std::string check_generated(const std::vector<SourceFile>& files, std::string_view manifest_text) {
  std::vector<CheckResult> results = check_many(files);
  std::string findings;
  for (const CheckResult& r : results)
    for (const Diagnostic& d : r.diagnostics) findings += d.to_string() + "\n";
  for (const Diagnostic& d : check_manifest(results, manifest_text, "manifest.json")) findings += d.to_string() + "\n";
  return findings;
}

}  // namespace mfagen::check
