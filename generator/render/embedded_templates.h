// The templates/ folder, compiled into the binary (embed_templates.cmake).
#pragma once

#include <string_view>

namespace mfagen::render {

// The text of templates/<name>, or an empty view if there is no such template.
std::string_view embedded_template(std::string_view name);

}  // namespace mfagen::render
