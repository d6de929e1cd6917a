// Checked products of sizes, the memory available to this process and the check that refuses
// what would not fit in it (include/plexus/sizes.hpp).
#include "plexus/sizes.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <numeric>
#include <optional>
#include <string>

#include "plexus/error.hpp"

namespace plexus {

std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& where, const std::string& what) {
  std::int64_t out = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out))
    throw InputError(where, what + " (" + std::to_string(a) + " x " + std::to_string(b) + ") is too large");
  return out;
}

std::int64_t checked_product(std::initializer_list<std::int64_t> factors, const std::string& where,
                             const std::string& what) {
  std::int64_t out = 1;
  for (const std::int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(out, f, &out)) {
      std::string list;
      for (const std::int64_t g : factors) list += (list.empty() ? "" : " x ") + std::to_string(g);
      throw InputError(where, what + " (" + list + ") is too large");
    }
  }
  return out;
}

std::int64_t checked_lcm(std::int64_t a, std::int64_t b, const std::string& where, const std::string& what) {
  // a / gcd(a, b) * b cannot overflow in the division, only in the product.
  return checked_mul(a / std::gcd(a, b), b, where, what);
}

std::string human_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(static_cast<long long>(bytes)) + " B";
  int u = -1;
  while (bytes >= 1024 && u + 1 < static_cast<int>(std::size(kUnits))) {
    bytes /= 1024;
    ++u;
  }
  char s[48];
  std::snprintf(s, sizeof s, "%.2f %s", bytes, kUnits[u]);
  return s;
}

namespace {

// The first number of a file such as /sys/fs/cgroup/memory.max ("max" and unreadable: none).
std::optional<std::uint64_t> read_number(const char* path) {
  std::ifstream in(path);
  std::uint64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

// MemAvailable of /proc/meminfo, in bytes.
std::optional<std::uint64_t> mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

// The room left under this process's cgroup limit (v2, then v1), where one is set.
std::optional<std::uint64_t> cgroup_room() {
  struct Files {
    const char* limit;
    const char* usage;
  };
  for (const Files f : {Files{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                        Files{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const auto limit = read_number(f.limit);
    // v1 writes "no limit" as a huge page-rounded number.
    if (!limit || *limit >= (std::uint64_t{1} << 60)) continue;
    const std::uint64_t used = read_number(f.usage).value_or(0);
    return *limit > used ? *limit - used : 0;
  }
  return std::nullopt;
}

// A field of /proc/self/status in bytes ("VmSize:", "VmData:").
std::optional<std::uint64_t> self_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    std::uint64_t kib = 0;
    if (key == field && in >> kib) return kib * 1024;
    std::string rest;
    std::getline(in, rest);
  }
  return std::nullopt;
}

// The room left under this process's address-space and data-segment limits (ulimit -v, -d),
// where one is set: past it every allocation fails whatever the node has free.
std::optional<std::uint64_t> rlimit_room() {
  std::optional<std::uint64_t> room;
  const auto lower = [&](int resource, const char* field) {
    rlimit lim{};
    if (getrlimit(resource, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return;
    const std::uint64_t used = self_status_bytes(field).value_or(0);
    const std::uint64_t left = lim.rlim_cur > used ? lim.rlim_cur - used : 0;
    room = room ? std::min(*room, left) : left;
  };
  lower(RLIMIT_AS, "VmSize:");
  lower(RLIMIT_DATA, "VmData:");
  return room;
}

std::optional<MemoryBudget> g_budget;  // set once by the CLI, before any thread starts

}  // namespace

std::uint64_t available_memory_bytes(int processes_on_node) {
  // The node's memory and the cgroup's are shared by its processes; ulimits are per process.
  std::optional<std::uint64_t> least;
  for (const auto& bound : {mem_available(), cgroup_room()})
    if (bound) least = least ? std::min(*least, *bound) : *bound;
  if (least) *least /= static_cast<std::uint64_t>(std::max(1, processes_on_node));
  if (const auto room = rlimit_room()) least = least ? std::min(*least, *room) : *room;
  return least.value_or(0);
}

void set_memory_budget(MemoryBudget budget) { g_budget = budget; }

MemoryBudget memory_budget() {
  if (g_budget) return *g_budget;
  return {available_memory_bytes(), false};
}

bool fits_memory(double bytes) {
  const MemoryBudget b = memory_budget();
  return b.bytes == 0 || bytes <= static_cast<double>(b.bytes);
}

void require_memory(double bytes, const std::string& where, const std::string& what, const std::string& how) {
  if (fits_memory(bytes)) return;
  const MemoryBudget b = memory_budget();
  throw InputError(b.from_option ? "MemoryBudget.bytes" : where,
                   what + " needs " + human_bytes(bytes) + (how.empty() ? "" : " (" + how + ")") +
                       " and does not fit: " + human_bytes(static_cast<double>(b.bytes)) +
                       (b.from_option ? " per rank" : " available per rank"));
}

double graph_host_bytes(std::int64_t n, std::int64_t entries, std::int64_t features, bool weighted) {
  const double nodes = static_cast<double>(n), e = static_cast<double>(entries);
  return 8 * (nodes + 1) + e * (weighted ? 12 : 8) + 4 * nodes * static_cast<double>(features) + nodes * (4 + 3);
}

}  // namespace plexus
