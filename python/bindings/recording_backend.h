// A backend that launches nothing and counts the runs it was given: with
// MFAGEN_BACKEND=record the Python package measures its own call path (the
// issue 34 overhead benchmark, examples/python/call_overhead.py) without the
// emulator's cost. Outputs stay zero: for benchmarks only.
#pragma once

#include <atomic>
#include <cstdint>

#include "mfagen/backend.h"

namespace mfagen::python {

class RecordingBackend final : public Backend {
 public:
  std::string_view name() const override { return "record"; }
  DeviceCapabilities capabilities() const override { return DeviceCapabilities::all(); }
  using Backend::run;
  RunStats run(const Library&, const KernelEntry&, const DispatchPlan&, const TensorMap&) override {
    runs_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  uint64_t runs() const { return runs_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> runs_{0};
};

}  // namespace mfagen::python
