#pragma once
// Sizes are checked, not discovered by the kernel's OOM killer. Every product of sizes taken
// from options or file headers goes through checked_mul (an overflow is an InputError naming
// the option or file, never a wrapped value), and every command estimates what it will
// allocate from those sizes and calls require_memory before allocating: a need past the budget
// of this rank (--memory-per-rank, else the memory available to it) is refused with exit 2,
// naming the option or file and the bytes needed against the bytes available.
#include <cstdint>
#include <initializer_list>
#include <string>

namespace plexus {

// a·b for sizes (a, b >= 0), or InputError(where, "<what> (a x b) is too large") when the
// product does not fit in int64.
std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& where, const std::string& what);
// The product of all `factors` (each >= 0), checked as checked_mul.
std::int64_t checked_product(std::initializer_list<std::int64_t> factors, const std::string& where,
                             const std::string& what);
// The least common multiple of positive a and b, checked as checked_mul.
std::int64_t checked_lcm(std::int64_t a, std::int64_t b, const std::string& where, const std::string& what);

// "512 B", "3.50 KiB", "7.64 MiB", "2.00 GiB", "2.90 TiB" (binary units).
std::string human_bytes(double bytes);

// Bytes this process can still allocate: MemAvailable of /proc/meminfo, lowered to the room
// left under the cgroup's memory.max where one is set, shared evenly by `processes_on_node`;
// then lowered to the room under this process's own address-space and data limits (ulimit -v,
// -d) where those are set. 0 when none is known.
std::uint64_t available_memory_bytes(int processes_on_node = 1);

// The budget every size check of this process compares with.
struct MemoryBudget {
  std::uint64_t bytes = 0;   // 0: unknown (nothing is refused)
  bool from_option = false;  // --memory-per-rank, rather than the memory available
};
// Sets the budget of this process: --memory-per-rank when given (`from_option`), else the
// memory available divided by the ranks on the node (plexus train and gpt set it once, at the
// start, on every rank).
void set_memory_budget(MemoryBudget budget);
// The budget set, else all of available_memory_bytes() (a single-process command).
MemoryBudget memory_budget();

// True when `bytes` fit memory_budget() (always when it is unknown).
bool fits_memory(double bytes);
// Refuses a need of `bytes` past memory_budget(), naming `where` (the option or file that
// drives the need; "MemoryBudget.bytes" when that budget, set from an option, is the one exceeded):
//   "<where>: <what> needs 2.90 TiB (<how>) and does not fit: 11.2 GiB available per rank"
// `how` says where the estimate comes from (e.g. "1500000000 rows"); may be empty.
void require_memory(double bytes, const std::string& where, const std::string& what, const std::string& how = {});

// Host bytes of a graph of n nodes, `entries` stored edges and `features` columns as GraphData
// holds it (CSR with 8-byte ids, optional 4-byte values, float features, labels and masks).
double graph_host_bytes(std::int64_t n, std::int64_t entries, std::int64_t features, bool weighted);

}  // namespace plexus
