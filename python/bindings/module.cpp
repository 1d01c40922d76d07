// mfagen._mfagen: the thin layer between Python and the session library's
// attention call (DESIGN.md section 16). Tensors arrive described as
// (data pointer, dtype name, shape, strides in elements) tuples, so this
// module does not depend on torch's C++ API; results leave as numpy arrays
// that own their memory (torch.from_numpy wraps them without a copy).
// Errors: a call's mistake (CallError, DispatchError, SpecError) is a
// ValueError naming the argument; a variant MFAGEN_DISABLE_JIT forbids is
// mfagen.MissingKernelError; the rest are RuntimeErrors. sdpa_cached, the
// fast path of mfagen.torch's calls with a remembered key, takes the torch
// tensors themselves (sdpa_cache.h).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "call_errors.h"
#include "jit_kernels.h"
#include "sdpa_cache.h"
#include "mfagen/cpu/backend.h"
#include "mfagen/forward_dispatch.h"
#include "session/attention_call.h"
#include "session/cache_append_call.h"
#include "io/npy.h"
#include "session/call_error.h"
#include "session/quantized_cache_inputs.h"
#include "spec/kernel_spec.h"
#ifdef MFAGEN_TORCH_MPS_BRIDGE
#include "mps_attention.h"
#endif
#if MFAGEN_TORCH_MPS_STANDIN
#include "mfagen_torch_mps_standin/standin_module.h"
#endif

namespace py = pybind11;

namespace mfagen::python {
namespace {

// Compiled kernels resolve the emulator's runtime symbols (__mf_*) in the
// process's global scope; Python loads an extension and its libraries with
// RTLD_LOCAL, so the cpu backend's library is promoted to global once.
void expose_emulator_runtime() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cpu::parse_constant_value), &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

JitKernels& jit() {
  static JitKernels* kernels = new JitKernels();  // never destroyed: compiled modules outlive interpreter shutdown
  return *kernels;
}

session::HostDType dtype_named(const std::string& name, const std::string& tensor) {
  using session::HostDType;
  static const std::pair<const char*, HostDType> kNames[] = {
      {"float16", HostDType::float16}, {"bfloat16", HostDType::bfloat16}, {"float32", HostDType::float32},
      {"float64", HostDType::float64}, {"bool", HostDType::boolean},      {"int32", HostDType::int32},
      {"uint8", HostDType::uint8}};
  for (const auto& [n, t] : kNames)
    if (name == n) return t;
  throw session::CallError(fmt::format("{}: dtype {} is not supported", tensor, name));
}

// (data_ptr, dtype, shape, strides) -> a HostTensor named `name`.
session::HostTensor describe(const py::tuple& t, const std::string& name) {
  session::HostTensor h;
  h.name = name;
  h.data = reinterpret_cast<const std::byte*>(t[0].cast<uintptr_t>());
  h.dtype = dtype_named(t[1].cast<std::string>(), name);
  h.shape = t[2].cast<std::vector<uint64_t>>();
  h.strides = t[3].cast<std::vector<int64_t>>();
  return h;
}

std::optional<session::HostTensor> describe_optional(const std::optional<py::tuple>& t, const std::string& name) {
  if (!t) return std::nullopt;
  return describe(*t, name);
}

py::array to_numpy(session::OutputTensor&& t) {
  const size_t size = session::element_bytes(t.dtype);
  // 16-bit floats leave as int16 bit patterns: numpy has no bfloat16 (Python views them as the dtype).
  const py::dtype dtype = size == 1   ? py::dtype::of<uint8_t>()
                          : size == 2 ? py::dtype::of<int16_t>()
                                      : py::dtype::of<float>();
  std::vector<int64_t> strides = t.strides.empty() ? session::contiguous_strides(t.shape) : t.strides;
  for (int64_t& s : strides) s *= int64_t(size);
  auto* owner = new std::vector<std::byte>(std::move(t.bytes));
  py::capsule free(owner, [](void* p) { delete static_cast<std::vector<std::byte>*>(p); });
  return py::array(dtype, t.shape, strides, owner->data(), free);
}

// One cu_seqlens as the host holds it (int32, B + 1 entries), checked
// against the packed tensor's rows; returns the longest sequence (at least 1).
uint64_t read_offsets(const session::HostTensor& cu, const session::HostTensor& packed, std::vector<int32_t>& into) {
  if (cu.dtype != session::HostDType::int32 || cu.shape.size() != 1 || cu.shape[0] < 1)
    throw session::CallError(fmt::format("{}: expected a 1-d int32 tensor of batch + 1 offsets, found {} {}", cu.name,
                                         session::to_string(cu.dtype), cu.shape.size()));
  for (uint64_t i = 0; i < cu.shape[0]; ++i) into.push_back(int32_t(cu.value_at({i})));
  uint64_t longest = 1;
  for (size_t b = 0; b + 1 < into.size(); ++b)
    longest = std::max<uint64_t>(longest, uint64_t(std::max(0, into[b + 1] - into[b])));
  try {
    check_cu_seqlens(into.data(), into.size(), into.size() - 1, packed.shape.at(0), longest, cu.name);
  } catch (const DispatchError& e) {
    throw session::CallError(e.what());
  }
  return longest;
}

// cu_seqlens_q, and cu_seqlens_k unless the keys are a paged cache's.
session::PackedSequences packed_sequences(const session::HostTensor& cu_q, const session::HostTensor* cu_k,
                                          const session::HostTensor& q, const session::HostTensor& k) {
  session::PackedSequences p;
  if (cu_k && cu_q.shape != cu_k->shape)
    throw session::CallError(fmt::format("{} has {} entries and {} has {}: both hold batch + 1 offsets", cu_q.name,
                                         cu_q.shape.empty() ? 0 : cu_q.shape[0], cu_k->name,
                                         cu_k->shape.empty() ? 0 : cu_k->shape[0]));
  p.longest_q = read_offsets(cu_q, q, p.cu_seqlens_q);
  p.batch = p.cu_seqlens_q.size() - 1;
  if (cu_k) p.longest_k = read_offsets(*cu_k, k, p.cu_seqlens_k);
  return p;
}

// k and v as quantized caches' raw stored rows (uint8, C-contiguous, the
// last axis a row's bytes): their value shapes replace the described ones.
void quantized_caches(session::AttentionInputs& in, const std::string& kv_dtype) {
  KvFormat format = KvFormat::elements;
  for (KvFormat f : {KvFormat::q8_0, KvFormat::q4_0, KvFormat::fp8_e4m3})
    if (kv_dtype == to_string(f)) format = f;
  if (format == KvFormat::elements)
    throw session::CallError(fmt::format("kv_dtype {}: expected q8_0, q4_0 or fp8_e4m3", kv_dtype));
  for (session::HostTensor* t : {&in.k, &in.v}) {
    if (t->dtype != session::HostDType::uint8 || t->element_strides() != session::contiguous_strides(t->shape))
      throw session::CallError(fmt::format("{}: a {} cache is its raw stored rows: expected a contiguous uint8 tensor, "
                                           "found {}", t->name, kv_dtype, session::to_string(t->dtype)));
    io::NpyArray rows{"|u1", t->shape, std::vector<std::byte>(t->data, t->data + t->elements())};
    session::QuantizedCache cache = session::read_quantized_cache(rows, format, t->name);
    *t = {t->name, session::HostDType::uint8, cache.shape.shape, {}, nullptr};
    (t == &in.k ? in.k_cache : in.v_cache) = std::move(cache);
  }
  in.kv_format = format;
}

// The captured tensors and scalars a score_mod / mask_mod kernel reads, in
// its declaration order: float32 or int32 tensors, C-contiguous, of exactly
// the shape their extents give for the call (the kernel's reads were proven
// inside them).
session::ScoreFunctionInputs score_function_inputs(const spec::KernelSpec& kernel, const AttentionShape& shape,
                                                   const std::map<std::string, session::HostTensor>& captures,
                                                   const std::map<std::string, double>& scalars) {
  session::ScoreFunctionInputs r;
  const std::array<int64_t, 5> sizes{int64_t(shape.batch), int64_t(shape.heads_q), int64_t(shape.heads_kv),
                                     int64_t(shape.seq_q), int64_t(shape.seq_k)};
  for (const expr::CaptureDecl& c : kernel.mods.captures) {
    auto it = captures.find(c.name);
    if (it == captures.end())
      throw session::CallError(fmt::format("captures: the kernel reads {}; pass it in captures", c.name));
    const session::HostTensor& t = it->second;
    const bool is_float = c.type == expr::CaptureType::float32;
    if (t.dtype != (is_float ? session::HostDType::float32 : session::HostDType::int32))
      throw session::CallError(fmt::format("{}: dtype {}; expected {}", t.name, session::to_string(t.dtype),
                                           is_float ? "float32" : "int32"));
    std::vector<uint64_t> expected;
    for (const expr::LinearForm& e : c.extents) expected.push_back(uint64_t(std::max<int64_t>(e.at(sizes), 0)));
    if (t.shape != expected || t.element_strides() != session::contiguous_strides(t.shape))
      throw session::CallError(fmt::format("{}: shape {}; expected a contiguous tensor of shape {} ({} at this call)",
                                           t.name, io::shape_repr(t.shape), io::shape_repr(expected),
                                           fmt::join(c.extent_text, ", ")));
    r.captures.emplace_back(t.data, t.data + t.elements() * 4);
  }
  for (const std::string& name : kernel.mods.scalars) {
    auto it = scalars.find(name);
    if (it == scalars.end())
      throw session::CallError(fmt::format("scalars: the kernel reads {}; pass it in scalars", name));
    r.scalars.push_back(float(it->second));
  }
  return r;
}

// A paged cache's block table (B, max_pages) and lengths (B,), int32, checked against the cache.
session::PagedCacheInputs paged_cache(const session::HostTensor& table, const session::HostTensor& lengths,
                                      uint64_t batch, const session::HostTensor& k_cache) {
  if (table.dtype != session::HostDType::int32 || table.shape.size() != 2 || table.shape[0] != batch)
    throw session::CallError(fmt::format("{}: expected a 2-d int32 tensor ({}, max_pages), a row per sequence",
                                         table.name, batch));
  if (lengths.dtype != session::HostDType::int32 || lengths.shape.size() != 1 || lengths.shape[0] != table.shape[0])
    throw session::CallError(fmt::format("{}: expected a 1-d int32 tensor of {} lengths", lengths.name,
                                         table.shape[0]));
  if (k_cache.shape.size() != 4)
    throw session::CallError(fmt::format("{}: expected a 4-d (num_pages, page_size, heads, dim) cache", k_cache.name));
  session::PagedCacheInputs c;
  c.max_pages = table.shape[1];
  for (uint64_t b = 0; b < table.shape[0]; ++b) {
    for (uint64_t p = 0; p < c.max_pages; ++p) c.block_table.push_back(int32_t(table.value_at({b, p})));
    c.cache_seqlens.push_back(int32_t(lengths.value_at({b})));
    c.longest = std::max<uint64_t>(c.longest, uint64_t(std::max(0, c.cache_seqlens.back())));
  }
  try {
    check_paged_cache(c.block_table.data(), c.cache_seqlens.data(), batch, c.max_pages, k_cache.shape[0],
                      k_cache.shape[1], c.longest);
  } catch (const DispatchError& e) {
    throw session::CallError(e.what());
  }
  return c;
}

py::dict attention(const std::string& spec_json, const py::tuple& q, const py::tuple& k, const py::tuple& v,
                   const std::optional<py::tuple>& mask, const std::optional<py::tuple>& alibi_slopes,
                   const std::optional<std::vector<float>>& sinks, const std::optional<py::tuple>& cu_seqlens_q,
                   const std::optional<py::tuple>& cu_seqlens_k, const std::optional<py::tuple>& block_table,
                   const std::optional<py::tuple>& cache_seqlens, const std::optional<py::tuple>& d_out,
                   const std::optional<py::tuple>& out, const std::optional<py::tuple>& lse,
                   std::optional<double> scale, std::optional<double> softcap, std::optional<int64_t> window_left,
                   std::optional<int64_t> window_right, std::optional<double> dropout, uint64_t seed,
                   uint32_t offset, const std::optional<std::string>& kv_dtype, std::optional<double> k_scale,
                   std::optional<double> v_scale, const std::optional<py::dict>& captures,
                   const std::optional<std::map<std::string, double>>& scalars,
                   const std::optional<py::tuple>& block_classes, bool block_classes_only) {
  session::AttentionInputs in;
  in.q = describe(q, "query");
  in.k = describe(k, "key");
  in.v = describe(v, "value");
  if (kv_dtype) quantized_caches(in, *kv_dtype);
  in.mask = describe_optional(mask, "attn_mask");
  in.alibi_slopes = describe_optional(alibi_slopes, "alibi_slopes");
  in.sinks = sinks;
  in.d_out = describe_optional(d_out, "grad_output");
  in.out = describe_optional(out, "out");
  in.lse = describe_optional(lse, "softmax_lse");
  // Packed sequences, a paged cache, or packed queries on a paged cache (cu_seqlens_q only).
  const bool paged = block_table || cache_seqlens;
  if (paged && (!block_table || !cache_seqlens)) throw session::CallError("block_table and cache_seqlens go together");
  if (cu_seqlens_q || cu_seqlens_k) {
    if (!cu_seqlens_q || (!cu_seqlens_k && !paged)) throw session::CallError("cu_seqlens_q and cu_seqlens_k go together");
    if (cu_seqlens_k && paged)
      throw session::CallError("cu_seqlens_k with block_table: on a paged cache each sequence's keys are its "
                               "cache_seqlens; pass cu_seqlens_q only");
    in.layout = paged ? session::TensorLayout::packed_paged : session::TensorLayout::packed;
    const std::optional<session::HostTensor> cu_k =
        cu_seqlens_k ? std::optional(describe(*cu_seqlens_k, "cu_seqlens_k")) : std::nullopt;
    in.sequences = packed_sequences(describe(*cu_seqlens_q, "cu_seqlens_q"), cu_k ? &*cu_k : nullptr, in.q, in.k);
  } else if (paged) {
    in.layout = session::TensorLayout::paged;
  }
  if (paged) {
    if (in.q.shape.empty()) throw session::CallError("query: expected a 4-d (batch, heads, seq, dim) tensor");
    const uint64_t batch = in.sequences ? in.sequences->batch : in.q.shape[0];
    in.cache = paged_cache(describe(*block_table, "block_table"), describe(*cache_seqlens, "cache_seqlens"), batch,
                           in.k);
  }
  std::map<std::string, session::HostTensor> captured;
  if (captures)
    for (const auto& [name, tensor] : *captures) {
      const std::string key = name.cast<std::string>();
      captured.emplace(key, describe(tensor.cast<py::tuple>(), "captures[\"" + key + "\"]"));
    }
  const std::map<std::string, double> scalar_values = scalars.value_or(std::map<std::string, double>{});
  if (captures || scalars)
    in.score_functions = [&](const spec::KernelSpec& kernel, const AttentionShape& shape) {
      return score_function_inputs(kernel, shape, captured, scalar_values);
    };
  // A reusable BlockMask: compute the classes alone, or pass those computed before.
  std::optional<session::HostTensor> classes = describe_optional(block_classes, "block_mask");
  if (classes) {
    if (classes->dtype != session::HostDType::uint8 || classes->shape.size() != 1)
      throw session::CallError("block_mask: expected its classes as a 1-d uint8 tensor");
    in.block_classes_mode = BlockClasses::given;
    in.block_classes = std::span(classes->data, classes->shape[0]);
  }
  if (block_classes_only) in.block_classes_mode = BlockClasses::only;
  session::AttentionOptions options;
  options.scale = scale;
  options.softcap = softcap;
  options.window_left = window_left;
  options.window_right = window_right;
  options.dropout = dropout;
  options.seed = seed;
  options.offset = offset;
  options.k_scale = k_scale;
  options.v_scale = v_scale;

  const session::SpecLibrary& set = jit().kernels(spec_json);
  const session::KernelSet kernels{set, set.library.kernels().front().name,
                                   [](const plan::KernelPlan& backward) -> const session::SpecLibrary& {
                                     throw std::logic_error("the Python package passes out and lse to " +
                                                            backward.entry);
                                   }};
  session::AttentionResult result;
  {
    py::gil_scoped_release unlocked;  // the emulation runs on its own threads
    result = session::run_attention(kernels, in, options, jit().backend());
  }
  py::dict r;
  r["kernel"] = result.plan->entry;
  if (block_classes_only) {
    session::OutputTensor t{session::HostDType::uint8, {result.block_classes.size()}, {}, std::move(result.block_classes)};
    r["block_classes"] = to_numpy(std::move(t));
    return r;
  }
  if (result.ran_forward) r["out"] = to_numpy(std::move(result.out));
  if (result.ran_forward && result.has_lse) r["lse"] = to_numpy(std::move(result.lse));
  if (result.dq) {
    r["dq"] = to_numpy(std::move(*result.dq));
    r["dk"] = to_numpy(std::move(*result.dk));
    r["dv"] = to_numpy(std::move(*result.dv));
  }
  if (!result.d_sinks.empty()) r["d_sinks"] = result.d_sinks;
  if (!result.capture_gradients.empty()) {
    py::dict grads;
    for (session::CaptureGradient& g : result.capture_gradients) {
      session::OutputTensor t{session::HostDType::float32, g.shape, {}, {}};
      t.bytes.resize(g.values.size() * 4);
      std::memcpy(t.bytes.data(), g.values.data(), t.bytes.size());
      grads[py::str(g.name)] = to_numpy(std::move(t));
    }
    r["capture_grads"] = grads;
  }
  return r;
}

// The int32 values of a described 1-d or 2-d tensor, in C order.
std::vector<int32_t> int32_values(const session::HostTensor& t) {
  if (t.dtype != session::HostDType::int32 || t.shape.empty() || t.shape.size() > 2)
    throw session::CallError(fmt::format("{}: expected a 1-d or 2-d int32 tensor", t.name));
  std::vector<int32_t> values;
  for (uint64_t i = 0; i < t.shape[0]; ++i)
    for (uint64_t j = 0; j < (t.shape.size() == 2 ? t.shape[1] : 1); ++j)
      values.push_back(int32_t(t.value_at(t.shape.size() == 2 ? std::vector<uint64_t>{i, j} : std::vector<uint64_t>{i})));
  return values;
}

// Writes new k and v into the caches in place with the cache_append kernel `spec`.
void append_to_cache(const std::string& spec_json, const py::tuple& k_new, const py::tuple& v_new,
                     const py::tuple& k_cache, const py::tuple& v_cache, const py::tuple& cache_seqlens,
                     const std::optional<py::tuple>& block_table, const std::optional<py::tuple>& cu_seqlens,
                     std::optional<double> k_scale, std::optional<double> v_scale) {
  session::CacheAppendInputs in;
  in.k_new = describe(k_new, "k");
  in.v_new = describe(v_new, "v");
  in.k_cache = describe(k_cache, "k_cache");
  in.v_cache = describe(v_cache, "v_cache");
  in.cache_seqlens = int32_values(describe(cache_seqlens, "cache_seqlens"));
  if (block_table) {
    const session::HostTensor table = describe(*block_table, "block_table");
    in.block_table = int32_values(table);
    in.max_pages = table.shape.size() == 2 ? table.shape[1] : 0;
  }
  if (cu_seqlens) in.cu_seqlens = int32_values(describe(*cu_seqlens, "cu_seqlens"));
  in.k_scale = k_scale.value_or(1.0);
  in.v_scale = v_scale.value_or(1.0);
  const session::SpecLibrary& set = jit().kernels(spec_json);
  py::gil_scoped_release unlocked;
  session::run_cache_append(set, in, jit().backend());
}

// Remembers the key of a call mfagen.torch served on its Python path (the
// 9 arguments of the call as it was made), with the call prepared from the
// tensors the kernel read (as described for attention()). `out_template`
// None, a view or copy between the arguments and the kernel (their data
// pointers differ), or a call prepare_forward does not take: the key stays
// the Python path's.
void sdpa_remember(const py::tuple& call, const std::string& spec_json, const py::tuple& q, const py::tuple& k,
                   const py::tuple& v, const std::optional<py::tuple>& mask, double scale,
                   const py::object& out_template, uint64_t out_bytes) {
  if (call.size() != 9) throw std::invalid_argument("sdpa_remember: the call's 9 arguments");
  SdpaCache& cache = sdpa_cache();
  std::array<PyObject*, 9> arguments;
  for (size_t i = 0; i < arguments.size(); ++i) arguments[i] = call[i].ptr();
  SdpaKey key;
  SdpaData data;
  if (!cache.read_key(arguments.data(), key, data)) {
    PyErr_Clear();
    return;
  }
  std::shared_ptr<SdpaEntry> entry;
  try {
    session::AttentionInputs in;
    in.q = describe(q, "query");
    in.k = describe(k, "key");
    in.v = describe(v, "value");
    in.mask = describe_optional(mask, "attn_mask");
    const auto same = [](const session::HostTensor& t, uintptr_t pointer) {
      return reinterpret_cast<uintptr_t>(t.data) == pointer;
    };
    if (!out_template.is_none() && same(in.q, data.q) && same(in.k, data.k) && same(in.v, data.v) &&
        (!in.mask || same(*in.mask, data.mask))) {
      session::AttentionOptions options;
      options.scale = scale;
      const session::SpecLibrary& set = jit().kernels(spec_json);
      const session::KernelSet kernels{set, set.library.kernels().front().name, nullptr};
      std::optional<session::PreparedForward> prepared =
          session::prepare_forward(kernels, in, options, jit().backend());
      if (prepared && prepared->out_bytes == out_bytes) {
        entry = std::make_shared<SdpaEntry>();
        entry->call = std::move(*prepared);
        entry->out_template = out_template.inc_ref().ptr();
      }
    }
  } catch (const std::exception&) {
    entry.reset();  // the call ran on the Python path: it stays there
  }
  cache.store(key, std::move(entry));
}

}  // namespace
}  // namespace mfagen::python

PYBIND11_MODULE(_mfagen, m) {
  using namespace mfagen;
  python::expose_emulator_runtime();
  m.doc() = "mfagen's attention kernels on the cpu backend (an emulator of the generated Metal kernels)";
  static py::exception<python::MissingKernelError> missing(m, "MissingKernelError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const python::MissingKernelError& e) {
      missing(e.what());
    } catch (...) {
      if (!python::set_call_error(std::current_exception())) throw;  // pybind11's own translation
    }
  });
  m.def("attention", &python::attention, py::arg("spec"), py::arg("q"), py::arg("k"), py::arg("v"), py::kw_only(),
        py::arg("mask") = py::none(), py::arg("alibi_slopes") = py::none(), py::arg("sinks") = py::none(),
        py::arg("cu_seqlens_q") = py::none(), py::arg("cu_seqlens_k") = py::none(),
        py::arg("block_table") = py::none(), py::arg("cache_seqlens") = py::none(),
        py::arg("d_out") = py::none(), py::arg("out") = py::none(), py::arg("lse") = py::none(),
        py::arg("scale") = py::none(), py::arg("softcap") = py::none(), py::arg("window_left") = py::none(),
        py::arg("window_right") = py::none(), py::arg("dropout") = py::none(), py::arg("seed") = 0,
        py::arg("offset") = 0, py::arg("kv_dtype") = py::none(), py::arg("k_scale") = py::none(),
        py::arg("v_scale") = py::none(), py::arg("captures") = py::none(), py::arg("scalars") = py::none(),
        py::arg("block_classes") = py::none(), py::arg("block_classes_only") = false,
        "Runs one attention call of the kernel `spec` (the JSON text of one kernel spec) on described tensors.");
  m.def("append_to_cache", &python::append_to_cache, py::arg("spec"), py::arg("k"), py::arg("v"),
        py::arg("k_cache"), py::arg("v_cache"), py::kw_only(), py::arg("cache_seqlens"),
        py::arg("block_table") = py::none(), py::arg("cu_seqlens") = py::none(), py::arg("k_scale") = py::none(),
        py::arg("v_scale") = py::none(),
        "Writes new k and v into the caches in place with the cache_append kernel `spec` (quantizing on write).");
  m.def("load_library", [](const std::string& manifest) { return python::jit().load_library(manifest); },
        py::arg("manifest"), "Serves later calls from the kernels of an `mfagen generate` manifest; their names.");
  m.def("variants", [] { return python::jit().names(); }, "Names of the kernels generated in this process.");
  m.def("recorded_runs", [] { return python::jit().recorded_runs(); },
        "Runs the MFAGEN_BACKEND=record backend was given (benchmarks of the call path).");
  m.def("backend_name", [] { return std::string(python::jit().backend().name()); },
        "The backend calls run on: cpu (the emulator), or record (MFAGEN_BACKEND=record: launches nothing).");
  m.def("jit_disabled", &python::jit_disabled, "Whether MFAGEN_DISABLE_JIT forbids generating kernels.");
  if (PyModule_AddFunctions(m.ptr(), python::sdpa_module_methods()) != 0) throw py::error_already_set();
  m.def("sdpa_setup",
        [](py::handle tensor_type, py::handle strided, py::handle is_grad_enabled, py::handle empty_like) {
          python::sdpa_cache().setup(tensor_type.ptr(), strided.ptr(), is_grad_enabled.ptr(), empty_like.ptr(),
                                     python::jit().backend());
        },
        py::arg("tensor_type"), py::arg("strided"), py::arg("is_grad_enabled"), py::arg("empty_like"),
        "Gives sdpa_cached torch.Tensor, torch.strided, torch.is_grad_enabled and torch.empty_like; forgets all keys.");
  m.def("sdpa_remember", &python::sdpa_remember, py::arg("call"), py::arg("spec"), py::arg("q"), py::arg("k"),
        py::arg("v"), py::arg("mask"), py::arg("scale"), py::arg("out_template"), py::arg("out_bytes"),
        "Remembers the key of a call mfagen.torch served on its Python path, with the call prepared.");
  m.def("sdpa_cached_keys",
        [] {
          py::dict d;
          d["keys"] = python::sdpa_cache().size();
          d["served"] = python::sdpa_cache().served();
          return d;
        },
        "How many call keys sdpa_cached remembers, and how many of them it serves (the rest: the Python path).");
  m.def("sdpa_forget", [] { python::sdpa_cache().clear(); }, "Forgets every key sdpa_cached remembers.");
#ifdef MFAGEN_TORCH_MPS_BRIDGE
  // "pytorch" on macOS (PyTorch's MPS stream), "stand-in" elsewhere (tests' stand-in MPS device); None: not built.
  m.attr("mps_bridge") = MFAGEN_TORCH_MPS_BRIDGE;
  python::add_mps_attention(m, python::jit());
#else
  m.attr("mps_bridge") = py::none();
#endif
#if MFAGEN_TORCH_MPS_STANDIN
  mfagen::torch_mps_standin::add_module(m);
#endif
}
