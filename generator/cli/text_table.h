// Column-aligned plain text for the listing commands (generate, list,
// explain): every column padded to its widest cell, so output stays
// readable and easy to grep or cut.
#pragma once

#include <string>
#include <vector>

namespace mfagen::cli {

using TextRow = std::vector<std::string>;

// One line per row, each starting with `indent`; columns separated by two
// spaces, no trailing spaces. Rows may have different lengths.
std::string format_table(const std::vector<TextRow>& rows, const std::string& indent = "");

}  // namespace mfagen::cli
