#include "npy.h"

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <limits>

#include "atomic_file.h"
#include "npy_header.h"

namespace mfagen::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlign = 64;  // NumPy aligns the data to 64 bytes since 1.14

struct DtypeInfo {
  std::string_view name;
  size_t size;
};
constexpr std::array<DtypeInfo, 12> kDtypes{{{"<f4", 4}, {"<f2", 2}, {"<f8", 8}, {"<i4", 4},
                                              {"<u4", 4}, {"<i8", 8}, {"<u8", 8}, {"<i2", 2},
                                              {"<u2", 2}, {"|i1", 1}, {"|u1", 1}, {"|b1", 1}}};

const DtypeInfo* find_dtype(std::string_view dtype) {
  for (const DtypeInfo& info : kDtypes)
    if (info.name == dtype) return &info;
  return nullptr;
}

std::string supported_list() {
  std::string out;
  for (const DtypeInfo& info : kDtypes) out += fmt::format("{}{}", out.empty() ? "" : " ", info.name);
  return out;
}

// Element count with overflow detection (a corrupt header must not make us
// allocate a wrapped-around small buffer).
bool checked_count(const std::vector<uint64_t>& shape, size_t element_size, uint64_t& count, uint64_t& bytes) {
  count = 1;
  for (uint64_t dim : shape) {
    if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / dim) return false;
    count *= dim;
  }
  if (element_size != 0 && count > std::numeric_limits<uint64_t>::max() / element_size) return false;
  bytes = count * element_size;
  return true;
}

uint32_t read_le(std::span<const std::byte> bytes) {
  uint32_t value = 0;
  for (size_t i = bytes.size(); i-- > 0;) value = (value << 8) | uint32_t(bytes[i]);
  return value;
}

}  // namespace

std::string shape_repr(const std::vector<uint64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

bool is_supported_dtype(std::string_view dtype) { return find_dtype(dtype) != nullptr; }

size_t dtype_size(std::string_view dtype) {
  if (const DtypeInfo* info = find_dtype(dtype)) return info->size;
  throw std::invalid_argument(fmt::format("unsupported dtype '{}'", dtype));
}

std::string canonical_dtype(std::string_view descr) {
  if (descr.size() != 3) return "";
  char order = descr[0];
  std::string_view kind = descr.substr(1);
  if (kind == "i1" || kind == "u1" || kind == "b1") {
    // Byte order is meaningless for one byte; NumPy itself writes '|'.
    return (order == '|' || order == '<' || order == '>' || order == '=') ? fmt::format("|{}", kind) : "";
  }
  // '=' is native order; this code only runs on little-endian hosts.
  if (order != '<' && order != '=') return "";
  std::string canonical = fmt::format("<{}", kind);
  return is_supported_dtype(canonical) ? canonical : "";
}

uint64_t NpyArray::element_count() const {
  uint64_t count = 1;
  for (uint64_t dim : shape) count *= dim;
  return count;
}

NpyArray parse_npy(std::span<const std::byte> bytes, std::string_view name) {
  auto fail = [&](std::string_view what) -> NpyError { return NpyError(fmt::format("{}: {}", name, what)); };

  if (bytes.size() < kMagic.size() + 2 ||
      std::string_view(reinterpret_cast<const char*>(bytes.data()), kMagic.size()) != kMagic)
    throw fail("not a .npy file (bad magic: expected \\x93NUMPY)");
  unsigned major = unsigned(bytes[6]), minor = unsigned(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw fail(fmt::format("unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", major, minor));

  // 1.0 has a 2-byte header length; 2.0 and 3.0 (utf-8 header) have 4 bytes.
  size_t length_size = major == 1 ? 2 : 4;
  size_t prefix = kMagic.size() + 2 + length_size;
  if (bytes.size() < prefix) throw fail("truncated header");
  size_t header_len = read_le(bytes.subspan(kMagic.size() + 2, length_size));
  if (bytes.size() - prefix < header_len)
    throw fail(fmt::format("truncated header: it declares {} bytes, the file has {}", header_len,
                           bytes.size() - prefix));
  std::string_view header(reinterpret_cast<const char*>(bytes.data()) + prefix, header_len);

  NpyHeaderDict dict;
  try {
    dict = parse_npy_header_dict(header);
  } catch (const std::invalid_argument& e) {
    throw fail(e.what());
  }
  if (dict.fortran_order)
    throw fail("fortran_order is True; only C-order arrays are supported (save np.ascontiguousarray(a))");
  NpyArray array;
  array.dtype = canonical_dtype(dict.descr);
  if (array.dtype.empty()) {
    if (!dict.descr.empty() && dict.descr[0] == '>')
      throw fail(fmt::format("dtype '{}' is big-endian; save a.astype('<{}') instead", dict.descr,
                             dict.descr.substr(1)));
    throw fail(fmt::format("unsupported dtype '{}' (supported: {})", dict.descr, supported_list()));
  }
  array.shape = std::move(dict.shape);

  uint64_t count = 0, data_bytes = 0;
  if (!checked_count(array.shape, array.element_size(), count, data_bytes))
    throw fail(fmt::format("shape {} is too large", shape_repr(array.shape)));
  uint64_t available = bytes.size() - prefix - header_len;
  if (available < data_bytes)
    throw fail(fmt::format("truncated data: shape {} of {} needs {} bytes, the file has {}",
                           shape_repr(array.shape), array.dtype, data_bytes, available));
  if (available > data_bytes)
    throw fail(fmt::format("{} unexpected bytes after the data of shape {} of {}", available - data_bytes,
                           shape_repr(array.shape), array.dtype));
  auto data = bytes.subspan(prefix + header_len);
  array.data.assign(data.begin(), data.end());
  return array;
}

NpyArray read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    bool exists = std::filesystem::exists(path, ec);
    throw NpyError(fmt::format("{}: {}", path.string(), exists ? "cannot open the file" : "no such file"));
  }
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0) throw NpyError(fmt::format("{}: cannot read the file", path.string()));
  std::vector<std::byte> bytes(static_cast<size_t>(size));
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size))
    throw NpyError(fmt::format("{}: cannot read the file", path.string()));
  return parse_npy(bytes, path.string());
}

std::string npy_header(const NpyArray& array) {
  // Exactly NumPy's _write_array_header: sorted keys, repr values, spare
  // spaces so the first axis can grow in place, padding to 64 bytes, '\n'.
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", array.dtype,
                                 shape_repr(array.shape));
  constexpr size_t kGrowthAxisMaxDigits = 21;
  if (!array.shape.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(array.shape[0]).size(), ' ');

  for (unsigned major : {1u, 2u}) {
    size_t length_size = major == 1 ? 2 : 4;
    size_t header_len = dict.size() + 1;  // + '\n'
    size_t pad = kAlign - (kMagic.size() + 2 + length_size + header_len) % kAlign;
    header_len += pad;
    if (major == 1 && header_len > 0xffff) continue;  // needs format 2.0
    std::string out(kMagic);
    out += char(major);
    out += char(0);
    for (size_t i = 0; i < length_size; ++i) out += char((header_len >> (8 * i)) & 0xff);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  throw NpyError("npy header too large");  // unreachable: 2.0 holds 4 GiB
}

void write_npy_atomic(const std::filesystem::path& path, const NpyArray& array) {
  if (!is_supported_dtype(array.dtype))
    throw NpyError(fmt::format("{}: cannot write unsupported dtype '{}'", path.string(), array.dtype));
  uint64_t count = 0, data_bytes = 0;
  if (!checked_count(array.shape, array.element_size(), count, data_bytes) || data_bytes != array.data.size())
    throw NpyError(fmt::format("{}: array of shape {} and dtype {} has {} bytes of data, expected {}",
                               path.string(), shape_repr(array.shape), array.dtype, array.data.size(),
                               data_bytes));
  AtomicFileWriter writer(path);
  writer.write(npy_header(array));
  writer.write(array.data);
  writer.commit();
}

}  // namespace mfagen::io
