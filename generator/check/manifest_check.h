// Cross-check of extracted kernel signatures against manifest.json (written
// by `mfagen generate`, generator/emit/manifest.h): per manifest kernel whose
// "file" was checked, its entry points exist, its "buffers" are exactly the
// [[buffer(n)]] parameters of the file's kernels (index, name, type, access),
// its "function_constants" are the file's, and "threadgroup_memory_bytes" is
// the largest static threadgroup memory of the file's kernels. Every
// mismatch is a diagnostic (rule "manifest") naming both sides.
#pragma once

#include <string_view>
#include <vector>

#include "check/check.h"

namespace mfagen::check {

std::vector<Diagnostic> check_manifest(const std::vector<CheckResult>& results, std::string_view manifest_text,
                                       std::string_view manifest_name);

// The Check stage of `mfagen generate`: every rendered file checked (in
// parallel) and cross-checked against the manifest about to be written.
// The findings, one per line; empty when everything is clean.
std::string check_generated(const std::vector<SourceFile>& files, std::string_view manifest_text);

}  // namespace mfagen::check
