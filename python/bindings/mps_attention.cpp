#include "mps_attention.h"

#include <ATen/mps/MPSStream.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <array>
#include <exception>
#include <map>
#include <mutex>
#include <tuple>

#include "io/npy.h"
#include "mfagen/metal_backend.h"
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

std::vector<uint64_t> lse_shape_of(const MpsTensor& q) { return {q.shape[0], q.shape[1], q.shape[2]}; }

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
  const session::CallLayout geometry =
      session::call_layout(session::TensorLayout::dense, {q.name, q.shape}, {k.name, k.shape}, {v.name, v.shape}, {});

  session::CallRequest request = session::request_with_shape(geometry);
  request.has_mask = !call.mask.is_none();
  request.softcap = call.softcap.has_value();
  request.window = call.window_left || call.window_right;
  request.dropout = call.dropout.has_value();
  request.backward = backward;
  MetalBackend& backend = metal_backend();
  const KernelEntry& entry = session::select_kernel(set.library, request, "variant", backend.capabilities());

  ForwardCall f;
  geometry.apply_to(f);
  f.strides.q = session::strides3(q.strides, false);
  f.strides.k = session::strides3(k.strides, false);
  f.strides.v = session::strides3(v.strides, false);
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
  std::optional<MpsTensor> mask;
  if (!call.mask.is_none()) {
    mask = mps_tensor(call.mask, "attn_mask");
    if (spec.mask != spec::MaskKind::boolean)
      not_served("attn_mask: an additive (float) mask is not served on MPS: its values are checked on the host "
                 "(NaN, +inf), which would wait for the GPU; pass a bool mask");
    // A bool mask is bound as it is (broadcast dimensions keep stride 0): its layout alone is checked.
    f.mask_strides = session::mask_buffer(mask->layout(), spec, geometry.shape).strides;
    bound.bind(plan::kMaskIndex, *mask);
  }
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

}  // namespace mfagen::python
