// format_call_statistics: the call trace as text (the MFAGEN_TRACE exit
// summary): a table of kernel calls, then one of queries that found no
// kernel, most calls first, columns aligned.
#include <algorithm>
#include <string>
#include <vector>

#include "mfagen/call_trace.h"

namespace mfagen {
namespace {

using Row = std::vector<std::string>;

// Columns padded to their widest cell; counts and sizes right-aligned.
std::string format_table(const std::vector<Row>& rows, const std::vector<bool>& right_aligned) {
  std::vector<size_t> width(rows.front().size(), 0);
  for (const Row& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string text;
  for (const Row& row : rows) {
    std::string line = "  ";
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string padding(width[i] - row[i].size(), ' ');
      line += (i ? "  " : "") + (right_aligned[i] ? padding + row[i] : row[i] + padding);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    text += line + "\n";
  }
  return text;
}

std::string features(const CallCount& c) {
  std::string f;
  auto add = [&](std::string_view word) { f.append(f.empty() ? "" : " ").append(word); };
  if (c.mask == MaskInput::boolean) add("mask:bool");
  if (c.mask == MaskInput::additive) add("mask:additive");
  if (c.window) add("window");
  if (c.softcap) add("softcap");
  if (c.alibi) add("alibi");
  if (c.sinks) add("sinks");
  if (c.varlen) add("varlen");
  if (c.paged) add("paged");
  if (c.kv_format != KvFormat::elements) add(std::string("kv:") + to_string(c.kv_format));
  if (c.dropout) add("dropout");
  if (c.gqa) add("gqa");
  if (c.lse) add("lse");
  return f.empty() ? "-" : f;
}

// The columns every row shares: what was called.
Row call_facts(const CallCount& c) {
  return {std::string(to_string(c.kind)), std::string(to_string(c.dtype)), std::to_string(c.head_dim),
          std::to_string(c.head_dim_v), std::to_string(c.seq_q), std::to_string(c.seq_k),
          std::string(to_string(c.causal)), features(c)};
}
const Row kFactsHeader = {"kind", "dtype", "D", "Dv", "Sq", "Sk", "causal", "features"};
const std::vector<bool> kFactsRightAligned = {false, false, true, true, true, true, false, false};

std::string table_of(const CallStatistics& s, bool misses) {
  std::vector<Row> rows;
  rows.push_back(misses ? Row{"calls", "reason"} : Row{"calls", "kernel", "backend"});
  std::vector<bool> right(rows.front().size(), false);
  right[0] = true;
  rows.front().insert(rows.front().end(), kFactsHeader.begin(), kFactsHeader.end());
  right.insert(right.end(), kFactsRightAligned.begin(), kFactsRightAligned.end());
  for (const CallCount& c : s.counts) {
    if (c.miss != misses) continue;
    Row row = misses ? Row{std::to_string(c.calls), std::string(to_string(c.reason))}
                     : Row{std::to_string(c.calls), c.kernel, c.backend};
    const Row facts = call_facts(c);
    row.insert(row.end(), facts.begin(), facts.end());
    rows.push_back(std::move(row));
  }
  return rows.size() > 1 ? format_table(rows, right) : "";
}

std::string count_of(uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

}  // namespace

std::string format_call_statistics(const CallStatistics& s) {
  std::string text = "mfagen call trace: " + count_of(s.kernel_calls(), "kernel call", "kernel calls") + ", " +
                     count_of(s.misses(), "query", "queries") + " without a kernel\n";
  if (const std::string calls = table_of(s, false); !calls.empty()) text += calls;
  if (const std::string misses = table_of(s, true); !misses.empty()) text += "queries without a kernel:\n" + misses;
  if (s.untracked)
    text += count_of(s.untracked, "more call", "more calls") + " not itemized: a thread's table was full (" +
            std::to_string(kMaxTracedKeysPerThread) + " keys per thread)\n";
  return text;
}

}  // namespace mfagen
