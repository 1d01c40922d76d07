#include "device_tensor.h"

#include <cstring>

namespace mfagen::test {

// A device buffer holding a BHSD tensor at the kernel's strides, in the
// kernel's element encoding; `bytes` is exactly what the dispatch plan asks for.
std::vector<std::byte> device_tensor(const std::vector<double>& bhsd, uint64_t b, uint64_t h, uint64_t s, uint64_t d,
                                     const Strides3& st, reference::ElementType type, uint64_t bytes) {
  std::vector<std::byte> buf(bytes, std::byte{0});
  const uint64_t esize = type == reference::ElementType::float32 ? 4 : 2;
  for (uint64_t ib = 0; ib < b; ++ib)
    for (uint64_t ih = 0; ih < h; ++ih)
      for (uint64_t is = 0; is < s; ++is)
        for (uint64_t id = 0; id < d; ++id) {
          const float x = float(bhsd[((ib * h + ih) * s + is) * d + id]);
          const uint64_t at = (ib * st.batch + ih * st.head + is * st.row + id) * esize;
          if (type == reference::ElementType::float32) {
            std::memcpy(&buf[at], &x, 4);
          } else {
            const uint16_t bits = type == reference::ElementType::float16 ? reference::half_bits(x)
                                                                           : reference::bfloat_bits(x);
            std::memcpy(&buf[at], &bits, 2);
          }
        }
  return buf;
}

std::vector<float> read_tensor(const std::vector<std::byte>& buf, uint64_t b, uint64_t h, uint64_t s, uint64_t d,
                               const Strides3& st, reference::ElementType type) {
  std::vector<float> out(b * h * s * d);
  const uint64_t esize = type == reference::ElementType::float32 ? 4 : 2;
  for (uint64_t ib = 0; ib < b; ++ib)
    for (uint64_t ih = 0; ih < h; ++ih)
      for (uint64_t is = 0; is < s; ++is)
        for (uint64_t id = 0; id < d; ++id) {
          const uint64_t at = (ib * st.batch + ih * st.head + is * st.row + id) * esize;
          float x;
          if (type == reference::ElementType::float32) {
            std::memcpy(&x, &buf[at], 4);
          } else {
            uint16_t bits;
            std::memcpy(&bits, &buf[at], 2);
            x = type == reference::ElementType::float16 ? reference::half_from_bits(bits)
                                                        : reference::bfloat_from_bits(bits);
          }
          out[((ib * h + ih) * s + is) * d + id] = x;
        }
  return out;
}

}  // namespace mfagen::test
