#include "emit/manifest.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "plan/dispatch_info.h"
#include "plan/tensor_ops.h"
#include "render/render_forward.h"
#include "spec/canonical.h"

namespace mfagen::emit {
namespace {

// ordered_json keeps keys in insertion order: the order written below is
// the order in the file, independent of any hashing or sorting.
using Json = nlohmann::ordered_json;

Json dispatch_json(const plan::KernelPlan& p) {
  Json d;
  d["block_q"] = p.block_q;
  d["block_k"] = p.block_k;
  d["simdgroups"] = p.simdgroups;
  d["key_groups"] = p.key_groups;  // simdgroup groups splitting each staged key block (forward)
  d["threads_per_threadgroup"] = p.threads;
  d["threadgroup_memory_bytes"] = p.threadgroup_bytes;
  // Spelled as formulas because the sizes are runtime values.
  if (p.spec.kind == spec::Kind::cache_append) {
    // One simdgroup per 32 values of a new row (k's chunks, then v's), per new row, per (sequence, kv head).
    d["grid"] = "[ceil(head_dim / 32) + ceil(head_dim_v / 32), new_rows, batch * heads_kv]";
  } else if (p.combine_entry.empty()) {
    // One threadgroup per (query block, q head, batch).
    d["grid"] = fmt::format("[ceil(seq_q / {}), heads_q, batch]", p.block_q);
  } else {
    // Split-K decode: a second kernel merges the splits.
    d["grid"] = fmt::format("[splits, heads_kv * ceil(heads_q / heads_kv * seq_q / {}), batch]", p.block_q);
    d["combine_entry"] = p.combine_entry;
    d["combine_grid"] = "[seq_q, heads_q, batch]";
    d["combine_threads_per_threadgroup"] = 32;
  }
  return d;
}

Json buffers_json(const plan::KernelPlan& p) {
  Json buffers = Json::array();
  for (const plan::BufferSlot& b : p.buffers) {
    Json slot;
    slot["index"] = b.index;
    slot["name"] = b.name;
    slot["type"] = b.msl_type;
    slot["access"] = b.written ? "write" : "read";
    if (b.scratch) slot["scratch"] = true;
    buffers.push_back(std::move(slot));
  }
  return buffers;
}

// score_mod and mask_mod as the runtime needs them: which are compiled in,
// the id selection matches, which of b and h mask_mod reads (one table of
// block classes per batch entry / head only then), the scalar count and each
// captured tensor's extents as coefficients of (1, B, Hq, Hkv, Sq, Sk), so
// that a reader needs no expression parser; backward kernels mark the tensors
// whose gradients they write (d_capture_NAME). Written from the launch facts
// the planner derives (plan::forward_kernel_info), which the reader rebuilds.
Json mods_json(const plan::KernelPlan& p) {
  const ForwardKernelInfo info = plan::forward_kernel_info(p);
  Json j;
  j["id"] = fmt::format("{:016x}", info.mods_id);
  j["score_mod"] = info.score_mod;
  j["mask_mod"] = info.mask_mod;
  j["mask_by_batch"] = info.mask_by_batch;
  j["mask_by_head"] = info.mask_by_head;
  j["scalars"] = info.mod_scalars;
  j["captures"] = Json::array();
  for (const CapturedTensor& t : info.captures) {
    Json c = {{"name", t.name}, {"dtype", t.is_float ? "float32" : "int32"}, {"extents", t.extents}};
    if (t.gradient) c["gradient"] = true;
    j["captures"].push_back(std::move(c));
  }
  return j;
}

// What the kernel needs of the device (plan::device_requirements): the
// runtime selects it only where the backend's capabilities satisfy this.
Json requires_json(const plan::KernelPlan& p) {
  const plan::DeviceRequirements r = plan::device_requirements(p);
  Json j;
  j["metal"] = r.metal;
  j["gpu_family"] = r.gpu_family;
  j["tensor_ops"] = r.tensor_ops;
  return j;
}

Json function_constants_json(const plan::KernelPlan& p) {
  Json constants = Json::array();
  for (const plan::FunctionConstantSlot& c : p.function_constants) {
    Json slot;
    slot["index"] = c.index;
    slot["name"] = c.name;
    slot["type"] = c.type;
    constants.push_back(std::move(slot));
  }
  return constants;
}

Json kernel_json(const plan::KernelPlan& p) {
  Json k;
  k["name"] = p.entry;
  k["entries"] = p.entries;  // every kernel function of the file, in launch order
  k["file"] = kernel_file_name(p);
  k["hash"] = render::forward_kernel_hash(p);
  k["template"] = render::kernel_template_version(p);
  k["requires"] = requires_json(p);
  // The canonical spec as an object (not a string) so readers need no second parse.
  k["spec"] = Json::parse(spec::canonical_json(p.spec));
  k["dispatch"] = dispatch_json(p);
  k["buffers"] = buffers_json(p);
  k["function_constants"] = function_constants_json(p);
  if (p.spec.mods.any()) k["mods"] = mods_json(p);
  Json params;
  params["struct"] = p.spec.kind == spec::Kind::cache_append ? kAppendParamsStruct : kParamsStruct;
  params["buffer"] = plan::kParamsIndex;
  params["bytes"] = p.params_bytes;
  k["params"] = std::move(params);
  return k;
}

}  // namespace

std::string kernel_file_name(const plan::KernelPlan& plan) { return plan.entry + ".metal"; }

std::string manifest_json(const std::vector<plan::KernelPlan>& plans, const std::vector<std::string>& sources) {
  if (plans.size() != sources.size())
    throw std::invalid_argument(
        fmt::format("manifest_json: {} plans but {} rendered sources", plans.size(), sources.size()));
  Json m;
  m["format"] = kManifestFormat;
  m["generator"] = "mfagen " MFAGEN_VERSION;
  m["kernels"] = Json::array();
  for (const plan::KernelPlan& p : plans) m["kernels"].push_back(kernel_json(p));
  return m.dump(2) + "\n";
}

}  // namespace mfagen::emit
