#include "render/template_engine.h"

#include <fmt/format.h>

#include <kainjow/mustache.hpp>
#include <map>
#include <mutex>
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

// Calls line(text, has_newline) for each line of `text`, without its '\n'.
template <class LineFunction>
void for_each_line(std::string_view text, LineFunction line) {
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    const bool has_newline = end != std::string_view::npos;
    if (!has_newline) end = text.size();
    line(std::string(text.substr(begin, end - begin)), has_newline);
    begin = end + 1;
  }
}

// Mustache's "standalone" rule: a line holding only a section or comment
// tag leaves no line behind. kainjow applies it to rendered sections only (a
// skipped section leaves a blank line), so mfagen applies it itself: such a
// line is marked before rendering and every line that renders to nothing but
// marks is removed afterwards.
constexpr char kStandaloneMark = '\x01';

std::string mark_standalone_tag_lines(std::string_view text) {
  static const std::regex standalone(R"([ \t]*(\{\{[#^/!][^}]*\}\})[ \t]*\r?)");
  std::string out;
  for_each_line(text, [&](const std::string& line, bool has_newline) {
    std::smatch m;
    out += std::regex_match(line, m, standalone) ? kStandaloneMark + m[1].str() : line;
    if (has_newline) out += '\n';
  });
  return out;
}

std::string drop_marked_lines(const std::string& rendered, std::string_view name) {
  std::string out;
  size_t begin = 0;
  while (begin < rendered.size()) {
    size_t end = rendered.find('\n', begin);
    end = end == std::string::npos ? rendered.size() : end + 1;
    std::string_view line(rendered.data() + begin, end - begin);
    const bool only_marks = line.find_first_not_of(std::string(1, kStandaloneMark) + "\r\n") == std::string_view::npos;
    if (line.find(kStandaloneMark) == std::string_view::npos)
      out += line;
    else if (!only_marks)
      throw std::logic_error(
          fmt::format("template {}: a section tag shares its line with text; put it on a line of its own", name));
    begin = end;
  }
  return out;
}

// Replaces each line `{{> other.mustache}}` with the text of that template
// (recursively), so templates share code and the checks below see it all.
std::string expand_partials(std::string_view text, int depth = 0) {
  static const std::regex partial(R"([ \t]*\{\{>\s*([A-Za-z0-9_.\-]+)\s*\}\}[ \t]*\r?)");
  if (depth > 8) throw std::logic_error("templates include each other too deeply");
  std::string out;
  for_each_line(text, [&](const std::string& line, bool has_newline) {
    std::smatch m;
    if (std::regex_match(line, m, partial)) {
      out += expand_partials(template_text(m[1].str()), depth + 1);
      if (!out.empty() && out.back() != '\n') out += '\n';
    } else {
      out += line + (has_newline ? "\n" : "");
    }
  });
  return out;
}

}  // namespace

namespace {

// A template ready to render: its standalone tag lines marked and the names
// its tags use.
struct PreparedTemplate {
  std::string marked;
  std::set<std::string, std::less<>> tags;
};

PreparedTemplate prepare(std::string_view text, std::string_view name) {
  if (text.find(kStandaloneMark) != std::string_view::npos)
    throw std::logic_error(fmt::format("template {}: contains the control character \\x01, which the engine reserves "
                                       "to mark standalone tag lines",
                                       name));
  return {mark_standalone_tag_lines(text), tag_names(text)};
}

std::string render_prepared(const PreparedTemplate& t, const TemplateValues& values, std::string_view name) {
  for (const std::string& tag : t.tags)
    if (!values.contains(tag)) throw std::logic_error(fmt::format("template {}: no value for {{{{{}}}}}", name, tag));
  kainjow::mustache::mustache engine{t.marked};
  if (!engine.is_valid()) throw std::logic_error(fmt::format("template {}: {}", name, engine.error_message()));
  engine.set_custom_escape([](const std::string& s) { return s; });
  kainjow::mustache::data data;
  for (const auto& [key, value] : values) {
    if (const bool* flag = std::get_if<bool>(&value))
      data.set(key, kainjow::mustache::data(*flag));
    else
      data.set(key, std::get<std::string>(value));
  }
  const std::string out = engine.render(data);
  if (!engine.is_valid()) throw std::logic_error(fmt::format("template {}: {}", name, engine.error_message()));
  return drop_marked_lines(out, name);
}

// Per embedded template, computed once: the templates are compiled in, and
// expanding, marking and hashing them per kernel was a large part of
// generating a thousand kernels.
struct EmbeddedTemplate {
  PreparedTemplate prepared;
  std::string version;
};

const EmbeddedTemplate& embedded(std::string_view name) {
  static std::mutex mutex;
  static std::map<std::string, EmbeddedTemplate, std::less<>> cache;  // node-based: references stay valid
  std::lock_guard lock(mutex);
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  const std::string text = expand_partials(template_text(name));
  // 64-bit FNV-1a of the text: changes whenever the template does.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  std::string_view stem = name.substr(0, name.find('.'));
  EmbeddedTemplate t{prepare(text, name), fmt::format("{}-{:08x}", stem, uint32_t(h >> 32))};
  return cache.emplace(std::string(name), std::move(t)).first->second;
}

}  // namespace

std::string render_template(std::string_view name, const TemplateValues& values) {
  return render_prepared(embedded(name).prepared, values, name);
}

std::string render_template_text(std::string_view text, const TemplateValues& values, std::string_view name) {
  return render_prepared(prepare(text, name), values, name);
}

std::string template_version(std::string_view name) { return embedded(name).version; }

}  // namespace mfagen::render
