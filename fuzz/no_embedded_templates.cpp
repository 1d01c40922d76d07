// The fuzz build renders template text given directly
// (render_template_text); the templates embedded in the real build are not
// needed, so no name resolves here.
#include <stdexcept>
#include <string>

#include "render/embedded_templates.h"

namespace mfagen::render {

std::string_view embedded_template(std::string_view name) {
  throw std::logic_error("fuzz build: no embedded template " + std::string(name));
}

}  // namespace mfagen::render
