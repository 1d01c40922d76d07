// The per-call fast path of mfagen.torch.scaled_dot_product_attention (issue
// 34: a cached variant's Python path costs a few one-element torch.add
// calls). A call is keyed by what decides its checks, its kernel and its
// plan: q, k, v and the mask's dtypes, shapes and strides (plain CPU tensors,
// strided layout), is_causal, scale and enable_gqa. The first two calls of
// a key take the Python path, which checks everything, raises every error
// and runs the call; the second then remembers the key with the call
// prepared (session::prepare_forward: selection, checks, dispatch plan).
// Later calls with the key allocate out, bind the tensors' data pointers and
// run, in one C++ call that reads the tensors through the Python C API (no
// torch C++ API). Nothing else decides the Python path's checks or kernel
// call, so a remembered key needs none of them again. Calls the key
// cannot decide are never served here: autograd (grad mode with a tensor
// requiring grad), dropout or a dropout_seed, tensor subclasses, other
// devices or layouts, flags of other types than PyTorch's (bool, float, int),
// and calls the Python path changes before the kernel (negated or copied
// inputs, as the prepared call's pointer check finds).
#pragma once

#include <Python.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "mfagen/backend.h"
#include "session/attention_call.h"

namespace mfagen::python {

// The key of a call: a few dozen words (dtypes as object identities).
struct SdpaKey {
  static constexpr size_t kWords = 80;
  std::array<int64_t, kWords> words;
  uint32_t size = 0;

  bool push(int64_t w) {
    if (size == kWords) return false;
    words[size++] = w;
    return true;
  }
  bool operator==(const SdpaKey& o) const;
  size_t hash() const;
};

struct SdpaKeyHash {
  size_t operator()(const SdpaKey& k) const { return k.hash(); }
};

// The data pointers of one call's tensors (mask: null without one).
struct SdpaData {
  uintptr_t q = 0, k = 0, v = 0, mask = 0;
};

// A remembered key's prepared call and how its output is allocated:
// torch.empty_like(out_template), a zero-stride expansion of one element to
// out's shape (C-contiguous; checked when remembered).
struct SdpaEntry {
  session::PreparedForward call;
  PyObject* out_template = nullptr;  // owned
  ~SdpaEntry();
};

struct TensorAttributes;  // how the cache reads torch.Tensor attributes (sdpa_cache.cpp)

class SdpaCache {
 public:
  SdpaCache();
  ~SdpaCache();
  SdpaCache(const SdpaCache&) = delete;
  SdpaCache& operator=(const SdpaCache&) = delete;

  // torch.Tensor, torch.strided, torch.is_grad_enabled and torch.empty_like
  // (mfagen.torch passes them at import; until then nothing is served), and
  // the backend calls run on. Forgets every key.
  void setup(PyObject* tensor_type, PyObject* strided, PyObject* is_grad_enabled, PyObject* empty_like,
             Backend& backend);

  // The call's key and data pointers from the 9 arguments (query, key,
  // value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
  // dropout_seed); false when the cache does not serve such calls. May
  // leave a Python error set (a tensor's attribute raised): the caller clears it.
  bool read_key(PyObject* const* args, SdpaKey& key, SdpaData& data) const;

  // mfagen._mfagen.sdpa_cached(*9 arguments): out (a new tensor) when the
  // key is remembered; None when the Python path serves the call; False when
  // it serves it and should remember the key afterwards (its second
  // occurrence: keys seen once, as a decode loop's growing Sk makes, are not
  // prepared). nullptr with a Python error set when the call fails.
  PyObject* call(PyObject* const* args, Py_ssize_t nargs);

  // Remembers `key`: its entry, or null for a key the Python path serves.
  void store(const SdpaKey& key, std::shared_ptr<const SdpaEntry> entry);

  size_t size() const { return entries_.size(); }
  size_t served() const;
  void clear();

 private:
  bool read_tensor(PyObject* t, bool grad, SdpaKey& key, uintptr_t& data) const;
  PyObject* run(const std::shared_ptr<const SdpaEntry>& entry, const SdpaData& data);

  static constexpr size_t kMaxEntries = 4096;  // then forgotten all at once (and relearned)
  PyObject* tensor_type_ = nullptr;
  PyObject* strided_ = nullptr;
  PyObject* is_grad_enabled_ = nullptr;
  PyObject* empty_like_ = nullptr;
  Backend* backend_ = nullptr;
  std::unique_ptr<TensorAttributes> attributes_;
  std::unordered_map<SdpaKey, std::shared_ptr<const SdpaEntry>, SdpaKeyHash> entries_;
  std::unordered_set<size_t> seen_;  // hashes of keys seen once
};

// The process's cache (never destroyed: entries hold Python objects).
SdpaCache& sdpa_cache();

// The module's sdpa_cached (METH_FASTCALL: no argument conversion layer), as
// the null-terminated table PyModule_AddFunctions takes.
PyMethodDef* sdpa_module_methods();

}  // namespace mfagen::python
