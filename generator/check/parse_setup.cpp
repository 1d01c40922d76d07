#include "check/parse_setup.h"

#include <fmt/format.h>

namespace mfagen::check {

std::string_view prelude_text() {
  return R"(// mfagen check prelude
// Metal has function pointers (MSL section 1.5.4); C++ for OpenCL needs this
// for them and for the references to functions that
// mfagen/msl/function_pointers.h makes of template parameters, as
// the cpu backend's lowering enables it.
#pragma OPENCL EXTENSION __cl_clang_function_pointers : enable
extern "C" {
void* malloc(unsigned long);
void* calloc(unsigned long, unsigned long);
void* realloc(void*, unsigned long);
void* aligned_alloc(unsigned long, unsigned long);
void free(void*);
}
void* operator new(unsigned long);
void* operator new[](unsigned long);
#define is_function_constant_defined(name) true
// Declared by Apple's compiler without an include (MLX's fence.metal names
// metal::thread_scope before its first #include), as the cpu backend's
// force-included abi.h declares it.
#include <mfagen_standin/memory_scope.h>
// A template kernel's threadgroup variable, lowered to a reference to its
// storage (lowering.cpp, lower_threadgroup_variables_of_template_kernel):
// declared only, the checker never runs code.
template <class __R> __R __mf_check_threadgroup_storage();
// The feature macros Apple's compiler predefines (__HAVE_SIMDGROUP_MATRIX__ & co).
#include <mfagen_standin/compiler_predefined.h>
)";
}

std::string_view standin_header_text() {
  // The prelude by its own path, so that its declarations are located where
  // the per-file parse's `-include` puts them.
  static const std::string text = fmt::format("#include \"{}\"\n#include <metal_stdlib>\n", kPreludePath);
  return text;
}

std::vector<std::string> language_flags(const std::filesystem::path& standin_dir) {
  return {"-x",
          "clcpp",
          "-cl-std=clc++2021",
          "-cl-no-stdinc",
          "-nostdinc",
          "-target",
          "x86_64-unknown-linux-gnu",
          "-Xclang",
          "-ffake-address-space-map",
          "-ferror-limit=0",
          "-fno-caret-diagnostics",
          "-isystem",
          standin_dir.string()};
}

bool starts_with_metal_stdlib_include(std::string_view text) {
  size_t i = 0;
  auto at = [&](std::string_view s) { return text.substr(i, s.size()) == s; };
  auto skip_blanks = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  };
  while (i < text.size()) {
    if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
      ++i;
    } else if (at("//")) {
      // A line comment ending in a backslash continues: leave such files to the slow path.
      size_t end = text.find('\n', i);
      if (end == std::string_view::npos) return false;
      if (end > i && text[end - 1] == '\\') return false;
      i = end + 1;
    } else if (at("/*")) {
      size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) return false;
      i = end + 2;
    } else {
      break;
    }
  }
  if (!at("#")) return false;
  ++i;
  skip_blanks();
  if (!at("include")) return false;
  i += 7;
  skip_blanks();
  if (!at("<metal_stdlib>")) return false;
  i += 14;
  skip_blanks();
  // Nothing else on the line but a line comment that ends on it.
  if (i == text.size() || text[i] == '\n' || text[i] == '\r') return true;
  if (!at("//")) return false;
  size_t end = text.find('\n', i);
  return end != std::string_view::npos && text[end - 1] != '\\';
}

}  // namespace mfagen::check
