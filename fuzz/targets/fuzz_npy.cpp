// .npy tensors as `mfagen run` and `exec` read them (generator/io). A bad
// file is an NpyError naming it, decided before any allocation the header
// asks for.
#include <span>

#include "fuzz_support.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const mfagen::io::NpyArray array =
        mfagen::io::parse_npy(std::as_bytes(std::span(data, size)), "fuzz.npy");
    (void)mfagen::io::npy_header(array);
  } catch (const mfagen::io::NpyError& e) {
    mfagen::fuzz::expect_clear_error(e, "fuzz.npy");
  }
  return 0;
}
