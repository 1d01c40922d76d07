// Checks that what `mfagen exec` was given fits the kernel's signature, the
// way Metal's API validation would, so mistakes are reported by name before
// the launch instead of showing up as garbage or out-of-bounds findings.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/npy.h"
#include "mfagen/cpu/backend.h"

namespace mfagen::cli {

struct ExecBuffer {
  uint32_t index = 0;
  std::string file;  // as given on the command line
  io::NpyArray array;
};

// "`saxpy`, `scale`" or a note that there are none; for "no such entry" errors.
std::string describe_kernels(const cpu::Module& module);

// Every --buffer index is a [[buffer(n)]] of `kernel`, every buffer parameter
// is given, and each file's dtype and element count fit the parameter type.
void check_buffers(const cpu::Module& module, const cpu::KernelSignature& kernel,
                   const std::vector<ExecBuffer>& buffers);

// Every --threadgroup-bytes index is a [[threadgroup(n)]] of `kernel`, every
// threadgroup parameter gets a size, and sizes are multiples of 16 (Metal's
// rule for setThreadgroupMemoryLength).
void check_threadgroup_bytes(const cpu::KernelSignature& kernel, const std::map<uint32_t, uint64_t>& sizes);

// Every --constant index is a function constant of the module, given in its
// declared type.
void check_constants(const cpu::Module& module, const std::map<uint32_t, cpu::ConstantValue>& constants);

}  // namespace mfagen::cli
