// Per-kind memory accounting of a Backend's Buffers, the memory budget (--memory-per-rank), and
// the default (unpinned) host staging memory.
#include <string>

#include "kernels/common/host_alloc.hpp"
#include "plexus/backend.hpp"
#include "plexus/error.hpp"
#include "plexus/sizes.hpp"

namespace plexus {

const char* memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::Parameters: return "param";
    case MemoryKind::Gradients: return "grad";
    case MemoryKind::Optimizer: return "optimizer";
    case MemoryKind::Activations: return "activation";
    case MemoryKind::Workspace: return "workspace";
    case MemoryKind::EdgeValues: return "edge";
    case MemoryKind::Pairs: return "pairs";
  }
  return "?";
}

void Backend::account_buffer(MemoryKind k, std::size_t bytes) {
  // live_bytes_ counts every allocation of the backend (Buffers and its own workspaces).
  if (limit_bytes_ && live_bytes_ + bytes > limit_bytes_)
    throw InputError("Backend::set_memory_limit(bytes)", human_bytes(bytes) + " of " + label_ + " (" + memory_kind_name(k) +
                                              ") does not fit: " + human_bytes(live_bytes_) + " of " +
                                              human_bytes(limit_bytes_) + " are in use");
  auto& live = kind_live_[static_cast<int>(k)];
  live += bytes;
  auto& peak = kind_peak_[static_cast<int>(k)];
  if (live > peak) peak = live;
}

// A host backend has nothing to pin: ordinary aligned host memory.
HostPinnedPtr Backend::do_allocate_host_pinned(std::size_t bytes) {
  if (bytes == 0) return HostPinnedPtr(nullptr, HostPinnedFree{detail::host_free});
  return HostPinnedPtr(detail::host_aligned_alloc(bytes), HostPinnedFree{detail::host_free});
}

}  // namespace plexus
