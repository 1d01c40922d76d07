#include "render/template_engine.h"

#include <fmt/format.h>

#include <kainjow/mustache.hpp>
#include <regex>
#include <set>
#include <stdexcept>

#include "render/embedded_templates.h"

namespace mfagen::render {
namespace {

std::string_view template_text(std::string_view name) {
  std::string_view text = embedded_template(name);
  if (text.empty()) throw std::logic_error(fmt::format("no template named {}", name));
  return text;
}

// Names used by value, section and inverted-section tags (not comments).
std::set<std::string, std::less<>> tag_names(std::string_view text) {
  static const std::regex tag(R"(\{\{\{?\s*([#^/&]?)\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}?\}\})");
  std::set<std::string, std::less<>> names;
  const std::string s(text);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), tag); it != std::sregex_iterator(); ++it)
    names.insert((*it)[2].str());
  return names;
}

// Mustache's "standalone" rule: a line holding only a section or comment
// tag leaves no line behind. kainjow applies it to rendered sections only,
// so a skipped section leaves a blank line; instead each such tag is moved to
// the end of the line before it (or the start of the first line), where it
// keeps its meaning and no line of its own exists.
std::string drop_standalone_tag_lines(std::string_view text) {
  static const std::regex standalone(R"([ \t]*(\{\{[#^/!][^}]*\}\})[ \t]*)");
  std::string out;
  std::string pending;  // tags seen before the first line of text
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    const bool has_newline = end != std::string_view::npos;
    if (!has_newline) end = text.size();
    const std::string line(text.substr(begin, end - begin));
    std::smatch m;
    if (has_newline && std::regex_match(line, m, standalone)) {
      if (out.empty()) {
        pending += m[1].str();
      } else {
        out.pop_back();  // the previous line's newline
        out += m[1].str() + "\n";
      }
    } else {
      out += pending + line + (has_newline ? "\n" : "");
      pending.clear();
    }
    begin = end + 1;
  }
  return out + pending;
}

}  // namespace

std::string render_template(std::string_view name, const TemplateValues& values) {
  const std::string_view text = template_text(name);
  const auto names = tag_names(text);
  for (const std::string& tag : names)
    if (!values.contains(tag)) throw std::logic_error(fmt::format("template {}: no value for {{{{{}}}}}", name, tag));
  for (const auto& [key, value] : values)
    if (!names.contains(key)) throw std::logic_error(fmt::format("template {} does not use the value {}", name, key));

  kainjow::mustache::mustache engine{drop_standalone_tag_lines(text)};
  if (!engine.is_valid()) throw std::logic_error(fmt::format("template {}: {}", name, engine.error_message()));
  engine.set_custom_escape([](const std::string& s) { return s; });
  kainjow::mustache::data data;
  for (const auto& [key, value] : values) {
    if (const bool* flag = std::get_if<bool>(&value))
      data.set(key, kainjow::mustache::data(*flag));
    else
      data.set(key, std::get<std::string>(value));
  }
  std::string out = engine.render(data);
  if (!engine.is_valid()) throw std::logic_error(fmt::format("template {}: {}", name, engine.error_message()));
  return out;
}

std::string template_version(std::string_view name) {
  // 64-bit FNV-1a of the text: changes whenever the template does.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : template_text(name)) h = (h ^ c) * 0x100000001b3ull;
  std::string_view stem = name.substr(0, name.find('.'));
  return fmt::format("{}-{:08x}", stem, uint32_t(h >> 32));
}

}  // namespace mfagen::render
