# Writes OUTPUT: a C++ file defining mfagen::render::embedded_template(name)
# with the text of every TEMPLATES file, so the mfagen binary works without
# the source tree. Run at build time (cmake -P) whenever a template changes.
set(body "")
foreach(path IN LISTS TEMPLATES)
  get_filename_component(name "${path}" NAME)
  file(READ "${path}" text)
  string(APPEND body "  if (name == \"${name}\") return R\"MFAGEN_TEMPLATE(${text})MFAGEN_TEMPLATE\";\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from templates/ by embed_templates.cmake; do not edit.
#include \"render/embedded_templates.h\"

namespace mfagen::render {

std::string_view embedded_template(std::string_view name) {
${body}  return {};
}

}  // namespace mfagen::render
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
