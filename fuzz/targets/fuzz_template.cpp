// The template engine (generator/render) on arbitrary template text: a
// template it cannot render is a std::logic_error naming the template.
#include <stdexcept>

#include "fuzz_support.h"
#include "render/template_engine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mfagen::render::TemplateValues values = {{"name", std::string("attn")}, {"gqa", true}, {"lse", false},
                                           {"head_dim", std::string("64")}};
  try {
    (void)mfagen::render::render_template_text(mfagen::fuzz::as_text(data, size), values, "fuzz.mustache");
  } catch (const std::logic_error& e) {
    mfagen::fuzz::expect_clear_error(e, "fuzz.mustache");
  }
  return 0;
}
