#pragma once
// Freed buffers kept for the next request of the same size. A training step allocates the same
// temporaries every step; handing them back to the system and asking again costs a page fault
// per 4 KiB page on every step (on a 2^20-node graph, 0.8 s of a 5.2 s CPU epoch).
//
// The bound: a backend keeps live + cached bytes at or below the largest live total it has
// ever had (the high water mark). On a request it cannot serve from the cache it first frees
// cached blocks until the new live total plus what stays cached fits under the mark. So the
// memory a rank holds is never more than the peak of its live tensors, which is what the memory
// plan predicts and what `--memory-per-rank` budgets: caching makes steps faster, never bigger.
#include <cstddef>
#include <unordered_map>
#include <vector>

namespace plexus::detail {

class BlockCache {
 public:
  // A cached block of exactly `bytes`, or nullptr.
  void* take(std::size_t bytes) {
    auto it = blocks_.find(bytes);
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= bytes;
    return p;
  }
  // Keeps `p` (of `bytes`) for a later take. False when even the bookkeeping cannot be
  // allocated: the caller frees `p` itself then.
  bool keep(void* p, std::size_t bytes) noexcept {
    try {
      blocks_[bytes].push_back(p);
    } catch (...) {
      return false;
    }
    cached_bytes_ += bytes;
    return true;
  }
  // Frees cached blocks, the largest first, until at most `max_cached` bytes stay cached.
  template <class Free>
  void trim_to(std::size_t max_cached, Free&& free_block) {
    while (cached_bytes_ > max_cached) {
      auto largest = blocks_.end();
      for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
        if (!it->second.empty() && (largest == blocks_.end() || it->first > largest->first)) largest = it;
      free_block(largest->second.back());
      largest->second.pop_back();
      cached_bytes_ -= largest->first;
      if (largest->second.empty()) blocks_.erase(largest);
    }
  }
  template <class Free>
  void clear(Free&& free_block) {
    trim_to(0, free_block);
  }
  std::size_t cached_bytes() const { return cached_bytes_; }

 private:
  std::unordered_map<std::size_t, std::vector<void*>> blocks_;
  std::size_t cached_bytes_ = 0;
};

}  // namespace plexus::detail
