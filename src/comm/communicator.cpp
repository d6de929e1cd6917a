// What every communicator shares (plexus/comm.hpp).
#include "plexus/comm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace plexus {

namespace {

// A request already complete holds nothing but is made for every collective of a dry run: a
// plan's GPT-3 dry runs make millions, thousands alive at a time (a step's ZeRO gathers), past
// what malloc's per-thread cache keeps. Their storage is kept on a free list of the thread that
// frees it, so making one costs a pop; the blocks go back to malloc when the thread ends.
struct DoneStorage {
  std::vector<void*> free;
  ~DoneStorage() {
    for (void* p : free) ::operator delete(p);
  }
};
thread_local DoneStorage done_storage;

struct Done final : Communicator::Request {
  void wait() override {}
  bool test() override { return true; }
  // (Done is final: every block asked for or given back is one Done.)
  static void* operator new(std::size_t n) {
    auto& free = done_storage.free;
    if (free.empty()) return ::operator new(n);
    void* p = free.back();
    free.pop_back();
    return p;
  }
  static void operator delete(void* p) noexcept {
    auto& free = done_storage.free;
    if (free.size() < kKept) {
      try {
        free.push_back(p);
        return;
      } catch (...) {  // no room for the entry: the block goes back to malloc
      }
    }
    ::operator delete(p);
  }
  static constexpr std::size_t kKept = 1 << 16;  // blocks kept per thread
};

}  // namespace

int wire_bits(Wire w) {
  switch (w) {
    case Wire::Fp32: return 32;
    case Wire::Bf16: return 16;
    case Wire::Int8: return 8;
    case Wire::Int4: return 4;
  }
  throw std::logic_error("wire_bits: not a Wire");
}

std::unique_ptr<Communicator::Request> Communicator::completed() { return std::make_unique<Done>(); }

void Communicator::check_counts_sum(const std::vector<std::size_t>& counts, CountsSum sum) {
  CountsSum own;
  for (const std::size_t c : counts) {
    own.total += c;
    own.max = std::max(own.max, c);
  }
  if (own.total != sum.total || own.max != sum.max)
    throw std::logic_error("Communicator: counts summing to " + std::to_string(own.total) + " (largest " +
                           std::to_string(own.max) + ") passed as " + std::to_string(sum.total) + " (largest " +
                           std::to_string(sum.max) + ")");
}

}  // namespace plexus
