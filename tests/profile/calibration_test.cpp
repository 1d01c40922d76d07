// The calibration's error bands (generator/profile/calibration.h): parsed
// from a calibration file, per chip and regime, falling back to every chip's
// anchors, and the embedded file (tools/profile_peers --write-calibration)
// well formed.
#include "profile/calibration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace mfagen::profile {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kFile = R"({
  "provenance": "hand-written for the test",
  "anchors": [
    {"label": "a", "chip": "M3 Ultra", "regime": "compute", "published_seconds": 0.010, "predicted_seconds": 0.011},
    {"label": "b", "chip": "M3 Ultra", "regime": "compute", "published_seconds": 0.010, "predicted_seconds": 0.007},
    {"label": "c", "chip": "M3 Ultra", "regime": "compute", "published_seconds": 0.020, "predicted_seconds": 0.021},
    {"label": "d", "chip": "M4", "regime": "compute", "published_seconds": 0.010, "predicted_seconds": 0.015},
    {"label": "e", "chip": "M4 Max", "regime": "bandwidth", "published_seconds": 0.001, "predicted_seconds": 0.0009}
  ]
})";

TEST(Calibration, ParsesAnchorsWithSignedErrors) {
  std::string provenance;
  const std::vector<CalibrationAnchor> anchors = parse_calibration(kFile, &provenance);
  ASSERT_EQ(anchors.size(), 5u);
  EXPECT_EQ(provenance, "hand-written for the test");
  EXPECT_NEAR(anchors[0].error(), 0.10, 1e-12);
  EXPECT_NEAR(anchors[1].error(), -0.30, 1e-12);
  EXPECT_NEAR(anchors[4].error(), -0.10, 1e-12);
}

// On a chip with anchors: their median and worst absolute error (0.05, 0.10,
// 0.30 -> median 0.10, worst 0.30), by display name or file stem.
TEST(Calibration, BandOfTheChipsOwnAnchors) {
  const std::vector<CalibrationAnchor> anchors = parse_calibration(kFile);
  for (const char* chip : {"M3 Ultra", "m3_ultra"}) {
    const std::optional<ErrorBand> band = error_band(anchors, chip, "compute");
    ASSERT_TRUE(band) << chip;
    EXPECT_TRUE(band->this_chip);
    EXPECT_EQ(band->anchors, 3u);
    EXPECT_NEAR(band->median, 0.10, 1e-12);
    EXPECT_NEAR(band->worst, 0.30, 1e-12);
  }
}

// A chip without anchors of the regime takes every chip's: 0.05, 0.10, 0.30,
// 0.50 -> median 0.20, worst 0.50; a regime without any anchor has no band.
TEST(Calibration, FallsBackToEveryChipAndRegimesStaySeparate) {
  const std::vector<CalibrationAnchor> anchors = parse_calibration(kFile);
  const std::optional<ErrorBand> band = error_band(anchors, "M1 Max", "compute");
  ASSERT_TRUE(band);
  EXPECT_FALSE(band->this_chip);
  EXPECT_EQ(band->anchors, 4u);
  EXPECT_NEAR(band->median, 0.20, 1e-12);
  EXPECT_NEAR(band->worst, 0.50, 1e-12);
  const std::optional<ErrorBand> bw = error_band(anchors, "M4 Max", "bandwidth");
  ASSERT_TRUE(bw);
  EXPECT_TRUE(bw->this_chip);
  EXPECT_NEAR(bw->worst, 0.10, 1e-12);
  EXPECT_FALSE(error_band(std::vector<CalibrationAnchor>{}, "M4 Max", "bandwidth"));
  EXPECT_EQ(regime_of(Bound::device_memory), "bandwidth");
  EXPECT_EQ(regime_of(Bound::matrix), "compute");
  EXPECT_EQ(regime_of(Bound::latency), "compute");
}

TEST(Calibration, MalformedFilesNameThePath) {
  EXPECT_THROW(parse_calibration("{"), std::runtime_error);
  try {
    parse_calibration(R"({"provenance": "x", "anchors": [{"label": "a", "chip": "M4", "regime": "fast",
                          "published_seconds": 1, "predicted_seconds": 1}]})");
    FAIL() << "a regime other than compute or bandwidth is an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/anchors/0/regime"));
  }
  try {
    parse_calibration(R"({"provenance": "x", "anchors": [{"label": "a", "chip": "M4", "regime": "compute",
                          "published_seconds": 0, "predicted_seconds": 1}]})");
    FAIL() << "published seconds must be positive";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/anchors/0/published_seconds"));
  }
}

// The embedded calibration parses, and every prediction gets a band text that
// says it is a model.
TEST(Calibration, EmbeddedCalibrationAndBandText) {
  EXPECT_NO_THROW(calibration_anchors());
  EXPECT_FALSE(calibration_provenance().empty());
  for (const CalibrationAnchor& a : calibration_anchors()) {
    EXPECT_TRUE(a.regime == "compute" || a.regime == "bandwidth") << a.label;
    EXPECT_TRUE(std::isfinite(a.error())) << a.label;
  }
  EXPECT_THAT(band_text("M3 Max", Bound::matrix), HasSubstr("model; "));
  EXPECT_THAT(band_text("M3 Max", Bound::device_memory), HasSubstr("bandwidth"));
}

}  // namespace
}  // namespace mfagen::profile
