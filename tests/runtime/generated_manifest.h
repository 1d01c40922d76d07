// Manifests for runtime tests, made by the generator from spec text exactly
// as `mfagen generate` makes them.
#pragma once

#include <filesystem>
#include <string>

namespace mfagen::test {

// manifest.json text for the kernels of `spec_json`.
std::string manifest_for(const std::string& spec_json);
// Writes the kernels and manifest.json of `spec_json` into `dir`; returns the manifest path.
std::filesystem::path generate_into(const std::string& spec_json, const std::filesystem::path& dir);

}  // namespace mfagen::test
