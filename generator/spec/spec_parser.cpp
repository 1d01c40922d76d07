#include "spec/spec_parser.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "spec/json_text.h"
#include "spec/json_values.h"
#include "spec/kernel_object.h"

namespace mfagen::spec {

namespace {

using detail::Json;
using detail::Where;

std::string place(const SpecOrigin& o) {
  return o.json_path.empty() ? o.file : o.file + ": " + o.json_path;
}

// Two kernels with one name would overwrite each other's .metal file and
// manifest entry. The error sits at the later one and names the earlier.
void check_unique_names(const std::vector<KernelSpec>& specs) {
  std::unordered_map<std::string_view, const KernelSpec*> seen;
  for (const KernelSpec& s : specs) {
    auto [it, inserted] = seen.emplace(s.name, &s);
    if (inserted) continue;
    const KernelSpec& first = *it->second;
    std::string message =
        first == s
            ? fmt::format("duplicate kernel \"{}\": the same kernel is already specified at {}",
                          s.name, place(first.origin))
            : fmt::format("duplicate kernel name \"{}\": already used by a different kernel at {}",
                          s.name, place(first.origin));
    throw SpecError(s.origin.file, s.origin.json_path, message);
  }
}

std::vector<KernelSpec> parse_root(const Json& root, const Where& top) {
  if (!root.is_object()) {
    top.fail_expected(R"(a JSON object (one kernel, or {"kernels": [...]}))", root);
  }
  if (!root.contains("kernels")) return detail::expand_kernel_object(root, top);

  static constexpr std::array<std::string_view, 2> kRootFields{"kernels", "comment"};
  detail::check_known_fields(root, top, kRootFields);
  if (root.contains("comment")) detail::read_string(root["comment"], top.field("comment"));
  const Json& kernels = root["kernels"];
  Where at = top.field("kernels");
  if (!kernels.is_array() || kernels.empty()) {
    at.fail_expected("a non-empty list of kernel objects", kernels);
  }
  std::vector<KernelSpec> out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::vector<KernelSpec> specs = detail::expand_kernel_object(kernels[i], at.element(i));
    out.insert(out.end(), std::make_move_iterator(specs.begin()),
               std::make_move_iterator(specs.end()));
  }
  return out;
}

std::string read_file(const std::filesystem::path& file) {
  auto fail = [&](int err) {
    throw SpecError(file.string(), "", fmt::format("cannot read the file: {}", std::strerror(err)));
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(file.c_str(), "rb"), &std::fclose);
  if (!f) fail(errno);
  std::string text;
  std::array<char, 65536> buffer;
  while (size_t n = std::fread(buffer.data(), 1, buffer.size(), f.get())) text.append(buffer.data(), n);
  if (std::ferror(f.get())) fail(errno);  // e.g. EISDIR: fopen accepts a directory
  return text;
}

}  // namespace

std::vector<KernelSpec> parse_spec_text(std::string_view json_text, const std::string& file_name) {
  std::vector<KernelSpec> specs =
      parse_root(detail::parse_json_text(json_text, file_name), Where{file_name, ""});
  check_unique_names(specs);
  return specs;
}

std::vector<KernelSpec> load_spec_file(const std::filesystem::path& file) {
  return parse_spec_text(read_file(file), file.string());
}

std::vector<KernelSpec> load_spec_files(const std::vector<std::filesystem::path>& files) {
  std::vector<KernelSpec> all;
  for (const auto& file : files) {
    // Spec sets overlap (two models with the same attention): a kernel that
    // an earlier file already specifies identically is the same kernel, kept
    // once. Within one file a repeat is still an error (parse_spec_text).
    std::vector<KernelSpec> specs = load_spec_file(file);
    for (KernelSpec& s : specs) {
      bool known = false;
      for (const KernelSpec& earlier : all) known = known || (earlier.origin.file != s.origin.file && earlier == s);
      if (!known) all.push_back(std::move(s));
    }
  }
  check_unique_names(all);
  return all;
}

}  // namespace mfagen::spec
