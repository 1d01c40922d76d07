// The call trace of mfagen/call_trace.h. Each thread counts into its own
// fixed-size table, so a traced call takes no lock and allocates nothing;
// the table is allocated and registered once per thread (one lock) and
// merged into the registry when the thread exits. Readers (call_statistics,
// the exit summary) take the registry lock, which keeps every registered
// table alive, and read only keys published with a release store; counts
// are relaxed atomics written by their thread only.
#include "mfagen/call_trace.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <tuple>

namespace mfagen {
namespace {

// ---- on/off --------------------------------------------------------------

// kUnknown until MFAGEN_TRACE was read or set_call_trace_enabled() called.
enum : uint8_t { kOff = 0, kOn = 1, kUnknown = 2 };
constinit std::atomic<uint8_t> g_state{kUnknown};

void print_exit_summary();

// MFAGEN_TRACE, read once. When it is on, the summary is printed at exit
// (not when only set_call_trace_enabled() turned the trace on: such apps
// read the statistics themselves).
bool environment_requests_trace() {
  static const bool requested = [] {
    const char* value = std::getenv("MFAGEN_TRACE");
    const bool on = value && *value && std::string_view(value) != "0";
    if (on) std::atexit(print_exit_summary);
    return on;
  }();
  return requested;
}

bool read_state_once() {
  uint8_t expected = kUnknown;  // set_call_trace_enabled() wins over the environment
  g_state.compare_exchange_strong(expected, environment_requests_trace() ? kOn : kOff, std::memory_order_relaxed);
  return g_state.load(std::memory_order_relaxed) == kOn;
}

// ---- keys ----------------------------------------------------------------

// Facts of a key packed into 32 bits.
struct Facts {
  static constexpr uint32_t kKind = 0, kDtype = 2, kCausal = 4, kMask = 6, kWindow = 8, kSoftcap = 9, kAlibi = 10,
                            kGqa = 11, kLse = 12, kMiss = 13, kReason = 14, kCutName = 18, kSinks = 19, kVarlen = 20, kPaged = 21,
                            kKvFormat = 22, kDropout = 24;
  static uint32_t bits(uint32_t value, uint32_t shift) { return value << shift; }
  static uint32_t field(uint32_t facts, uint32_t shift, uint32_t width) { return facts >> shift & ((1u << width) - 1); }
};

// One counted key, fixed size: copying names in (only when a key is new)
// keeps them valid after the Library or backend that owned them is gone.
struct Key {
  uint64_t seq_q = 0, seq_k = 0;
  uint32_t head_dim = 0, head_dim_v = 0;
  uint32_t facts = 0;
  uint8_t name_size = 0, backend_size = 0;
  std::array<char, kMaxTracedKernelName> name{};
  std::array<char, kMaxTracedBackendName> backend{};

  bool operator==(const Key& o) const {
    return seq_q == o.seq_q && seq_k == o.seq_k && head_dim == o.head_dim && head_dim_v == o.head_dim_v &&
           facts == o.facts && name_size == o.name_size && backend_size == o.backend_size &&
           std::memcmp(name.data(), o.name.data(), name_size) == 0 &&
           std::memcmp(backend.data(), o.backend.data(), backend_size) == 0;
  }
};

uint32_t pack_facts(KernelKind kind, ElementType dtype, CausalMode causal, MaskInput mask, bool window, bool softcap,
                    bool alibi, bool sinks, bool varlen, bool paged, KvFormat kv, bool dropout, bool gqa, bool lse) {
  using F = Facts;
  return F::bits(uint32_t(kind), F::kKind) | F::bits(uint32_t(dtype), F::kDtype) |
         F::bits(uint32_t(causal), F::kCausal) | F::bits(uint32_t(mask), F::kMask) | F::bits(window, F::kWindow) |
         F::bits(softcap, F::kSoftcap) | F::bits(alibi, F::kAlibi) | F::bits(sinks, F::kSinks) | F::bits(varlen, F::kVarlen) | F::bits(paged, F::kPaged) | F::bits(uint32_t(kv), F::kKvFormat) | F::bits(dropout, F::kDropout) |
         F::bits(gqa, F::kGqa) | F::bits(lse, F::kLse);
}

void set_shape(Key& key, uint32_t head_dim, uint32_t head_dim_v, const AttentionShape& shape) {
  key.seq_q = shape.seq_q;
  key.seq_k = shape.seq_k;
  key.head_dim = head_dim;
  key.head_dim_v = head_dim_v;
}

Key call_key(const KernelEntry& kernel, const AttentionShape& shape, std::string_view backend) {
  const ForwardKernelInfo& i = kernel.info;
  Key key;
  set_shape(key, i.head_dim, i.head_dim_v, shape);
  key.facts = pack_facts(kernel.kind, kernel.dtype, kernel.causal, i.mask, i.window, i.softcap, i.alibi, i.sinks, i.varlen, i.paged, i.kv_format, i.dropout,
                         shape.heads_q != shape.heads_kv, i.lse);
  key.name_size = uint8_t(std::min(kernel.name.size(), key.name.size()));
  std::memcpy(key.name.data(), kernel.name.data(), key.name_size);
  if (kernel.name.size() > key.name.size()) key.facts |= Facts::bits(1, Facts::kCutName);
  key.backend_size = uint8_t(std::min(backend.size(), key.backend.size()));
  std::memcpy(key.backend.data(), backend.data(), key.backend_size);
  return key;
}

Key miss_key(const AttentionQuery& q, MissReason reason) {
  Key key;
  set_shape(key, q.head_dim, q.head_dim_v, q.shape);
  key.facts = pack_facts(q.kind, q.dtype, q.causal, q.mask, q.window, q.softcap, q.alibi, q.sinks, q.varlen, q.paged, q.kv_format, q.dropout,
                         q.shape.heads_q != q.shape.heads_kv, q.need_lse) |
              Facts::bits(1, Facts::kMiss) | Facts::bits(uint32_t(reason), Facts::kReason);
  return key;
}

uint64_t hash(const Key& k) {
  // The first and last 8 bytes of the name tell apart kernels whose facts
  // agree (tile variants differ at the end) without hashing every byte.
  uint64_t head = 0, tail = 0;
  std::memcpy(&head, k.name.data(), std::min<size_t>(k.name_size, 8));
  if (k.name_size > 8) std::memcpy(&tail, k.name.data() + k.name_size - 8, 8);
  uint64_t h = 0;
  for (uint64_t word : {k.seq_q, k.seq_k, uint64_t(k.head_dim) << 32 | k.head_dim_v,
                        uint64_t(k.facts) << 16 | k.name_size << 8 | k.backend_size, head, tail})
    h = (h ^ word) * 0x9E3779B97F4A7C15ull;
  return h ^ h >> 29;
}

// ---- per-thread tables ----------------------------------------------------

// One thread's counts: keys in a dense array (published to readers by
// `published_`), found through an open-addressing index only this thread
// touches. About 60 KB, allocated once per tracing thread.
class ThreadTable {
 public:
  void count(const Key& key) noexcept {
    for (size_t i = hash(key) & (kIndexSlots - 1);; i = (i + 1) & (kIndexSlots - 1)) {
      const uint16_t entry = index_[i];
      if (entry == 0) {  // a new key
        const uint32_t n = published_.load(std::memory_order_relaxed);
        if (n == kMaxTracedKeysPerThread) return bump(untracked_);
        keys_[n] = key;
        calls_[n].store(1, std::memory_order_relaxed);
        index_[i] = uint16_t(n + 1);
        published_.store(n + 1, std::memory_order_release);
        return;
      }
      if (keys_[entry - 1] == key) return bump(calls_[entry - 1]);
    }
  }
  template <class F>
  void for_each_key(F&& f) const {  // any thread, under the registry lock
    const uint32_t n = published_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < n; ++i) f(keys_[i], calls_[i].load(std::memory_order_relaxed));
  }
  uint64_t untracked() const { return untracked_.load(std::memory_order_relaxed); }

  // reset_call_statistics() marks a table stale (under the registry lock);
  // readers skip stale tables, and the owning thread empties its table
  // under the lock at its next call: no thread writes another's keys.
  void mark_stale() { stale_.store(true, std::memory_order_relaxed); }
  bool stale() const { return stale_.load(std::memory_order_relaxed); }
  void clear() {  // the owning thread, under the registry lock
    index_.fill(0);
    published_.store(0, std::memory_order_relaxed);
    untracked_.store(0, std::memory_order_relaxed);
    stale_.store(false, std::memory_order_relaxed);
  }

 private:
  // More than twice the keys: probes stay short and always reach a free slot.
  static constexpr size_t kIndexSlots = 1024;
  static_assert(kMaxTracedKeysPerThread * 2 < kIndexSlots && kMaxTracedKeysPerThread < UINT16_MAX);

  // A plain load and store, not a read-modify-write: only this thread
  // writes the counter, so no locked instruction is needed.
  static void bump(std::atomic<uint64_t>& counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  std::array<uint16_t, kIndexSlots> index_{};  // key number + 1; 0: free. This thread only.
  std::array<Key, kMaxTracedKeysPerThread> keys_;
  std::array<std::atomic<uint64_t>, kMaxTracedKeysPerThread> calls_{};
  std::atomic<uint32_t> published_{0};  // keys_[0, published_) are complete
  std::atomic<uint64_t> untracked_{0};
  std::atomic<bool> stale_{false};
};

// ---- the registry ---------------------------------------------------------

CallCount to_count(const Key& key, uint64_t calls) {
  const uint32_t f = key.facts;
  CallCount c;
  c.kind = KernelKind(Facts::field(f, Facts::kKind, 2));
  c.dtype = ElementType(Facts::field(f, Facts::kDtype, 2));
  c.causal = CausalMode(Facts::field(f, Facts::kCausal, 2));
  c.mask = MaskInput(Facts::field(f, Facts::kMask, 2));
  c.window = Facts::field(f, Facts::kWindow, 1);
  c.softcap = Facts::field(f, Facts::kSoftcap, 1);
  c.alibi = Facts::field(f, Facts::kAlibi, 1);
  c.sinks = Facts::field(f, Facts::kSinks, 1);
  c.varlen = Facts::field(f, Facts::kVarlen, 1);
  c.paged = Facts::field(f, Facts::kPaged, 1);
  c.kv_format = KvFormat(Facts::field(f, Facts::kKvFormat, 2));
  c.dropout = Facts::field(f, Facts::kDropout, 1);
  c.gqa = Facts::field(f, Facts::kGqa, 1);
  c.lse = Facts::field(f, Facts::kLse, 1);
  c.miss = Facts::field(f, Facts::kMiss, 1);
  c.reason = MissReason(Facts::field(f, Facts::kReason, 4));
  c.head_dim = key.head_dim;
  c.head_dim_v = key.head_dim_v;
  c.seq_q = key.seq_q;
  c.seq_k = key.seq_k;
  c.kernel.assign(key.name.data(), key.name_size);
  if (Facts::field(f, Facts::kCutName, 1)) c.kernel += "...";
  c.backend.assign(key.backend.data(), key.backend_size);
  c.calls = calls;
  return c;
}

auto key_of(const CallCount& c) {
  return std::tie(c.miss, c.kernel, c.backend, c.reason, c.kind, c.dtype, c.head_dim, c.head_dim_v, c.seq_q, c.seq_k,
                  c.causal, c.mask, c.window, c.softcap, c.alibi, c.sinks, c.varlen, c.paged, c.kv_format, c.dropout, c.gqa, c.lse);
}

// Sums the counts of equal keys and drops keys without calls (after a reset).
void combine(std::vector<CallCount>& counts) {
  std::sort(counts.begin(), counts.end(), [](const CallCount& a, const CallCount& b) { return key_of(a) < key_of(b); });
  std::vector<CallCount> combined;
  for (CallCount& c : counts) {
    if (!combined.empty() && combined.back().same_key(c)) combined.back().calls += c.calls;
    else combined.push_back(std::move(c));
  }
  std::erase_if(combined, [](const CallCount& c) { return c.calls == 0; });
  counts = std::move(combined);
}

void append_counts(const ThreadTable& table, std::vector<CallCount>& out) {
  table.for_each_key([&](const Key& key, uint64_t calls) { out.push_back(to_count(key, calls)); });
}

struct Registry {
  std::mutex mutex;
  std::vector<ThreadTable*> live;   // tables of running threads
  std::vector<CallCount> finished;  // counts of exited threads, combined
  uint64_t finished_untracked = 0;
};

// Never destroyed: threads may exit, and count, after static destructors ran.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Calls with no table to count in: the thread's table was already merged
// (a thread_local destructor ran a kernel) or could not be allocated.
std::atomic<uint64_t> g_tableless_calls{0};
char g_gone_marker;
ThreadTable* const kNoTable = reinterpret_cast<ThreadTable*>(&g_gone_marker);

constinit thread_local ThreadTable* t_table = nullptr;  // trivial: no TLS guard on the hot path

// Registers this thread's table on construction; merges and frees it when the thread exits.
struct TableOwner {
  ThreadTable* table = new (std::nothrow) ThreadTable;
  TableOwner() {
    if (!table) return;
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.live.push_back(table);
  }
  ~TableOwner() {
    t_table = kNoTable;
    if (!table) return;
    Registry& r = registry();
    {
      std::lock_guard lock(r.mutex);
      if (!table->stale()) {
        append_counts(*table, r.finished);
        combine(r.finished);
        r.finished_untracked += table->untracked();
      }
      std::erase(r.live, table);
    }
    delete table;
  }
};

ThreadTable* this_thread_table() {
  ThreadTable* t = t_table;
  if (t == nullptr) [[unlikely]] {
    thread_local TableOwner owner;  // first traced call of this thread
    t = t_table = owner.table ? owner.table : kNoTable;
  }
  return t;
}

void count(const Key& key) noexcept {
  ThreadTable* t = this_thread_table();
  if (t == kNoTable) [[unlikely]] {
    g_tableless_calls.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (t->stale()) [[unlikely]] {  // the first call after a reset
    std::lock_guard lock(registry().mutex);
    t->clear();
  }
  t->count(key);
}

void print_exit_summary() {
  try {
    std::fputs(format_call_statistics(call_statistics()).c_str(), stderr);
  } catch (...) {
    std::fputs("mfagen call trace: the summary could not be made\n", stderr);
  }
}

}  // namespace

bool call_trace_enabled() noexcept {
  const uint8_t state = g_state.load(std::memory_order_relaxed);
  return state == kUnknown ? read_state_once() : state == kOn;
}

void set_call_trace_enabled(bool enabled) noexcept {
  environment_requests_trace();  // MFAGEN_TRACE still asks for the exit summary
  g_state.store(enabled ? kOn : kOff, std::memory_order_relaxed);
}

void trace_call(const KernelEntry& kernel, const AttentionShape& shape, std::string_view backend) noexcept {
  if (g_state.load(std::memory_order_relaxed) == kOff) [[likely]] return;
  if (!call_trace_enabled()) return;  // the first call reads MFAGEN_TRACE
  count(call_key(kernel, shape, backend));
}

void trace_miss(const AttentionQuery& query, MissReason reason) noexcept {
  if (g_state.load(std::memory_order_relaxed) == kOff) [[likely]] return;
  if (!call_trace_enabled()) return;
  count(miss_key(query, reason));
}

bool CallCount::same_key(const CallCount& other) const { return key_of(*this) == key_of(other); }

uint64_t CallStatistics::kernel_calls() const {
  uint64_t n = 0;
  for (const CallCount& c : counts) n += c.miss ? 0 : c.calls;
  return n;
}

uint64_t CallStatistics::misses() const {
  uint64_t n = 0;
  for (const CallCount& c : counts) n += c.miss ? c.calls : 0;
  return n;
}

CallStatistics call_statistics() {
  CallStatistics s;
  Registry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    s.counts = r.finished;
    s.untracked = r.finished_untracked;
    for (const ThreadTable* t : r.live) {
      if (t->stale()) continue;  // counts from before the last reset
      append_counts(*t, s.counts);
      s.untracked += t->untracked();
    }
  }
  s.untracked += g_tableless_calls.load(std::memory_order_relaxed);
  combine(s.counts);
  std::stable_sort(s.counts.begin(), s.counts.end(),
                   [](const CallCount& a, const CallCount& b) { return a.calls > b.calls; });
  return s;
}

void reset_call_statistics() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.finished.clear();
  r.finished_untracked = 0;
  for (ThreadTable* t : r.live) t->mark_stale();
  g_tableless_calls.store(0, std::memory_order_relaxed);
}

}  // namespace mfagen
