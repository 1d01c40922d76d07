// NumPy .npy files: the tensor format of `mfagen exec` and `mfagen run`.
// Reads format versions 1.0, 2.0 and 3.0; writes 1.0 (2.0 when the header
// needs it) byte for byte as NumPy's np.save does. Little-endian, C order only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mfagen::io {

// Any problem with a .npy file; the message names the file and what is wrong.
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The dtypes we read and write, in NumPy's canonical spelling:
// <f4 <f2 <f8 <i4 <u4 <i8 <u8 <i2 <u2 |i1 |u1 |b1.
bool is_supported_dtype(std::string_view dtype);
// Bytes per element of a supported dtype; throws std::invalid_argument otherwise.
size_t dtype_size(std::string_view dtype);
// NumPy's canonical spelling of a dtype descr as found in a header: "=f4" and
// "<f4" become "<f4", any byte order of a 1-byte type becomes "|". Returns ""
// for anything unsupported (big-endian, complex, structured, ...).
std::string canonical_dtype(std::string_view descr);

// Python's repr of a shape tuple, as NumPy users read it: (), (5,), (2, 3).
std::string shape_repr(const std::vector<uint64_t>& shape);

// The dtype whose elements are exactly the C++ type T.
template <class T>
constexpr std::string_view npy_dtype_for() {
  if constexpr (std::is_same_v<T, float>) return "<f4";
  else if constexpr (std::is_same_v<T, double>) return "<f8";
  else if constexpr (std::is_same_v<T, bool>) return "|b1";
  else if constexpr (std::is_same_v<T, int8_t>) return "|i1";
  else if constexpr (std::is_same_v<T, uint8_t>) return "|u1";
  else if constexpr (std::is_same_v<T, int16_t>) return "<i2";
  else if constexpr (std::is_same_v<T, uint16_t>) return "<u2";
  else if constexpr (std::is_same_v<T, int32_t>) return "<i4";
  else if constexpr (std::is_same_v<T, uint32_t>) return "<u4";
  else if constexpr (std::is_same_v<T, int64_t>) return "<i8";
  else if constexpr (std::is_same_v<T, uint64_t>) return "<u8";
  else static_assert(sizeof(T) == 0, "no .npy dtype for this type");
}

struct NpyArray {
  std::string dtype;             // canonical, see is_supported_dtype
  std::vector<uint64_t> shape;   // empty: a 0-d array (one element)
  std::vector<std::byte> data;   // element_count() * element_size() bytes, C order

  size_t element_size() const { return dtype_size(dtype); }
  uint64_t element_count() const;

  // A 1-d array holding a copy of `values`.
  template <class T>
  static NpyArray from(std::span<const T> values) { return from(values, {values.size()}); }
  // An array of `shape` ({} for 0-d) holding a copy of `values`.
  template <class T>
  static NpyArray from(std::span<const T> values, std::vector<uint64_t> shape);
  // The elements as T; throws NpyError if T does not match the dtype. (For
  // |b1 read `data` directly: std::vector<bool> has no contiguous storage.)
  template <class T>
  std::vector<T> values() const;
};

// Reads a whole .npy file. Throws NpyError naming the file and the problem
// (missing file, bad magic, header parse error, unsupported dtype or order,
// truncated or excess data).
NpyArray read_npy(const std::filesystem::path& path);
// Parses .npy bytes; `name` is used in error messages.
NpyArray parse_npy(std::span<const std::byte> bytes, std::string_view name);

// The .npy header (magic, version, length, dict, padding) NumPy writes for
// `array`, so that the data that follows starts 64-byte aligned.
std::string npy_header(const NpyArray& array);
// Writes `array` via a temporary file in the same directory, fsync and rename,
// so readers never see a partial file. Throws NpyError for an inconsistent
// array, std::system_error for I/O failures.
void write_npy_atomic(const std::filesystem::path& path, const NpyArray& array);

template <class T>
NpyArray NpyArray::from(std::span<const T> values, std::vector<uint64_t> shape) {
  NpyArray array;
  array.dtype = std::string(npy_dtype_for<T>());
  array.shape = std::move(shape);
  if (array.element_count() != values.size())
    throw NpyError("NpyArray::from: shape does not match the number of values");
  array.data.resize(values.size_bytes());
  if (!values.empty()) std::memcpy(array.data.data(), values.data(), values.size_bytes());
  return array;
}

template <class T>
std::vector<T> NpyArray::values() const {
  static_assert(!std::is_same_v<T, bool>, "read |b1 arrays through `data`");
  if (dtype != npy_dtype_for<T>())
    throw NpyError("array of dtype " + dtype + " read as " + std::string(npy_dtype_for<T>()));
  std::vector<T> out(data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), data.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace mfagen::io
