// This machine in words, for the reports of `mfagen selftest` and
// `mfagen bench` that users paste into issues.
#pragma once

#include <string>

namespace mfagen::selftest {

// OS, release, architecture, CPU model and logical cores, e.g.
// "Linux 6.1.0-18-cloud-amd64 x86_64, AMD EPYC 7B13, 2 logical cores" or
// "Darwin 24.1.0 arm64, Apple M3 Max (Mac15,9), 16 logical cores".
std::string describe_machine();

// The chip as macOS names it ("Apple M3 Max"); empty on other systems.
std::string apple_chip_name();

}  // namespace mfagen::selftest
