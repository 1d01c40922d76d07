// Metal source as `mfagen check` and the cpu backend read it before clang
// does, through their shared token layer (runtime/msl_syntax): the checker's
// position-preserving lowering (which reports lexical findings and never
// throws; every lowered byte maps back, in order, and no line moves) and the
// cpu backend's token lowering (which refuses what it cannot lower with a
// CompileError).
#include <algorithm>

#include "fuzz_support.h"
#include "check/lowering.h"
#include "msl_lowering.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source = mfagen::fuzz::as_text(data, size);
  const mfagen::check::LoweredMsl checked = mfagen::check::lower_for_check(source);
  if (checked.origin.size() != checked.text.size() + 1) std::abort();  // every byte maps back
  if (!std::is_sorted(checked.origin.begin(), checked.origin.end()) || checked.origin.back() != source.size())
    std::abort();
  if (std::count(checked.text.begin(), checked.text.end(), '\n') != std::count(source.begin(), source.end(), '\n'))
    std::abort();  // lowered line n is original line n
  try {
    (void)mfagen::cpu::lower_msl(source, {});
  } catch (const mfagen::cpu::CompileError& e) {
    mfagen::fuzz::expect_clear_error(e, "");
  }
  return 0;
}
