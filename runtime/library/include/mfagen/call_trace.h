// The call trace (issue 20): which kernel serves which call. With
// MFAGEN_TRACE set (to anything but "" or "0") or set_call_trace_enabled(true),
// the runtime counts every call a backend runs or encodes per (kind, dtype,
// D, Dv, Sq, Sk, causal, features, kernel, backend), and every
// Library::find() that finds no kernel per the same facts of the query and
// the MissReason. With MFAGEN_TRACE on, the counts are printed to stderr at
// exit; call_statistics() returns them to apps that log their own way.
//
// Cost: off, trace_call/trace_miss return after one branch on a cached
// flag. On, each thread counts into its own fixed-size table (allocated and
// registered once per thread, under one lock); a call takes no lock and
// allocates nothing. A thread's table is merged into a global one when the
// thread exits; call_statistics() merges the live tables too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mfagen/library.h"

namespace mfagen {

// True when calls are counted: MFAGEN_TRACE (read once) unless
// set_call_trace_enabled() said otherwise.
bool call_trace_enabled() noexcept;
// Turns counting on or off from code (tests, apps with their own switch);
// takes precedence over MFAGEN_TRACE. The exit summary is printed only when
// MFAGEN_TRACE is on: apps that switch the trace on from code read
// call_statistics() themselves.
void set_call_trace_enabled(bool enabled) noexcept;

// Backends: counts one run or encode of `kernel` for a call of `shape`.
// `backend` is the backend's name ("cpu", "metal"); at most
// kMaxTracedBackendName bytes are kept.
void trace_call(const KernelEntry& kernel, const AttentionShape& shape, std::string_view backend) noexcept;
// Library::find: counts one query that found no kernel, and why.
void trace_miss(const AttentionQuery& query, MissReason reason) noexcept;

inline constexpr size_t kMaxTracedKernelName = 95;  // longer kernel names are cut (and marked "...")
inline constexpr size_t kMaxTracedBackendName = 15;
inline constexpr size_t kMaxTracedKeysPerThread = 384;  // later new keys count in CallStatistics::untracked

// The counts of one key. For a kernel call the facts are the kernel's
// (kind decode for a decode kernel, lse when it writes lse), gqa says
// heads_q != heads_kv; for a miss they are the query's (lse: the call needs it).
struct CallCount {
  KernelKind kind = KernelKind::forward;
  ElementType dtype = ElementType::float16;
  uint32_t head_dim = 0, head_dim_v = 0;
  uint64_t seq_q = 0, seq_k = 0;
  CausalMode causal = CausalMode::none;
  MaskInput mask = MaskInput::none;
  bool window = false, softcap = false, alibi = false, sinks = false, varlen = false, paged = false,
       gqa = false, lse = false;
  KvFormat kv_format = KvFormat::elements;
  bool dropout = false;
  std::string kernel;   // empty for a miss
  std::string backend;  // empty for a miss
  bool miss = false;
  MissReason reason = MissReason::dtype_or_head_dims;  // when miss
  uint64_t calls = 0;

  bool same_key(const CallCount& other) const;
};

struct CallStatistics {
  std::vector<CallCount> counts;  // most calls first; kernel calls and misses
  uint64_t untracked = 0;         // calls not itemized: their thread's table was full
  uint64_t kernel_calls() const;
  uint64_t misses() const;
};

// Every count so far: threads that exited and threads still running. Takes
// the registry lock and allocates; not for the hot path.
CallStatistics call_statistics();
// The text the exit summary prints: a table of kernel calls, then a table of
// misses with their reasons.
std::string format_call_statistics(const CallStatistics& statistics);
// Forgets every count and key (tests; apps measuring a phase). A call traced
// while it runs may be kept or forgotten. Each thread empties its own table
// at its next traced call (taking the registry lock once).
void reset_call_statistics();

}  // namespace mfagen
