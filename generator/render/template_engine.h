// A strict wrapper around mustache (kainjow): templates/ are MSL with
// {{value}} placeholders and {{#flag}}...{{/flag}} / {{^flag}}...{{/flag}}
// sections. Unlike plain mustache, a tag without a value is an error, not
// an empty string, and nothing is HTML-escaped. `{{> other.mustache}}` on a
// line of its own includes another template of templates/.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <variant>

namespace mfagen::render {

using TemplateValue = std::variant<std::string, bool>;
using TemplateValues = std::map<std::string, TemplateValue, std::less<>>;

// Renders templates/<name> (embedded in the binary). Throws std::logic_error
// for an unknown template or a tag without a value: bugs in mfagen, never in
// the user's input. Values the template does not use are ignored (one set of
// values serves the forward and backward templates).
std::string render_template(std::string_view name, const TemplateValues& values);
// The same for template text given directly; `label` names it in errors.
std::string render_template_text(std::string_view text, const TemplateValues& values, std::string_view label);

// A short identity of templates/<name>'s text: "<name without extension>-<8 hex>".
std::string template_version(std::string_view name);

}  // namespace mfagen::render
