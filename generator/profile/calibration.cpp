#include "profile/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "profile/chip.h"

namespace mfagen::profile {

// Defined in the calibration_table.cpp that CMake generates from calibration.json.
std::string_view embedded_calibration();

namespace {

using nlohmann::json;

[[noreturn]] void fail(std::string_view path, std::string_view what) {
  throw std::runtime_error(fmt::format("calibration.json: {}: {}", path, what));
}

const json& member(const json& object, const std::string& path, const char* key) {
  if (!object.is_object() || !object.contains(key)) fail(path + "/" + key, "missing");
  return object.at(key);
}

// A chip given by display name or file stem, as find_chip accepts it; the
// band is keyed by display name.
std::string display_name(std::string_view chip) {
  try {
    return find_chip(chip).name;
  } catch (const std::invalid_argument&) {
    return std::string(chip);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string_view regime_of(Bound bound) { return bound == Bound::device_memory ? "bandwidth" : "compute"; }

std::vector<CalibrationAnchor> parse_calibration(std::string_view text, std::string* provenance) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    fail("", fmt::format("not valid JSON: {}", e.what()));
  }
  if (provenance) {
    const json& p = member(doc, "", "provenance");
    if (!p.is_string()) fail("/provenance", "expected a string");
    *provenance = p.get<std::string>();
  }
  const json& list = member(doc, "", "anchors");
  if (!list.is_array()) fail("/anchors", "expected an array");
  std::vector<CalibrationAnchor> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("/anchors/{}", i);
    CalibrationAnchor a;
    auto text_of = [&](const char* key) {
      const json& v = member(list[i], path, key);
      if (!v.is_string()) fail(path + "/" + key, "expected a string");
      return v.get<std::string>();
    };
    auto seconds_of = [&](const char* key) {
      const json& v = member(list[i], path, key);
      if (!v.is_number() || !(v.get<double>() > 0)) fail(path + "/" + key, "expected seconds > 0");
      return v.get<double>();
    };
    a.label = text_of("label");
    a.chip = text_of("chip");
    a.regime = text_of("regime");
    if (a.regime != "compute" && a.regime != "bandwidth") fail(path + "/regime", "expected compute or bandwidth");
    a.published_seconds = seconds_of("published_seconds");
    a.predicted_seconds = seconds_of("predicted_seconds");
    out.push_back(std::move(a));
  }
  return out;
}

namespace {

// The embedded file, parsed once.
struct EmbeddedCalibration {
  std::string provenance;
  std::vector<CalibrationAnchor> anchors;
};

const EmbeddedCalibration& embedded() {
  static const EmbeddedCalibration calibration = [] {
    EmbeddedCalibration c;
    c.anchors = parse_calibration(embedded_calibration(), &c.provenance);
    return c;
  }();
  return calibration;
}

}  // namespace

const std::vector<CalibrationAnchor>& calibration_anchors() { return embedded().anchors; }

const std::string& calibration_provenance() { return embedded().provenance; }

std::optional<ErrorBand> error_band(std::string_view chip, std::string_view regime) {
  return error_band(calibration_anchors(), chip, regime);
}

std::optional<ErrorBand> error_band(const std::vector<CalibrationAnchor>& anchors, std::string_view chip,
                                    std::string_view regime) {
  const std::string name = display_name(chip);
  std::vector<double> on_chip, everywhere;
  for (const CalibrationAnchor& a : anchors) {
    if (a.regime != regime) continue;
    everywhere.push_back(std::fabs(a.error()));
    if (a.chip == name) on_chip.push_back(std::fabs(a.error()));
  }
  const std::vector<double>& used = on_chip.empty() ? everywhere : on_chip;
  if (used.empty()) return std::nullopt;
  ErrorBand band;
  band.regime = std::string(regime);
  band.this_chip = !on_chip.empty();
  band.anchors = used.size();
  band.median = median(used);
  band.worst = *std::max_element(used.begin(), used.end());
  return band;
}

std::string band_text(std::string_view chip, Bound bound) {
  const std::string_view regime = regime_of(bound);
  const std::optional<ErrorBand> band = error_band(chip, regime);
  if (!band) return fmt::format("model; no {}-bound calibration anchors", regime);
  return fmt::format("model; {}-bound anchors on {}: median error {:.0f}%, worst {:.0f}% ({} anchor{})", regime,
                     band->this_chip ? "this chip" : "all chips", 100 * band->median, 100 * band->worst,
                     band->anchors, band->anchors == 1 ? "" : "s");
}

}  // namespace mfagen::profile
