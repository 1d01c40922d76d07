#include "mfagen_torch_mps_standin/standin_module.h"

#include <ATen/mps/MPSStream.h>

#include "mfagen/metal_cpp_standin.h"
#include "standin_buffers.h"

namespace py = pybind11;

namespace mfagen::torch_mps_standin {
namespace {

// One stand-in MTL::Buffer seen from Python: a writable byte buffer
// (torch.frombuffer views it without a copy and keeps this object alive).
class PyBuffer {
 public:
  explicit PyBuffer(size_t bytes) : buffer_(new_buffer(bytes)), bytes_(bytes) {}
  ~PyBuffer() { release_buffer(buffer_); }
  PyBuffer(const PyBuffer&) = delete;
  PyBuffer& operator=(const PyBuffer&) = delete;
  size_t bytes() const { return bytes_; }
  uintptr_t address() const { return reinterpret_cast<uintptr_t>(buffer_->contents()); }
  py::buffer_info info() { return py::buffer_info(buffer_->contents(), 1, "B", py::ssize_t(bytes_ ? bytes_ : 1)); }

 private:
  MTL::Buffer* buffer_;
  size_t bytes_;
};

}  // namespace

void add_module(py::module_& parent) {
  py::module_ m = parent.def_submodule(
      "mps_standin", "A stand-in MPS device for tests (metal-cpp stand-in buffers, PyTorch's stream calls): not a GPU");
  py::class_<PyBuffer>(m, "Buffer", py::buffer_protocol())
      .def(py::init<size_t>(), py::arg("nbytes"))
      .def_property_readonly("nbytes", &PyBuffer::bytes)
      .def_property_readonly("address", &PyBuffer::address)
      .def_buffer(&PyBuffer::info);
  m.def("is_buffer", [](uintptr_t address) { return buffer_at(reinterpret_cast<const void*>(address)) != nullptr; },
        py::arg("address"), "Whether a stand-in buffer's contents start at `address` (a storage's data_ptr).");
  m.def("synchronize", [] { at::mps::getCurrentMPSStream()->synchronize(at::mps::SyncType::COMMIT_AND_WAIT); },
        "Commits the stream's command buffer and waits (torch.mps.synchronize); RuntimeError on a stand-in finding.");
  m.def("stats",
        [] {
          const metal_standin::DeviceCounters c = metal_standin::counters(device());
          py::dict d;
          d["command_buffers_committed"] = c.command_buffers_committed;
          d["dispatches_run"] = c.dispatches_run;
          d["pipelines_built"] = c.pipelines_built;
          return d;
        },
        "The stand-in device's counters: command buffers committed, dispatches run, pipelines built.");
}

}  // namespace mfagen::torch_mps_standin
