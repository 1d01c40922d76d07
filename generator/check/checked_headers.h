// The checked file's own headers. Metal's compiler includes a header named
// in quotes from the including file's directory, then from its -I
// directories, and one named in angle brackets from the -I directories (MLX's
// kernels include "mlx/backend/metal/kernels/..." with -I at its root,
// llama.cpp's "ggml-common.h" next to the file). Such a header is part of the
// checked code: it is lowered as the checked file is (lowering.h), parsed in
// its place, and its findings name it. Only what the stand-in provides
// (<metal_stdlib>, ...) stays outside: it is checked by the stand-in's tests.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check/lowering.h"

namespace mfagen::check {

struct CheckedHeader {
  std::string original;  // the file as written
  LoweredMsl lowered;
};

// By absolute, lexically normal path: the path clang opens it at.
using CheckedHeaders = std::map<std::string, CheckedHeader>;

// The file Metal's compiler includes for `#include "header"` (quoted) or
// `#include <header>` from a file in `includer_dir` (empty: a file that is
// not on disk), or nullopt.
std::optional<std::filesystem::path> find_header(std::string_view header, bool quoted,
                                                 const std::filesystem::path& includer_dir,
                                                 const std::vector<std::filesystem::path>& include_dirs);

// The checked file lowered, with every header it reaches (directly or
// through other headers) found, read and lowered.
struct LoweredTree {
  LoweredMsl main;
  CheckedHeaders headers;
};
LoweredTree lower_with_headers(std::string_view source, const std::filesystem::path& main_dir,
                               const std::vector<std::filesystem::path>& include_dirs);

}  // namespace mfagen::check
