// THPVariable_Check / THPVariable_Unpack of the stand-in: the at::Tensor
// fields read from a Python torch.Tensor through its Python attributes, the
// storage found among the stand-in's MTL::Buffers by its address.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <torch/csrc/autograd/python_variable.h>

#include <string>

#include "standin_buffers.h"

namespace py = pybind11;

namespace {

at::ScalarType scalar_type_named(const std::string& name) {
  if (name == "torch.float16") return at::kHalf;
  if (name == "torch.bfloat16") return at::kBFloat16;
  if (name == "torch.float32") return at::kFloat;
  if (name == "torch.bool") return at::kBool;
  if (name == "torch.uint8") return at::kByte;
  if (name == "torch.int32") return at::kInt;
  if (name == "torch.float64") return at::ScalarType::Double;
  if (name == "torch.int64") return at::ScalarType::Long;
  return at::ScalarType::Undefined;
}

}  // namespace

bool THPVariable_Check(PyObject* object) {
  static py::object tensor_type = py::module_::import("torch").attr("Tensor");
  return PyObject_IsInstance(object, tensor_type.ptr()) == 1;
}

at::Tensor THPVariable_Unpack(PyObject* object) {
  const py::handle t(object);
  const py::object storage = py::hasattr(t, "untyped_storage") ? t.attr("untyped_storage")() : t.attr("storage")();
  const auto base = reinterpret_cast<const void*>(storage.attr("data_ptr")().cast<uintptr_t>());
  at::Tensor::Fields f;
  MTL::Buffer* buffer = mfagen::torch_mps_standin::buffer_at(base);
  f.is_mps = buffer != nullptr;
  f.storage = c10::Storage(buffer ? static_cast<const void*>(buffer) : base);
  f.storage_offset = t.attr("storage_offset")().cast<int64_t>();
  f.element_size = t.attr("element_size")().cast<int64_t>();
  f.sizes = t.attr("shape").cast<std::vector<int64_t>>();
  f.strides = t.attr("stride")().cast<std::vector<int64_t>>();
  f.scalar_type = scalar_type_named(py::str(t.attr("dtype")).cast<std::string>());
  return at::Tensor(std::move(f));
}
