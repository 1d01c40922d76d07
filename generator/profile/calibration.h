// The cost model's calibration: how far its predictions fell from published,
// measured timings of peers' kernels (../shared/research/calibration-anchors.md),
// run unchanged through the model by tools/profile_peers --shapes calibration
// --write-calibration generator/profile/calibration.json. Every prediction
// and every ratio `mfagen profile`, `explain --profile`, `bench` and the HTML
// report print carries the band for its chip and regime (DESIGN.md section 14).
// The anchors are held out: no model constant is fitted to them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile/prediction.h"

namespace mfagen::profile {

// One anchor as last run: published against predicted on one chip.
struct CalibrationAnchor {
  std::string label;   // e.g. "mlx steel D72 bf16 L8192"
  std::string chip;    // display name of the chip table used, e.g. "M3 Ultra 60-core"
  std::string regime;  // "compute" or "bandwidth"
  double published_seconds = 0;
  double predicted_seconds = 0;
  double error() const { return predicted_seconds / published_seconds - 1; }  // signed
};

// Median and worst absolute error of the anchors of one regime.
struct ErrorBand {
  std::string regime;  // "compute" or "bandwidth"
  bool this_chip = false;  // true: anchors measured on the chip asked for; false: on every chip
  size_t anchors = 0;
  double median = 0, worst = 0;  // absolute relative errors
};

// "compute" for every bound but device memory, which is "bandwidth".
std::string_view regime_of(Bound bound);

// Anchors of the embedded calibration (empty if none was recorded).
const std::vector<CalibrationAnchor>& calibration_anchors();
// Where the recorded calibration came from (the command and the peers' commits).
const std::string& calibration_provenance();

// The band for a chip (display name or file stem) and regime: the anchors on
// that chip when it has at least one, else every chip's of that regime.
std::optional<ErrorBand> error_band(std::string_view chip, std::string_view regime);
// The same over the given anchors (tests, tools).
std::optional<ErrorBand> error_band(const std::vector<CalibrationAnchor>& anchors, std::string_view chip,
                                    std::string_view regime);

// "model; compute-bound anchors on this chip: median error 9%, worst 21%"
// (or "... on all chips ... (none on M1)", or "model; not calibrated").
std::string band_text(std::string_view chip, Bound bound);

// Parses a calibration file; throws std::runtime_error naming the JSON path.
std::vector<CalibrationAnchor> parse_calibration(std::string_view json_text, std::string* provenance = nullptr);

}  // namespace mfagen::profile
