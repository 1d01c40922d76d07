// Spec files (DESIGN.md section 2) -> validated KernelSpec values.
//
// A file holds one kernel object, or {"kernels": [ ... ]} with a non-empty
// list of kernel objects; the root and every kernel object may carry a
// "comment" string, which is ignored. A field given as a list expands to the
// cartesian product over the fields in table order (kind, dtype, head_dim,
// head_dim_v, causal, gqa, mask, window, softcap, alibi, sinks, layout, kv_cache, kv_dtype, dropout, score_mod, mask_mod, lse, accumulate,
// tiles, target), the LAST field varying fastest; kernels come out in file
// order, each object's expansion in that order. Kernel names (given or
// derived) must be unique.
//
// Every problem is a SpecError naming the file, the full JSON path
// ("kernels[2].tiles.block_q") and what was expected and found.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "spec/kernel_spec.h"

namespace mfagen::spec {

// `file_name` is used in errors and origins only.
std::vector<KernelSpec> parse_spec_text(std::string_view json_text, const std::string& file_name);

// Reads and parses one file; an unreadable file is
// SpecError(file, "", "cannot read the file: <reason>").
std::vector<KernelSpec> load_spec_file(const std::filesystem::path& file);

// The kernels of all files, in order. A kernel specified identically by an
// earlier file is kept once (spec sets of different models overlap); a name
// used twice otherwise, in one file or across files, is an error naming both
// places.
std::vector<KernelSpec> load_spec_files(const std::vector<std::filesystem::path>& files);

}  // namespace mfagen::spec
