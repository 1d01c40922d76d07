// Library::load: manifest.json (written by mfagen generate) into the
// immutable kernel table. This is the only place the runtime reads JSON.
//
// Every entry is validated before it can be selected, and each error names
// the manifest, the kernel (position and name), the field's JSON path and
// what was expected. Beyond types and ranges, each kernel's buffer table and
// params size are cross-checked against what this runtime's planner would
// bind, so a manifest from a generator whose kernel ABI differs from this
// runtime's is refused at load instead of corrupting memory at dispatch.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "mfagen/cache_append_dispatch.h"
#include "mfagen/library.h"

namespace mfagen {
namespace {

using Json = nlohmann::json;

constexpr int kFormat = 1;
// Hardware limits of DESIGN.md section 4; a kernel beyond them cannot launch.
constexpr uint64_t kMaxThreads = 1024, kMaxThreadgroupBytes = 32768, kMaxHeadDim = (1u << 20) - 1;

// A JSON value with the path it was reached by, for error messages.
struct Field {
  const Json& value;
  std::string path;

  [[noreturn]] void fail(const std::string& expected) const {
    std::string got = value.dump();
    if (got.size() > 120) got = got.substr(0, 117) + "...";
    throw ManifestError(path + ": expected " + expected + ", got " + got);
  }
  Field at(const std::string& key) const {
    if (!value.is_object()) fail("an object");
    const auto it = value.find(key);
    if (it == value.end()) throw ManifestError(path + ": missing field \"" + key + "\"");
    return {*it, path + "." + key};
  }
  bool has(const std::string& key) const { return value.is_object() && value.contains(key); }
  std::string string() const {
    if (!value.is_string()) fail("a string");
    return value.get<std::string>();
  }
  bool boolean() const {
    if (!value.is_boolean()) fail("true or false");
    return value.get<bool>();
  }
  uint64_t integer(uint64_t min, uint64_t max) const {
    const bool in_range = value.is_number_unsigned() ||
                          (value.is_number_integer() && value.get<int64_t>() >= 0);
    if (!in_range || value.get<uint64_t>() < min || value.get<uint64_t>() > max)
      fail("an integer in " + std::to_string(min) + ".." + std::to_string(max));
    return value.get<uint64_t>();
  }
  template <class Enum, size_t N>
  Enum one_of(const std::array<std::pair<std::string_view, Enum>, N>& names) const {
    if (value.is_string())
      for (const auto& [name, e] : names)
        if (name == value.get<std::string>()) return e;
    std::string expected = "one of";
    for (size_t i = 0; i < N; ++i) expected += std::string(i ? ", \"" : " \"") + std::string(names[i].first) + "\"";
    fail(expected);
  }
  const Json& array() const {
    if (!value.is_array()) fail("an array");
    return value;
  }
};

constexpr std::array<std::pair<std::string_view, KernelKind>, 4> kKinds{{{"forward", KernelKind::forward},
                                                                          {"decode", KernelKind::decode},
                                                                          {"backward", KernelKind::backward},
                                                                          {"cache_append", KernelKind::cache_append}}};
constexpr std::array<std::pair<std::string_view, ElementType>, 3> kDtypes{
    {{"float16", ElementType::float16}, {"bfloat16", ElementType::bfloat16}, {"float32", ElementType::float32}}};
constexpr std::array<std::pair<std::string_view, CausalMode>, 3> kCausal{
    {{"none", CausalMode::none}, {"top_left", CausalMode::top_left}, {"bottom_right", CausalMode::bottom_right}}};
constexpr std::array<std::pair<std::string_view, MaskInput>, 3> kMasks{
    {{"none", MaskInput::none}, {"bool", MaskInput::boolean}, {"additive", MaskInput::additive}}};

// The kernel functions of a file in launch order, as the planner launches them.
std::vector<std::string> expected_entries(const KernelEntry& e) {
  std::vector<std::string> entries;
  if (classifies_blocks(e.info)) entries.push_back(e.name + "_blocks");  // mask_mod's block classes, first
  if (e.kind == KernelKind::decode) entries.insert(entries.end(), {e.name, e.name + "_combine"});
  else if (e.kind == KernelKind::backward)
    entries.insert(entries.end(), {e.name + "_preprocess", e.name + "_dkdv", e.name + "_dq"});
  else entries.push_back(e.name);
  if (e.info.planned_batches) entries.push_back(e.name + "_merge");
  if (e.kind == KernelKind::backward && e.info.sinks) entries.push_back(e.name + "_dsinks");
  if (e.kind == KernelKind::backward && writes_capture_gradients(e.info)) entries.push_back(e.name + "_dcaptures");
  return entries;
}

// The smallest call a kernel accepts, to learn its buffer table and params
// size from the planner.
ForwardCall canonical_call(const KernelEntry& e) {
  ForwardCall call;
  const KvFormat kv = e.info.kv_format;
  call.strides = contiguous_bhsd(call.shape, e.info.head_dim, e.info.head_dim_v, kv);
  if (e.info.softcap) call.softcap = 30;
  if (e.info.paged) {  // one page of one key
    call.page_size = call.num_pages = call.max_pages = 1;
    call.strides = paged_kv(call.shape, 1, e.info.head_dim, e.info.head_dim_v, kv);
  }
  if (e.info.planned_batches) {  // a plan of one work item: its buffers are the caller's
    static const BatchPlan kOneItem{{BatchWork{}}, {BatchMerge{}}, 0, 0};
    call.batch_plan = &kOneItem;
  }
  if (e.info.varlen) {  // one packed row each (no packed keys on a paged cache)
    call.total_q = 1;
    call.total_k = e.info.paged ? 0 : 1;
    call.strides = e.info.paged ? packed_paged(call.shape, 1, 1, e.info.head_dim, e.info.head_dim_v, kv)
                                : packed_varlen(call.shape, 1, e.info.head_dim, e.info.head_dim_v, kv);
  }
  return call;
}

// The smallest cache write a cache_append kernel accepts, likewise.
CacheAppendCall canonical_append(const KernelEntry& e) {
  CacheAppendCall call{.batch = 1, .heads_kv = 1, .new_rows = 1};
  if (e.info.varlen) call.total_new = 1;
  if (e.info.paged) call.page_size = call.num_pages = call.max_pages = 1;
  else call.cache_rows = 1;
  contiguous_append_strides(e.info, call);
  return call;
}

std::string describe_buffers(const std::vector<std::tuple<uint32_t, std::string, bool, bool>>& buffers) {
  std::string text;
  for (const auto& [index, name, written, scratch] : buffers)
    text += (text.empty() ? "" : ", ") + std::to_string(index) + " " + name + (written ? " write" : " read") +
            (scratch ? " scratch" : "");
  return "[" + text + "]";
}

template <class T>
void store(FunctionConstant& c, T value) {
  static_assert(sizeof(T) <= 4);
  std::memcpy(c.value.data(), &value, sizeof(T));
  c.value_bytes = sizeof(T);
}

// A function constant slot and its optional value, stored in the MSL type.
FunctionConstant parse_function_constant(const Field& f) {
  FunctionConstant c;
  c.index = uint32_t(f.at("index").integer(0, 65535));
  c.name = f.at("name").string();
  c.type = f.at("type").string();
  static const std::set<std::string> kTypes = {"bool", "char", "uchar", "short", "ushort", "int", "uint", "half", "float"};
  if (!kTypes.count(c.type))
    f.at("type").fail("a scalar MSL type (bool, char, uchar, short, ushort, int, uint, half, float)");
  if (!f.has("value")) return c;
  const Field v = f.at("value");
  c.has_value = true;
  if (c.type == "bool") {
    store(c, uint8_t(v.boolean()));
  } else if (c.type == "half" || c.type == "float") {
    if (!v.value.is_number()) v.fail("a number");
    if (c.type == "float") store(c, v.value.get<float>());
    else store(c, static_cast<_Float16>(v.value.get<float>()));
  } else {
    const bool is_signed = c.type[0] != 'u';
    const int bits = c.type.ends_with("char") ? 8 : c.type.ends_with("short") ? 16 : 32;
    const int64_t lo = is_signed ? -(int64_t(1) << (bits - 1)) : 0;
    const int64_t hi = is_signed ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
    if (!v.value.is_number_integer() || v.value.get<int64_t>() < lo || v.value.get<int64_t>() > hi)
      v.fail("an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + " (" + c.type + ")");
    const int64_t x = v.value.get<int64_t>();
    if (bits == 8) store(c, uint8_t(x));
    else if (bits == 16) store(c, uint16_t(x));
    else store(c, uint32_t(x));
  }
  return c;
}

// "mods": the score_mod / mask_mod facts (DESIGN.md section 13) a kernel's
// launch needs: which are compiled in, their id, the scalar count and each
// captured tensor's extents as coefficients of (1, B, Hq, Hkv, Sq, Sk).
void parse_mods(const Field& m, KernelEntry& e) {
  ForwardKernelInfo& info = e.info;
  const std::string id = m.at("id").string();
  if (id.size() != 16 || id.find_first_not_of("0123456789abcdef") != std::string::npos || id == "0000000000000000")
    m.at("id").fail("16 lowercase hex digits, not all zero");
  info.mods_id = std::stoull(id, nullptr, 16);
  info.score_mod = m.at("score_mod").boolean();
  info.mask_mod = m.at("mask_mod").boolean();
  if (!info.score_mod && !info.mask_mod) m.fail("score_mod or mask_mod true");
  info.mask_by_batch = m.at("mask_by_batch").boolean();
  info.mask_by_head = m.at("mask_by_head").boolean();
  info.mod_scalars = uint32_t(m.at("scalars").integer(0, 16));
  const Field captures = m.at("captures");
  if (captures.array().size() > kMaxCaptures) captures.fail("at most 4 captured tensors");
  for (size_t i = 0; i < captures.array().size(); ++i) {
    const Field c{captures.value[i], captures.path + "[" + std::to_string(i) + "]"};
    CapturedTensor t;
    t.name = c.at("name").string();
    t.buffer = "capture_" + t.name;
    const std::string dtype = c.at("dtype").string();
    if (dtype != "float32" && dtype != "int32") c.at("dtype").fail("\"float32\" or \"int32\"");
    t.is_float = dtype == "float32";
    t.gradient = c.has("gradient") && c.at("gradient").boolean();
    if (t.gradient && (!t.is_float || e.kind != KernelKind::backward))
      c.at("gradient").fail("false (gradients are of float32 tensors, in backward kernels)");
    t.gradient_buffer = "d_capture_" + t.name;
    const Field extents = c.at("extents");
    if (extents.array().empty() || extents.array().size() > 4) extents.fail("1 to 4 extents");
    for (size_t d = 0; d < extents.array().size(); ++d) {
      const Field x{extents.value[d], extents.path + "[" + std::to_string(d) + "]"};
      if (!x.value.is_array() || x.value.size() != 6) x.fail("6 integer coefficients of (1, B, Hq, Hkv, Sq, Sk)");
      std::array<int64_t, 6> coefficients{};
      for (size_t j = 0; j < 6; ++j) {
        if (!x.value[j].is_number_integer() || x.value[j].get<int64_t>() < -(int64_t(1) << 31) ||
            x.value[j].get<int64_t>() > (int64_t(1) << 31))
          x.fail("integer coefficients of magnitude at most 2^31");
        coefficients[j] = x.value[j].get<int64_t>();
      }
      t.extents.push_back(coefficients);
    }
    info.captures.push_back(std::move(t));
  }
}

// "requires": what the kernel needs of the device (DESIGN.md section 15):
// {"metal": "3.1", "gpu_family": "apple7", "tensor_ops": false}. Absent in
// manifests written before TensorOps kernels existed: the baseline
// (KernelRequirements{}), which every such kernel needs.
KernelRequirements parse_requirements(const Field& r) {
  KernelRequirements requirements;
  requirements.metal = r.at("metal").one_of(kMetalVersionNames);
  requirements.gpu_family = r.at("gpu_family").one_of(kGpuFamilyNames);
  requirements.tensor_ops = r.at("tensor_ops").boolean();
  if (requirements.tensor_ops && requirements.metal < MetalVersion::v4_0)
    r.at("metal").fail("\"4.0\" (TensorOps, MetalPerformancePrimitives, need Metal 4)");
  for (const auto& [key, value] : r.value.items())
    if (key != "metal" && key != "gpu_family" && key != "tensor_ops")
      r.fail("only \"metal\", \"gpu_family\" and \"tensor_ops\" (a requirement this runtime does not know: "
             "regenerate the kernels with a matching mfagen)");
  return requirements;
}

KernelEntry parse_kernel(const Field& k) {
  KernelEntry e;
  e.name = k.at("name").string();
  if (e.name.empty()) k.at("name").fail("a kernel function name");
  e.file = k.at("file").string();
  if (e.file.empty() || std::filesystem::path(e.file).is_absolute() || e.file.find("..") != std::string::npos)
    k.at("file").fail("a file name relative to the manifest's folder");
  e.hash = k.at("hash").string();
  if (k.has("requires")) e.requirements = parse_requirements(k.at("requires"));

  const Field spec = k.at("spec");
  e.kind = spec.at("kind").one_of(kKinds);
  e.dtype = spec.at("dtype").one_of(kDtypes);
  e.causal = spec.at("causal").one_of(kCausal);
  ForwardKernelInfo& info = e.info;
  info.entry = e.name;
  info.element_bytes = e.dtype == ElementType::float32 ? 4 : 2;
  info.head_dim = uint32_t(spec.at("head_dim").integer(1, kMaxHeadDim));
  info.head_dim_v = uint32_t(spec.at("head_dim_v").integer(1, kMaxHeadDim));
  info.gqa = spec.at("gqa").boolean();
  info.lse = spec.at("lse").boolean();
  info.mask = spec.at("mask").one_of(kMasks);
  info.window = spec.at("window").boolean();
  info.softcap = spec.at("softcap").boolean();
  info.alibi = spec.at("alibi").boolean();
  // Serving features (DESIGN.md section 13) are in a spec only when on.
  info.sinks = spec.has("sinks") && spec.at("sinks").boolean();
  static constexpr std::array<std::pair<std::string_view, bool>, 2> kLayouts{{{"dense", false}, {"varlen", true}}};
  info.varlen = spec.has("layout") && spec.at("layout").one_of(kLayouts);
  if (info.varlen && e.kind == KernelKind::decode) spec.at("layout").fail("\"dense\" (decode kernels take dense queries)");
  static constexpr std::array<std::pair<std::string_view, bool>, 2> kKvCaches{{{"dense", false}, {"paged", true}}};
  info.paged = spec.has("kv_cache") && spec.at("kv_cache").one_of(kKvCaches);
  static constexpr std::array<std::pair<std::string_view, KvFormat>, 3> kKvDtypes{
      {{"q8_0", KvFormat::q8_0}, {"q4_0", KvFormat::q4_0}, {"fp8_e4m3", KvFormat::fp8_e4m3}}};
  if (spec.has("kv_dtype")) {
    info.kv_format = spec.at("kv_dtype").one_of(kKvDtypes);
    if (e.kind == KernelKind::backward) spec.at("kv_dtype").fail("absent (backward kernels take k and v in dtype)");
    const bool blocks = info.kv_format == KvFormat::q8_0 || info.kv_format == KvFormat::q4_0;
    if (blocks && (info.head_dim % 32 != 0 || info.head_dim_v % 32 != 0))
      spec.at("kv_dtype").fail("fp8_e4m3 (q8_0 and q4_0 need head dims that are multiples of 32)");
  }
  info.dropout = spec.has("dropout") && spec.at("dropout").boolean();
  if (info.dropout && e.kind == KernelKind::decode) spec.at("dropout").fail("false (decode kernels serve inference)");
  if (k.has("mods")) parse_mods(k.at("mods"), e);
  info.decode = e.kind == KernelKind::decode;
  info.backward = e.kind == KernelKind::backward;
  info.cache_append = e.kind == KernelKind::cache_append;
  info.planned_batches = e.kind == KernelKind::forward && info.varlen && info.paged && !e.requirements.tensor_ops;
  info.tensor_ops = e.requirements.tensor_ops;
  if (info.backward && !info.lse) spec.at("lse").fail("true (backward kernels read the forward's lse)");

  const Field dispatch = k.at("dispatch");
  info.block_q = uint32_t(dispatch.at("block_q").integer(1, kMaxThreads));
  info.block_k = uint32_t(dispatch.at("block_k").integer(1, kMaxThreads));
  info.threads = uint32_t(dispatch.at("threads_per_threadgroup").integer(1, kMaxThreads));
  info.threadgroup_bytes = uint32_t(dispatch.at("threadgroup_memory_bytes").integer(0, kMaxThreadgroupBytes));
  if (info.decode) {
    info.combine_entry = dispatch.at("combine_entry").string();
    if (info.combine_entry != e.name + "_combine") dispatch.at("combine_entry").fail("\"" + e.name + "_combine\"");
  }

  // Entry points, in launch order (older manifests without "entries" get the
  // names the generator gives them).
  e.entries = expected_entries(e);
  if (k.has("entries")) {
    const Field entries = k.at("entries");
    std::vector<std::string> listed;
    for (size_t i = 0; i < entries.array().size(); ++i)
      listed.push_back(Field{entries.value[i], entries.path + "[" + std::to_string(i) + "]"}.string());
    if (listed != e.entries) entries.fail(Json(e.entries).dump() + " (the kernel functions a " +
                                          std::string(to_string(e.kind)) + " kernel launches, in order)");
  }

  static const Json kNone = Json::array();
  const Field constants = k.has("function_constants") ? k.at("function_constants") : Field{kNone, ""};
  for (size_t i = 0; i < constants.array().size(); ++i)
    e.function_constants.push_back(
        parse_function_constant(Field{constants.value[i], constants.path + "[" + std::to_string(i) + "]"}));

  const Field params = k.at("params");
  e.params_bytes = uint32_t(params.at("bytes").integer(1, LaunchPlan::kMaxParamsBytes));
  if (params.has("buffer") && params.at("buffer").integer(0, 31) != kForwardParams)
    params.at("buffer").fail(std::to_string(kForwardParams));

  // Cross-check the kernel's ABI against this runtime's planner.
  std::vector<std::tuple<uint32_t, std::string, bool, bool>> expected, listed;
  uint64_t params_size = 0;
  if (e.kind == KernelKind::cache_append) {
    const DispatchPlan plan = plan_cache_append(info, canonical_append(e));
    params_size = plan.params.size();
    for (const BufferRequirement& b : plan.buffers) expected.emplace_back(b.index, b.name, b.written, b.scratch);
  } else {
    const LaunchPlan plan = Library::launch_plan(e, canonical_call(e));
    params_size = plan.params_size;
    for (const LaunchPlan::Buffer& b : plan.buffers())
      expected.emplace_back(b.index, std::string(b.name), b.written, b.scratch);
  }
  if (params_size != e.params_bytes)
    params.at("bytes").fail(std::to_string(params_size) + " (the " +
                            (e.kind == KernelKind::cache_append ? "AppendParams" : "AttentionParams") +
                            " this runtime writes for a " +
                            std::string(to_string(e.kind)) + " kernel with these features; generator and runtime differ)");
  const Field buffers = k.at("buffers");
  for (size_t i = 0; i < buffers.array().size(); ++i) {
    const Field b{buffers.value[i], buffers.path + "[" + std::to_string(i) + "]"};
    const std::string access = b.at("access").string();
    if (access != "read" && access != "write") b.at("access").fail("\"read\" or \"write\"");
    listed.emplace_back(uint32_t(b.at("index").integer(0, 31)), b.at("name").string(), access == "write",
                        b.has("scratch") && b.at("scratch").boolean());
  }
  std::sort(expected.begin(), expected.end());
  std::sort(listed.begin(), listed.end());
  if (listed != expected)
    throw ManifestError(buffers.path + ": " + describe_buffers(listed) + " differs from the buffers this runtime binds " +
                        describe_buffers(expected) + " (generator and runtime differ)");
  return e;
}

}  // namespace

std::vector<uint32_t> Library::launch_threads(const KernelEntry& kernel) {
  std::vector<uint32_t> threads;
  if (kernel.kind == KernelKind::cache_append) {
    for (const KernelLaunch& l : plan_cache_append(kernel.info, canonical_append(kernel)).launches)
      threads.push_back(l.threads_per_threadgroup[0]);
    return threads;
  }
  const LaunchPlan plan = launch_plan(kernel, canonical_call(kernel));
  for (size_t i = 0; i < plan.launch_count; ++i) threads.push_back(plan.launch_storage[i].threads_per_threadgroup[0]);
  return threads;
}

Library Library::load_from_memory(std::string_view manifest_json, std::filesystem::path directory) {
  Json m;
  try {
    m = Json::parse(manifest_json);
  } catch (const nlohmann::json::exception& e) {
    throw ManifestError(std::string("manifest is not valid JSON: ") + e.what());
  }
  const Field root{m, "manifest"};
  if (!m.is_object()) root.fail("an object (an mfagen manifest.json)");
  if (!root.has("format")) throw ManifestError("manifest: no \"format\" field: not an mfagen manifest");
  const Field format = root.at("format");
  if (!format.value.is_number_integer() || format.value.get<int64_t>() != kFormat)
    throw ManifestError("manifest: format " + format.value.dump() + " is not supported (this runtime reads format " +
                        std::to_string(kFormat) + "; regenerate the kernels with a matching mfagen)");
  Library library;
  library.directory_ = std::move(directory);
  const Field kernels = root.at("kernels");
  std::set<std::string> names;
  for (size_t i = 0; i < kernels.array().size(); ++i) {
    const Json& k = kernels.value[i];
    std::string where = "kernel " + std::to_string(i);
    if (k.is_object() && k.contains("name") && k["name"].is_string()) where += " (" + k["name"].get<std::string>() + ")";
    try {
      library.kernels_.push_back(parse_kernel(Field{k, "kernels[" + std::to_string(i) + "]"}));
    } catch (const ManifestError& e) {
      throw ManifestError("manifest: " + where + ": " + e.what());
    } catch (const DispatchError& e) {
      throw ManifestError("manifest: " + where + ": this runtime cannot plan it: " + e.what());
    }
    if (!names.insert(library.kernels_.back().name).second)
      throw ManifestError("manifest: " + where + ": a second kernel named " + library.kernels_.back().name);
  }
  library.build_index();
  return library;
}

Library Library::load(const std::filesystem::path& manifest) {
  std::ifstream in(manifest, std::ios::binary);
  if (!in) throw ManifestError("cannot read " + manifest.string() + ": " + (std::filesystem::exists(manifest) ? "permission denied or not a file" : "no such file"));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return load_from_memory(text.str(), manifest.parent_path());
  } catch (const ManifestError& e) {
    throw ManifestError(manifest.string() + ": " + e.what());
  }
}

}  // namespace mfagen
