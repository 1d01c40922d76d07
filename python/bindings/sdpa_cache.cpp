#include "sdpa_cache.h"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <vector>

#include "call_errors.h"
#include "mfagen/forward_dispatch.h"
#include "session/call_error.h"
#include "spec/kernel_spec.h"

namespace py = pybind11;

namespace mfagen::python {

// How the fast path reads a torch.Tensor's attributes: through the
// descriptors type(t).attr resolves to (getters of _TensorBase's getset
// descriptors, its method descriptors called with t), as t.attr would,
// without the generic attribute lookup per read. Methods of a tensor with
// instance attributes (they could shadow a method) are looked up as usual.
class TensorAttribute {
 public:
  TensorAttribute(PyObject* type, const char* name) : name_(PyUnicode_InternFromString(name)) {
    if (!name_) throw py::error_already_set();
    descriptor_ = PyObject_GetAttr(type, name_);
    if (!descriptor_) throw py::error_already_set();
    if (Py_IS_TYPE(descriptor_, &PyGetSetDescr_Type))
      getset_ = reinterpret_cast<PyGetSetDescrObject*>(descriptor_)->d_getset;
    method_ = Py_IS_TYPE(descriptor_, &PyMethodDescr_Type);
  }
  TensorAttribute(const TensorAttribute&) = delete;
  TensorAttribute& operator=(const TensorAttribute&) = delete;
  ~TensorAttribute() {
    Py_XDECREF(descriptor_);
    Py_XDECREF(name_);
  }

  // t.attr, a new reference (nullptr with an error set). A getset
  // descriptor is a data descriptor: it wins over instance attributes.
  PyObject* get(PyObject* t) const {
    if (getset_ && getset_->get) return getset_->get(t, getset_->closure);
    return PyObject_GetAttr(t, name_);
  }
  // t.attr(), a new reference (nullptr with an error set).
  PyObject* call(PyObject* t, bool plain) const {
    if (plain && method_) return PyObject_Vectorcall(descriptor_, &t, 1, nullptr);
    return PyObject_VectorcallMethod(name_, &t, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  }

 private:
  PyObject* name_ = nullptr;
  PyObject* descriptor_ = nullptr;
  PyGetSetDef* getset_ = nullptr;
  bool method_ = false;
};

struct TensorAttributes {
  explicit TensorAttributes(PyObject* type)
      : is_cpu(type, "is_cpu"), layout(type, "layout"), requires_grad(type, "requires_grad"), dtype(type, "dtype"),
        shape(type, "shape"), stride(type, "stride"), data_ptr(type, "data_ptr") {}
  TensorAttribute is_cpu, layout, requires_grad, dtype, shape, stride, data_ptr;
};

namespace {

constexpr Py_ssize_t kSdpaArguments = 9;  // query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, seed
constexpr int64_t kMaxSdpaDims = 8;       // more: the Python path

// Whether `t` has no instance attributes (its type's descriptors decide every read).
bool plain_instance(PyObject* t) {
  PyObject** dict = _PyObject_GetDictPtr(t);
  return !dict || !*dict || PyDict_GET_SIZE(*dict) == 0;
}

// The ints of a tuple (torch.Size, stride()) after their count; false past kMaxSdpaDims.
bool push_ints(PyObject* tuple, SdpaKey& key) {
  if (!tuple || !PyTuple_Check(tuple)) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  if (n > kMaxSdpaDims || !key.push(n)) return false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    const long long value = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
    if (value == -1 && PyErr_Occurred()) return false;
    if (!key.push(value)) return false;
  }
  return true;
}

// A Python float or int as the key takes it: exact types only (a subclass
// could compare equal to a value the Python path refuses).
bool push_number(PyObject* x, SdpaKey& key) {
  if (PyFloat_CheckExact(x)) {
    const double value = PyFloat_AS_DOUBLE(x);
    int64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return key.push(1) && key.push(bits);
  }
  if (PyLong_CheckExact(x)) {
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow || (value == -1 && PyErr_Occurred())) return false;
    return key.push(2) && key.push(value);
  }
  return false;
}

// Python's own values for flags: True or False, nothing else.
bool push_bool(PyObject* x, SdpaKey& key) {
  if (x != Py_True && x != Py_False) return false;
  return key.push(x == Py_True);
}

// The GIL released for the kernel's run (the emulation runs on its own threads).
class GilReleased {
 public:
  GilReleased() : state_(PyEval_SaveThread()) {}
  ~GilReleased() { PyEval_RestoreThread(state_); }
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  PyThreadState* state_;
};

// The errors of a call as the rest of the module raises them (module.cpp's translator).
PyObject* sdpa_cached_function(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  try {
    try {
      return sdpa_cache().call(args, nargs);
    } catch (...) {
      if (set_call_error(std::current_exception())) return nullptr;
      throw;
    }
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

}  // namespace

PyMethodDef* sdpa_module_methods() {
  static PyMethodDef methods[] = {
      {"sdpa_cached", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&sdpa_cached_function)),
       METH_FASTCALL,
       "sdpa_cached(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, dropout_seed): the output "
       "of a call whose key mfagen.torch remembered; None, or False (remember the key), when the Python path serves "
       "the call."},
      {nullptr, nullptr, 0, nullptr}};
  return methods;
}

bool SdpaKey::operator==(const SdpaKey& o) const {
  return size == o.size && std::equal(words.begin(), words.begin() + size, o.words.begin());
}

size_t SdpaKey::hash() const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ size;
  for (uint32_t i = 0; i < size; ++i) {
    h ^= uint64_t(words[i]) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  return size_t(h ^ (h >> 33));
}

SdpaEntry::~SdpaEntry() { Py_XDECREF(out_template); }

SdpaCache::SdpaCache() = default;
SdpaCache::~SdpaCache() = default;

SdpaCache& sdpa_cache() {
  static SdpaCache* cache = new SdpaCache();
  return *cache;
}

void SdpaCache::setup(PyObject* tensor_type, PyObject* strided, PyObject* is_grad_enabled, PyObject* empty_like,
                      Backend& backend) {
  for (PyObject* o : {tensor_type, strided, is_grad_enabled, empty_like}) Py_INCREF(o);
  for (PyObject* o : {tensor_type_, strided_, is_grad_enabled_, empty_like_}) Py_XDECREF(o);
  tensor_type_ = tensor_type;
  strided_ = strided;
  is_grad_enabled_ = is_grad_enabled;
  empty_like_ = empty_like;
  backend_ = &backend;
  attributes_ = std::make_unique<TensorAttributes>(tensor_type);
  clear();
}

size_t SdpaCache::served() const {
  return size_t(std::count_if(entries_.begin(), entries_.end(), [](const auto& e) { return e.second != nullptr; }));
}

void SdpaCache::clear() {
  entries_.clear();
  seen_.clear();
}

bool SdpaCache::read_tensor(PyObject* t, bool grad, SdpaKey& key, uintptr_t& data) const {
  if (Py_TYPE(t) != reinterpret_cast<PyTypeObject*>(tensor_type_)) return false;  // subclasses: the Python path
  const TensorAttributes& a = *attributes_;
  const bool plain = plain_instance(t);
  PyObject* value = a.is_cpu.get(t);
  if (!value) return false;
  bool ok = value == Py_True;
  Py_DECREF(value);
  if (!ok) return false;
  value = a.layout.get(t);
  if (!value) return false;
  ok = value == strided_;
  Py_DECREF(value);
  if (!ok) return false;
  if (grad) {  // a tensor requiring gradients in grad mode: autograd, the Python path
    value = a.requires_grad.get(t);
    if (!value) return false;
    ok = value == Py_False;
    Py_DECREF(value);
    if (!ok) return false;
  }
  value = a.dtype.get(t);
  if (!value) return false;
  ok = key.push(reinterpret_cast<intptr_t>(value));  // torch's dtypes are singletons, alive as long as torch
  Py_DECREF(value);
  if (!ok) return false;
  value = a.shape.get(t);
  ok = push_ints(value, key);
  Py_XDECREF(value);
  if (!ok) return false;
  value = a.stride.call(t, plain);
  ok = push_ints(value, key);
  Py_XDECREF(value);
  if (!ok) return false;
  value = a.data_ptr.call(t, plain);
  if (!value) return false;
  data = reinterpret_cast<uintptr_t>(PyLong_AsVoidPtr(value));
  Py_DECREF(value);
  return !PyErr_Occurred();
}

bool SdpaCache::read_key(PyObject* const* args, SdpaKey& key, SdpaData& data) const {
  if (!tensor_type_) return false;
  PyObject* const mask = args[3];
  // dropout_p: exactly 0 (dropout draws a seed per call: the Python path); dropout_seed: None.
  if (!((PyFloat_CheckExact(args[4]) && PyFloat_AS_DOUBLE(args[4]) == 0.0) ||
        (PyLong_CheckExact(args[4]) && PyLong_AsLongLong(args[4]) == 0)) ||
      args[8] != Py_None)
    return false;
  if (!push_bool(args[5], key) || !push_bool(args[7], key)) return false;  // is_causal, enable_gqa
  if (args[6] == Py_None ? !key.push(0) : !push_number(args[6], key)) return false;  // scale
  PyObject* grad_mode = PyObject_CallNoArgs(is_grad_enabled_);
  if (!grad_mode) return false;
  const bool grad = grad_mode == Py_True;
  Py_DECREF(grad_mode);
  if (!read_tensor(args[0], grad, key, data.q) || !read_tensor(args[1], grad, key, data.k) ||
      !read_tensor(args[2], grad, key, data.v))
    return false;
  if (mask == Py_None) return key.push(0);
  return key.push(1) && read_tensor(mask, grad, key, data.mask);
}

PyObject* SdpaCache::call(PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != kSdpaArguments) {
    PyErr_Format(PyExc_TypeError, "sdpa_cached takes %zd arguments (%zd given)", kSdpaArguments, nargs);
    return nullptr;
  }
  SdpaKey key;
  SdpaData data;
  if (!read_key(args, key, data)) {
    if (PyErr_Occurred()) PyErr_Clear();  // the Python path meets (and reports) what raised
    Py_RETURN_NONE;
  }
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (seen_.size() >= kMaxEntries) seen_.clear();
    if (seen_.insert(key.hash()).second) Py_RETURN_NONE;
    Py_RETURN_FALSE;
  }
  if (!it->second) Py_RETURN_NONE;
  return run(it->second, data);
}

PyObject* SdpaCache::run(const std::shared_ptr<const SdpaEntry>& shared, const SdpaData& data) {
  const std::shared_ptr<const SdpaEntry> entry = shared;  // alive through the run, whatever the cache does meanwhile
  const session::PreparedForward& call = entry->call;
  PyObject* out = PyObject_CallOneArg(empty_like_, entry->out_template);
  if (!out) return nullptr;
  PyObject* pointer = attributes_->data_ptr.call(out, true);  // a new tensor: no instance attributes
  if (!pointer) {
    Py_DECREF(out);
    return nullptr;
  }
  auto* out_data = static_cast<std::byte*>(PyLong_AsVoidPtr(pointer));
  Py_DECREF(pointer);
  if (PyErr_Occurred()) {
    Py_DECREF(out);
    return nullptr;
  }
  try {
    std::memset(out_data, 0, call.out_bytes);  // as the Python path's zeroed result before the kernel writes it
    std::vector<std::byte> lse(call.lse_bytes);  // the kernel's lse (zeroed, as on the Python path); not returned
    session::ForwardData buffers;
    buffers.q = reinterpret_cast<const std::byte*>(data.q);
    buffers.k = reinterpret_cast<const std::byte*>(data.k);
    buffers.v = reinterpret_cast<const std::byte*>(data.v);
    buffers.mask = reinterpret_cast<const std::byte*>(data.mask);
    buffers.out = {out_data, call.out_bytes};
    buffers.lse = {lse.data(), call.lse_bytes};
    GilReleased unlocked;
    session::run_prepared_forward(call, buffers, *backend_);
  } catch (...) {
    Py_DECREF(out);
    throw;  // sdpa_cached_function raises it in Python
  }
  return out;
}

void SdpaCache::store(const SdpaKey& key, std::shared_ptr<const SdpaEntry> entry) {
  if (entries_.size() >= kMaxEntries) entries_.clear();
  entries_.insert_or_assign(key, std::move(entry));
}

}  // namespace mfagen::python
