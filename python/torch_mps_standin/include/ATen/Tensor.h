// Stand-in of the few at::Tensor members the MPS bridge reads (PyTorch's
// ATen/core/TensorBody.h): its storage's data (on MPS, the storage's
// id<MTLBuffer>), storage offset, element size, sizes, strides, scalar type
// and whether it is on MPS. Values, not a tensor library: a Tensor here is
// what THPVariable_Unpack read from a Python tensor
// (torch/csrc/autograd/python_variable.h of this folder).
#pragma once

#include <cstdint>
#include <vector>

namespace c10 {

enum class ScalarType : int8_t { Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16, Undefined };
using IntArrayRef = const std::vector<int64_t>&;

class Storage {
 public:
  Storage() = default;
  explicit Storage(const void* data) : data_(data) {}
  // MPS storages hold their MTLBuffer here (PyTorch: __builtin_bit_cast(id<MTLBuffer>, storage.data())).
  const void* data() const { return data_; }

 private:
  const void* data_ = nullptr;
};

}  // namespace c10

namespace at {

using c10::ScalarType;
constexpr ScalarType kByte = ScalarType::Byte, kInt = ScalarType::Int, kHalf = ScalarType::Half,
                     kFloat = ScalarType::Float, kBool = ScalarType::Bool, kBFloat16 = ScalarType::BFloat16;

class Tensor {
 public:
  struct Fields {
    c10::Storage storage;
    int64_t storage_offset = 0, element_size = 0;
    std::vector<int64_t> sizes, strides;
    ScalarType scalar_type = ScalarType::Undefined;
    bool is_mps = false;
  };
  Tensor() = default;
  explicit Tensor(Fields fields) : f_(std::move(fields)) {}

  const c10::Storage& storage() const { return f_.storage; }
  int64_t storage_offset() const { return f_.storage_offset; }
  int64_t element_size() const { return f_.element_size; }
  c10::IntArrayRef sizes() const { return f_.sizes; }
  c10::IntArrayRef strides() const { return f_.strides; }
  int64_t dim() const { return int64_t(f_.sizes.size()); }
  ScalarType scalar_type() const { return f_.scalar_type; }
  bool is_mps() const { return f_.is_mps; }

 private:
  Fields f_;
};

}  // namespace at
