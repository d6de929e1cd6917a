#pragma once
// KernelProfiler: times every kernel call of a backend (as its KernelObserver, backend.hpp),
// waiting for the device after each call so that each time is that kernel's own (on a GPU this
// serialises the stream: totals are a breakdown, not the unprofiled run time). Memory calls
// (allocate, the copies) are timed too. `plexus train --profile` and `plexus gpt train
// --profile` print its table.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "plexus/backend.hpp"

namespace plexus {

class KernelProfiler final : public KernelObserver {
 public:
  struct Entry {
    double seconds = 0;
    std::uint64_t calls = 0;
  };
  // Observes `backend` until destroyed; the backend must outlive it and have no other observer
  // (std::logic_error otherwise).
  explicit KernelProfiler(Backend& backend);
  ~KernelProfiler() override;
  KernelProfiler(const KernelProfiler&) = delete;
  KernelProfiler& operator=(const KernelProfiler&) = delete;

  // Seconds and calls per kernel (method name, e.g. "attention_backward"; gemm by transposition,
  // "gemm_nn", "gemm_tn", ...; prepare_spmm as "spmm_prepare").
  const std::map<std::string, Entry>& entries() const { return entries_; }
  void clear() { entries_.clear(); }

  void begin(const char* kernel) override;
  void end(const char* kernel) override;

 private:
  Backend& backend_;
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, Entry> entries_;
};

}  // namespace plexus
