// Spec files: JSON parsing, validation and list expansion
// (generator/spec). A bad spec is a SpecError naming the file.
#include "fuzz_support.h"
#include "spec/canonical.h"
#include "spec/kernel_spec.h"
#include "spec/spec_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    for (const mfagen::spec::KernelSpec& spec : mfagen::spec::parse_spec_text(mfagen::fuzz::as_text(data, size), "fuzz.json"))
      (void)mfagen::spec::canonical_json(spec);
  } catch (const mfagen::spec::SpecError& e) {
    mfagen::fuzz::expect_clear_error(e, "fuzz.json");
  }
  return 0;
}
