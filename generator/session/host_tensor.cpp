#include "session/host_tensor.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "io/npy.h"
#include "session/call_error.h"
#include "session/tensor_encoding.h"

namespace mfagen::session {

const char* to_string(HostDType type) {
  switch (type) {
    case HostDType::float16: return "float16";
    case HostDType::bfloat16: return "bfloat16";
    case HostDType::float32: return "float32";
    case HostDType::float64: return "float64";
    case HostDType::boolean: return "bool";
    case HostDType::int32: return "int32";
    case HostDType::uint8: return "uint8";
  }
  return "?";
}

size_t element_bytes(HostDType type) {
  switch (type) {
    case HostDType::float16:
    case HostDType::bfloat16: return 2;
    case HostDType::float32:
    case HostDType::int32: return 4;
    case HostDType::float64: return 8;
    case HostDType::boolean:
    case HostDType::uint8: return 1;
  }
  return 1;
}

bool is_floating(HostDType type) {
  return type == HostDType::float16 || type == HostDType::bfloat16 || type == HostDType::float32 ||
         type == HostDType::float64;
}

HostDType host_dtype_of(spec::DType type) {
  switch (type) {
    case spec::DType::float16: return HostDType::float16;
    case spec::DType::bfloat16: return HostDType::bfloat16;
    case spec::DType::float32: return HostDType::float32;
  }
  return HostDType::float32;
}

std::vector<int64_t> contiguous_strides(const std::vector<uint64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    step *= int64_t(shape[d]);
  }
  return strides;
}

uint64_t HostTensor::elements() const {
  uint64_t n = 1;
  for (uint64_t extent : shape) n *= extent;
  return n;
}

std::vector<int64_t> HostTensor::element_strides() const { return strides.empty() ? contiguous_strides(shape) : strides; }

uint64_t HostTensor::span_bytes() const {
  const std::vector<int64_t> s = element_strides();
  uint64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 0;
    last += (shape[d] - 1) * uint64_t(s[d]);
  }
  return (last + 1) * element_bytes(dtype);
}

void HostTensor::check_layout() const {
  if (!strides.empty() && strides.size() != shape.size())
    throw CallError(fmt::format("{}: {} strides for a tensor of shape {}", name, strides.size(), io::shape_repr(shape)));
  for (size_t d = 0; d < strides.size(); ++d)
    if (strides[d] < 0)
      throw CallError(fmt::format("{}: stride {} of dimension {} is negative; expected strides >= 0", name, strides[d],
                                  d));
  if (!shape.empty() && shape.back() > 1 && element_strides().back() != 1)
    throw CallError(fmt::format("{}: the last dimension has stride {}; kernels read rows contiguously (stride 1)",
                                name, element_strides().back()));
  if (data == nullptr && elements() != 0) throw CallError(fmt::format("{}: no data", name));
}

double HostTensor::value_at(const std::vector<uint64_t>& index) const {
  const std::vector<int64_t> s = element_strides();
  uint64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * uint64_t(s[d]);
  const std::byte* p = data + offset * element_bytes(dtype);
  switch (dtype) {
    case HostDType::float16: {
      _Float16 h;
      std::memcpy(&h, p, 2);
      return double(h);
    }
    case HostDType::bfloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return double(std::bit_cast<float>(uint32_t(b) << 16));
    }
    case HostDType::float32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case HostDType::float64: {
      double x;
      std::memcpy(&x, p, 8);
      return x;
    }
    case HostDType::int32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case HostDType::boolean:
    case HostDType::uint8: return double(std::to_integer<uint8_t>(*p));
  }
  return 0;
}

std::vector<std::byte> encode_as(const HostTensor& tensor, spec::DType type) {
  std::vector<double> values;
  values.reserve(tensor.elements());
  if (tensor.elements() == 0) return {};
  std::vector<uint64_t> index(tensor.shape.size(), 0);
  for (;;) {
    values.push_back(round_to_element(type, tensor.value_at(index)));
    size_t d = index.size();
    while (d > 0 && ++index[d - 1] == tensor.shape[d - 1]) index[--d] = 0;
    if (d == 0) break;
  }
  return encode_elements(values, type);
}

}  // namespace mfagen::session
