#include "selftest/machine_info.h"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <fstream>
#include <string_view>
#include <thread>

#ifdef __APPLE__
#include <sys/sysctl.h>
#endif

namespace mfagen::selftest {
namespace {

#ifdef __APPLE__
std::string sysctl_text(const char* name) {
  size_t size = 0;
  if (::sysctlbyname(name, nullptr, &size, nullptr, 0) != 0 || size == 0) return {};
  std::string value(size, '\0');
  if (::sysctlbyname(name, value.data(), &size, nullptr, 0) != 0) return {};
  value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
  return value;
}
#endif

// The CPU's model name: sysctl on macOS, /proc/cpuinfo on Linux.
std::string cpu_model() {
#ifdef __APPLE__
  std::string model = sysctl_text("machdep.cpu.brand_string");
  const std::string hardware = sysctl_text("hw.model");
  if (!hardware.empty()) model += fmt::format(" ({})", hardware);
  return model;
#else
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return {};
#endif
}

}  // namespace

std::string describe_machine() {
  std::string text;
  struct utsname u {};
  if (::uname(&u) == 0) text = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  const std::string cpu = cpu_model();
  if (!cpu.empty()) text += (text.empty() ? "" : ", ") + cpu;
  if (const unsigned cores = std::thread::hardware_concurrency())
    text += fmt::format("{}{} logical cores", text.empty() ? "" : ", ", cores);
  return text.empty() ? "unknown machine" : text;
}

std::string apple_chip_name() {
#ifdef __APPLE__
  return sysctl_text("machdep.cpu.brand_string");
#else
  return {};
#endif
}

}  // namespace mfagen::selftest
