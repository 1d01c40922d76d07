#include "mps_tensor.h"

#include <ATen/Tensor.h>
#include <torch/csrc/autograd/python_variable.h>

#include <fmt/format.h>

#include <algorithm>

#include "io/npy.h"

namespace py = pybind11;

namespace mfagen::python {
namespace {

// PyTorch's MPS storages hold their id<MTLBuffer> as the storage's data
// (its MPS extensions: __builtin_bit_cast(id<MTLBuffer>, tensor.storage().data()));
// metal-cpp's MTL::Buffer* is that same object pointer.
MTL::Buffer* mtl_buffer_of(const at::Tensor& t) {
  return static_cast<MTL::Buffer*>(const_cast<void*>(static_cast<const void*>(t.storage().data())));
}

bool dtype_of(at::ScalarType type, session::HostDType& into) {
  using session::HostDType;
  if (type == at::kHalf) into = HostDType::float16;
  else if (type == at::kBFloat16) into = HostDType::bfloat16;
  else if (type == at::kFloat) into = HostDType::float32;
  else if (type == at::kBool) into = HostDType::boolean;
  else if (type == at::kByte) into = HostDType::uint8;
  else if (type == at::kInt) into = HostDType::int32;
  else return false;
  return true;
}

}  // namespace

void not_served(const std::string& message) {
  PyErr_SetString(PyExc_NotImplementedError, message.c_str());
  throw py::error_already_set();
}

uint64_t MpsTensor::span_bytes() const { return layout().span_bytes(); }

session::HostTensor MpsTensor::layout() const {
  static const std::byte marker{};
  return session::HostTensor{name, dtype, shape, strides, &marker};
}

MpsTensor mps_tensor(py::handle object, const std::string& name) {
  if (!THPVariable_Check(object.ptr()))
    throw py::type_error(fmt::format("{}: expected a torch.Tensor, found {}", name,
                                     py::str(py::type::handle_of(object).attr("__name__")).cast<std::string>()));
  const at::Tensor& t = THPVariable_Unpack(object.ptr());
  if (!t.is_mps())
    throw py::value_error(fmt::format("{}: not an MPS tensor; every tensor of an MPS call must be on the MPS device",
                                      name));
  MpsTensor m;
  m.name = name;
  m.object = py::reinterpret_borrow<py::object>(object);
  m.buffer = mtl_buffer_of(t);
  m.offset = uint64_t(t.storage_offset() * t.element_size());
  if (!dtype_of(t.scalar_type(), m.dtype)) not_served(fmt::format("{}: its dtype is not served on MPS", name));
  for (int64_t extent : t.sizes()) m.shape.push_back(uint64_t(extent));
  for (int64_t stride : t.strides()) m.strides.push_back(stride);
  return m;
}

void require_in_place(const MpsTensor& t, bool contiguous) {
  const std::vector<int64_t>& s = t.strides;
  if (contiguous) {
    if (s != session::contiguous_strides(t.shape))
      not_served(fmt::format("{}: strides {} for shape {}; on MPS it must be contiguous (call .contiguous())", t.name,
                             io::shape_repr(std::vector<uint64_t>(s.begin(), s.end())), io::shape_repr(t.shape)));
    return;
  }
  // Non-overlapping with unit-stride rows: sorted by stride, each dimension
  // steps past everything the smaller ones span.
  std::vector<size_t> dims;
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] > 1) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return s[a] < s[b]; });
  int64_t reach = 1;
  bool ok = t.shape.empty() || t.shape.back() <= 1 || s.back() == 1;
  for (size_t d : dims) {
    ok = ok && s[d] >= reach;
    reach = s[d] * int64_t(t.shape[d]);
  }
  if (!ok)
    not_served(fmt::format("{}: strides {} for shape {}: the Metal bridge reads MPS tensors in place, which needs rows "
                           "of stride 1 and no two elements in one place (an expanded or transposed-rows view); "
                           "call .contiguous() first",
                           t.name, io::shape_repr(std::vector<uint64_t>(s.begin(), s.end())), io::shape_repr(t.shape)));
}

}  // namespace mfagen::python
