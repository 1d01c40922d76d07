#include "profile/work_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace mfagen::profile {
namespace {

using nlohmann::json;

struct Reader {
  const std::string& file;

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw WorkJsonError(fmt::format("{}: {}: {}", file, path, what));
  }
  const json& member(const json& object, const std::string& path, const char* key) const {
    if (!object.is_object() || !object.contains(key)) fail(path + "." + key, "missing");
    return object.at(key);
  }
  double number(const json& object, const std::string& path, const char* key) const {
    const json& v = member(object, path, key);
    if (!v.is_number() || v.get<double>() < 0) fail(path + "." + key, "expected a number >= 0");
    return v.get<double>();
  }
  uint64_t whole(const json& object, const std::string& path, const char* key) const {
    const double v = number(object, path, key);
    if (v != static_cast<double>(static_cast<uint64_t>(v))) fail(path + "." + key, "expected a whole number");
    return static_cast<uint64_t>(v);
  }
  std::string text(const json& object, const std::string& path, const char* key) const {
    const json& v = member(object, path, key);
    if (!v.is_string()) fail(path + "." + key, "expected a string");
    return v.get<std::string>();
  }
  // {"op_name": count, ...}; unknown op names are errors (a newer file).
  OpCounts ops(const json& object, const std::string& path, const char* key) const {
    OpCounts counts{};
    const json& v = member(object, path, key);
    if (!v.is_object()) fail(path + "." + key, "expected an object of op counts");
    for (const auto& [name, count] : v.items()) {
      uint32_t op = 0;
      while (op < cpu::profile::kOpCount && cpu::profile::kOpNames[op] != name) ++op;
      if (op == cpu::profile::kOpCount) fail(path + "." + key + "." + name, "unknown op");
      if (!count.is_number() || count.get<double>() < 0) fail(path + "." + key + "." + name, "expected a count");
      counts[op] = count.get<double>();
    }
    return counts;
  }

  LaunchWork launch(const json& l, const std::string& path) const {
    LaunchWork w;
    w.kernel = text(l, path, "kernel");
    const json& grid = member(l, path, "grid");
    if (!grid.is_array() || grid.size() != 3) fail(path + ".grid", "expected [x, y, z]");
    for (int i = 0; i < 3; ++i) {
      if (!grid[i].is_number_unsigned()) fail(fmt::format("{}.grid[{}]", path, i), "expected a whole number");
      w.grid[i] = grid[i].get<uint32_t>();
    }
    w.threads_per_threadgroup = static_cast<uint32_t>(whole(l, path, "threads_per_threadgroup"));
    w.simdgroups_per_threadgroup = static_cast<uint32_t>(whole(l, path, "simdgroups_per_threadgroup"));
    w.threadgroup_memory_bytes = whole(l, path, "threadgroup_memory_bytes");
    w.registers_per_thread = static_cast<uint32_t>(whole(l, path, "registers_per_thread"));
    if (l.contains("mma_chains")) w.mma_chains = static_cast<uint32_t>(whole(l, path, "mma_chains"));
    w.threadgroups = whole(l, path, "threadgroups");
    w.threadgroups_run = whole(l, path, "threadgroups_run");
    w.sampling = text(l, path, "sampling");
    w.ops = ops(l, path, "ops");
    w.device_bytes_read = whole(l, path, "device_bytes_read");
    w.device_bytes_written = whole(l, path, "device_bytes_written");
    w.device_bytes_unique = whole(l, path, "device_bytes_unique");
    if (l.contains("device_bytes_read_past_l1"))
      w.device_bytes_read_past_l1 = whole(l, path, "device_bytes_read_past_l1");
    w.threadgroup_bytes_read = whole(l, path, "threadgroup_bytes_read");
    w.threadgroup_bytes_written = whole(l, path, "threadgroup_bytes_written");
    const json& buffers = member(l, path, "buffers");
    if (!buffers.is_array()) fail(path + ".buffers", "expected an array");
    for (size_t i = 0; i < buffers.size(); ++i) {
      const std::string at = fmt::format("{}.buffers[{}]", path, i);
      w.buffers.push_back({static_cast<uint32_t>(whole(buffers[i], at, "index")), whole(buffers[i], at, "size"),
                           whole(buffers[i], at, "bytes_read"), whole(buffers[i], at, "bytes_written")});
    }
    if (l.contains("executed_threadgroups")) {
      const json& executed = l.at("executed_threadgroups");
      if (!executed.is_array()) fail(path + ".executed_threadgroups", "expected an array");
      for (size_t i = 0; i < executed.size(); ++i) {
        const std::string at = fmt::format("{}.executed_threadgroups[{}]", path, i);
        ThreadgroupClass c;
        c.threadgroups = whole(executed[i], at, "represents");
        c.ops = ops(executed[i], at, "ops");
        c.max_simdgroup_ops = ops(executed[i], at, "busiest_simdgroup_ops");
        c.device_bytes = whole(executed[i], at, "device_bytes");
        c.threadgroup_bytes = whole(executed[i], at, "threadgroup_bytes");
        w.classes.push_back(c);
      }
    }
    return w;
  }
};

}  // namespace

std::vector<KernelWork> work_from_json(const std::string& text, const std::string& file_name) {
  const Reader r{file_name};
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw WorkJsonError(fmt::format("{}: not valid JSON: {}", file_name, e.what()));
  }
  const json& kernels = r.member(doc, "", "kernels");
  if (!kernels.is_array()) r.fail(".kernels", "expected an array");
  std::vector<KernelWork> work;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const std::string path = fmt::format(".kernels[{}]", k);
    KernelWork w;
    w.name = r.text(kernels[k], path, "name");
    w.origin = r.text(kernels[k], path, "origin");
    w.shape = r.text(kernels[k], path, "shape");
    w.useful_flops = r.number(kernels[k], path, "useful_flops");
    if (kernels[k].contains("io_model_bytes")) w.io_model_bytes = r.whole(kernels[k], path, "io_model_bytes");
    const json& launches = r.member(kernels[k], path, "launches");
    if (!launches.is_array() || launches.empty()) r.fail(path + ".launches", "expected a non-empty array");
    for (size_t i = 0; i < launches.size(); ++i)
      w.launches.push_back(r.launch(launches[i], fmt::format("{}.launches[{}]", path, i)));
    work.push_back(std::move(w));
  }
  return work;
}

}  // namespace mfagen::profile
