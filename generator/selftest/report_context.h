// Who ran a selftest or bench, where and how: the header of the reports
// users paste into issues.
#pragma once

#include <string>

namespace mfagen::selftest {

struct ReportContext {
  std::string mfagen_version;  // "0.1.0"
  std::string machine;         // describe_machine()
  std::string backend;         // which backend, and whether its times are a GPU's or an emulation's
  std::string command;         // the command line, e.g. "mfagen selftest --quick"
};

}  // namespace mfagen::selftest
