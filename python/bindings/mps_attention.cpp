#include "mps_attention.h"

#include <ATen/mps/MPSStream.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <array>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "io/npy.h"
#include "mfagen/metal_backend.h"
#include "mps_inputs.h"
#include "mps_tensor.h"
#include "plan/kernel_plan.h"
#include "session/call_error.h"
#include "session/call_layout.h"
#include "session/kernel_buffers.h"
#include "session/kernel_selection.h"

namespace py = pybind11;

namespace mfagen::python {
namespace {

// The JIT sets the bridge has used, by their library: the Metal backend asks
// for a kernel's MSL by library (JIT libraries live in memory, no files).
std::mutex sets_mutex;
std::map<const Library*, const session::SpecLibrary*> used_sets;

const session::SpecLibrary& use_set(JitKernels& jit, const std::string& spec_json) {
  const session::SpecLibrary& set = jit.kernels(spec_json);
  std::lock_guard lock(sets_mutex);
  used_sets.emplace(&set.library, &set);
  return set;
}

// One Metal backend on PyTorch's MPS device for the process (never destroyed:
// its pipelines may serve work still on the stream at interpreter shutdown).
MetalBackend& metal_backend() {
  static MetalBackend* backend = new MetalBackend(
      static_cast<MTL::Device*>(at::mps::getCurrentMPSStream()->device()),
      [](const Library& library, const KernelEntry& kernel) {
        std::lock_guard lock(sets_mutex);
        return used_sets.at(&library)->source_of(kernel);
      });
  return *backend;
}

const char* dtype_name(session::HostDType t) { return session::to_string(t); }

// The buffers of one launch plan: tensors bound at their storage offsets.
struct Bindings {
  std::array<MTL::Buffer*, LaunchPlan::kMaxBuffers> buffers{};
  std::array<uint64_t, LaunchPlan::kMaxBuffers> offsets{};
  void bind(uint32_t index, const MpsTensor& t) {
    buffers[index] = t.buffer;
    offsets[index] = t.offset;
  }
};

// A new tensor from the caller's allocator (on the call's device), as bound.
MpsTensor allocate(const MpsCall& call, const std::string& name, const std::vector<uint64_t>& shape,
                   const std::vector<int64_t>& strides, session::HostDType dtype) {
  return mps_tensor(call.empty_strided(py::cast(shape), py::cast(strides), dtype_name(dtype)), name);
}

// Runs `work` on the stream's serial queue (as PyTorch's MPS ops encode),
// carrying an exception out of it (none may cross dispatch_sync_f).
template <class Work>
void on_stream_queue(at::mps::MPSStream* stream, Work work) {
  struct Context {
    Work* work;
    std::exception_ptr error;
  } context{&work, nullptr};
  dispatch_sync_f(stream->queue(), &context, [](void* p) {
    auto* c = static_cast<Context*>(p);
    try {
      (*c->work)();
    } catch (...) {
      c->error = std::current_exception();
    }
  });
  if (context.error) std::rethrow_exception(context.error);
}

// An optional tensor argument: None, or the MPS tensor named `name`.
std::optional<MpsTensor> optional_tensor(const py::object& object, const std::string& name) {
  if (object.is_none()) return std::nullopt;
  return mps_tensor(object, name);
}

// The tensors a call reads beyond q, k and v, checked by their metadata
// (mps_inputs.h), with the runtime values they set; bound once the kernel's
// plan is known. A tensor the selected kernel does not read is refused by
// the selection (the request names it).
struct OptionalInputs {
  std::optional<MpsTensor> mask, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k;

  explicit OptionalInputs(const MpsCall& call)
      : mask(optional_tensor(call.mask, "attn_mask")),
        alibi_slopes(optional_tensor(call.alibi_slopes, "alibi_slopes")),
        sinks(optional_tensor(call.sinks, "sinks")),
        cu_seqlens_q(optional_tensor(call.cu_seqlens_q, "cu_seqlens_q")),
        cu_seqlens_k(optional_tensor(call.cu_seqlens_k, "cu_seqlens_k")) {}

  // Packed sequences: their sizes from the cu_seqlens' length and the given longest sequences.
  session::TensorLayout layout(const MpsCall& call, session::SequenceSizes& sizes) const {
    if (!cu_seqlens_q && !cu_seqlens_k) return session::TensorLayout::dense;
    if (!cu_seqlens_q || !cu_seqlens_k) throw session::CallError("cu_seqlens_q and cu_seqlens_k go together");
    if (!call.max_seqlen_q || !call.max_seqlen_k)
      throw session::CallError("max_seqlen_q, max_seqlen_k: an MPS varlen call gives its longest sequences (the "
                               "cu_seqlens are not read on the host)");
    sizes = packed_sizes(*cu_seqlens_q, *cu_seqlens_k, *call.max_seqlen_q, *call.max_seqlen_k);
    return session::TensorLayout::packed;
  }

  void request(session::CallRequest& r) const {
    r.varlen = cu_seqlens_q.has_value();
    r.has_mask = mask.has_value();
    r.alibi = alibi_slopes.has_value();
    r.sinks = sinks.has_value();
  }

  void bind(const spec::KernelSpec& spec, const AttentionShape& shape, ForwardCall& f, Bindings& bound) const {
    if (mask) {
      f.mask_strides = mask_strides(*mask, spec, shape);
      bound.bind(plan::kMaskIndex, *mask);
    }
    if (alibi_slopes) {
      f.alibi_per_batch = alibi_per_batch(*alibi_slopes, shape);
      bound.bind(plan::kAlibiIndex, *alibi_slopes);
    }
    if (sinks) {
      check_sinks(*sinks, shape);
      bound.bind(plan::kSinksIndex, *sinks);
    }
    if (cu_seqlens_q) {
      bound.bind(plan::kCuSeqlensQIndex, *cu_seqlens_q);
      bound.bind(plan::kCuSeqlensKIndex, *cu_seqlens_k);
    }
  }
};

}  // namespace

py::dict mps_attention(JitKernels& jit, const std::string& spec_json, py::handle q_object, py::handle k_object,
                       py::handle v_object, const MpsCall& call) {
  const session::SpecLibrary& set = use_set(jit, spec_json);
  const spec::KernelSpec& spec = set.plans.front().spec;
  const bool backward = spec.kind == spec::Kind::backward;
  const session::HostDType element = session::host_dtype_of(spec.dtype);
  const MpsTensor q = mps_tensor(q_object, "query"), k = mps_tensor(k_object, "key"), v = mps_tensor(v_object, "value");
  for (const MpsTensor* t : {&q, &k, &v}) {
    if (t->dtype != element)
      throw py::type_error(fmt::format("{}: dtype {}; the kernel takes {}", t->name, dtype_name(t->dtype),
                                       dtype_name(element)));
    t->layout().check_layout();
    require_in_place(*t, false);
  }
  const OptionalInputs inputs(call);
  session::SequenceSizes sizes;
  const session::TensorLayout layout = inputs.layout(call, sizes);
  const session::CallLayout geometry =
      session::call_layout(layout, {q.name, q.shape}, {k.name, k.shape}, {v.name, v.shape}, sizes);

  session::CallRequest request = session::request_with_shape(geometry);
  inputs.request(request);
  request.softcap = call.softcap.has_value();
  request.window = call.window_left || call.window_right;
  request.dropout = call.dropout.has_value();
  request.backward = backward;
  MetalBackend& backend = metal_backend();
  const KernelEntry& entry = session::select_kernel(set.library, request, "variant", backend.capabilities());

  ForwardCall f;
  geometry.apply_to(f);
  const bool packed = session::packed_queries(layout);
  f.strides.q = session::strides3(q.strides, packed);
  f.strides.k = session::strides3(k.strides, packed);
  f.strides.v = session::strides3(v.strides, packed);
  f.scale = call.scale.value_or(0);
  f.softcap = call.softcap.value_or(0);
  f.window_left = call.window_left.value_or(-1);
  f.window_right = call.window_right.value_or(-1);
  if (call.dropout) {
    f.dropout_p = *call.dropout;
    f.dropout_seed = call.seed;
    f.dropout_offset = call.offset;
  }
  Bindings bound;
  bound.bind(plan::kQIndex, q);
  bound.bind(plan::kKIndex, k);
  bound.bind(plan::kVIndex, v);
  inputs.bind(spec, geometry.shape, f, bound);
  LaunchPlan plan;
  try {
    Library::launch_plan(entry, f, plan);
  } catch (const DispatchError& e) {
    throw session::CallError(e.what());
  }

  py::dict result;
  result["kernel"] = entry.name;
  if (!backward) {
    const MpsTensor out = allocate(call, "out", geometry.out_shape, session::contiguous_strides(geometry.out_shape),
                                   element);
    bound.bind(plan::kOutIndex, out);
    result["out"] = out.object;
    if (entry.info.lse) {
      const MpsTensor lse = allocate(call, "softmax_lse", geometry.lse_shape,
                                     session::contiguous_strides(geometry.lse_shape), session::HostDType::float32);
      bound.bind(plan::kLseIndex, lse);
      result["lse"] = lse.object;
    }
  } else {
    if (call.d_out.is_none() || call.out.is_none() || call.lse.is_none())
      throw session::CallError("the MPS backward takes grad_output with the forward's out and softmax_lse");
    const MpsTensor d_out = mps_tensor(call.d_out, "grad_output"), out = mps_tensor(call.out, "out"),
                    lse = mps_tensor(call.lse, "softmax_lse");
    const std::pair<const MpsTensor*, std::vector<uint64_t>> expected[] = {
        {&d_out, geometry.out_shape}, {&out, geometry.out_shape}, {&lse, geometry.lse_shape}};
    for (const auto& [t, shape] : expected) {
      if (t->shape != shape)
        throw session::CallError(fmt::format("{}: shape {}; expected {}", t->name, io::shape_repr(t->shape),
                                             io::shape_repr(shape)));
      const session::HostDType wanted = t == &lse ? session::HostDType::float32 : element;
      if (t->dtype != wanted)
        throw py::type_error(fmt::format("{}: dtype {}; expected {}", t->name, dtype_name(t->dtype), dtype_name(wanted)));
      require_in_place(*t, true);
    }
    bound.bind(plan::kDOutIndex, d_out);
    bound.bind(plan::kOutIndex, out);
    bound.bind(plan::kLseIndex, lse);
    // Gradients are written with the strides their inputs were read with.
    const std::tuple<const MpsTensor*, uint32_t, const char*> gradients[] = {
        {&q, plan::kDqIndex, "dq"}, {&k, plan::kDkIndex, "dk"}, {&v, plan::kDvIndex, "dv"}};
    for (const auto& [input, index, name] : gradients) {
      const MpsTensor g = allocate(call, name, input->shape, input->strides, element);
      bound.bind(index, g);
      result[py::str(name)] = g.object;
    }
    if (spec.sinks) {  // written whole by the backward's _dsinks launch
      const MpsTensor d_sinks = allocate(call, "d_sinks", {geometry.shape.heads_q}, {1}, session::HostDType::float32);
      bound.bind(plan::kDSinksIndex, d_sinks);
      result["d_sinks"] = d_sinks.object;
    }
  }
  // Scratch (decode partials, the backward's row sums): tensors of the
  // call's device, released to PyTorch's allocator after the call, which
  // reuses them only for work ordered after this on the stream.
  py::list scratch;
  for (const LaunchPlan::Buffer& b : plan.buffers()) {
    if (b.index == kForwardParams) continue;
    if (b.scratch) {
      const MpsTensor t = allocate(call, std::string(b.name), {b.bytes}, {1}, session::HostDType::uint8);
      bound.bind(b.index, t);
      scratch.append(t.object);
    } else if (!bound.buffers[b.index]) {
      not_served(fmt::format("kernel {} reads buffer {} ({}), which the Metal bridge does not bind", entry.name,
                             b.index, std::string(b.name)));
    }
  }
  at::mps::MPSStream* stream = at::mps::getCurrentMPSStream();
  on_stream_queue(stream, [&] {
    backend.encode(set.library, entry, plan, static_cast<MTL::ComputeCommandEncoder*>(stream->commandEncoder()),
                   bound.buffers, bound.offsets);
  });
  return result;
}

void add_mps_attention(py::module_& m, JitKernels& jit) {
  m.def(
      "mps_attention",
      [&jit](const std::string& spec, py::handle q, py::handle k, py::handle v, py::object mask,
             py::object alibi_slopes, py::object sinks, py::object cu_seqlens_q, py::object cu_seqlens_k,
             std::optional<int64_t> max_seqlen_q, std::optional<int64_t> max_seqlen_k, py::object d_out,
             py::object out, py::object lse, std::optional<double> scale, std::optional<double> softcap,
             std::optional<int64_t> window_left, std::optional<int64_t> window_right, std::optional<double> dropout,
             uint64_t seed, uint32_t offset, py::object empty_strided) {
        MpsCall call{mask, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, d_out, out, lse,
                     scale, softcap, dropout, window_left, window_right, max_seqlen_q, max_seqlen_k,
                     seed, offset, empty_strided};
        return mps_attention(jit, spec, q, k, v, call);
      },
      py::arg("spec"), py::arg("q"), py::arg("k"), py::arg("v"), py::kw_only(), py::arg("mask") = py::none(),
      py::arg("alibi_slopes") = py::none(), py::arg("sinks") = py::none(), py::arg("cu_seqlens_q") = py::none(),
      py::arg("cu_seqlens_k") = py::none(), py::arg("max_seqlen_q") = py::none(),
      py::arg("max_seqlen_k") = py::none(), py::arg("d_out") = py::none(), py::arg("out") = py::none(),
      py::arg("lse") = py::none(), py::arg("scale") = py::none(), py::arg("softcap") = py::none(),
      py::arg("window_left") = py::none(), py::arg("window_right") = py::none(), py::arg("dropout") = py::none(),
      py::arg("seed") = 0, py::arg("offset") = 0, py::arg("empty_strided"),
      "Encodes one attention call on MPS tensors onto PyTorch's current MPS stream (no commit, no copy).");
}

}  // namespace mfagen::python
