#pragma once
// The host arrays a computation holds, counted while it runs: the measure of memory that a run
// and its dry run count alike, exactly (the distributed prepare: docs/dry-run.md, "The
// distributed prepare"). The code registers each large array it holds (an ArrayWatch over
// std::vectors: their capacity in bytes, read at every sample while the watch lives) and samples
// where its holdings peak (after an allocation, before a free); the census keeps the largest
// sample. It counts only while it is the calling thread's current census (CensusScope): without
// one, watches and samples do nothing, so the code registers at no cost on other paths.
//
// What it is not: every byte of the process. Small and short-lived vectors are not registered,
// and neither are what libraries hold (MPI's buffers, HDF5's caches); the peak RSS reported
// beside it says how far the process strays from it.
#include <cstdint>
#include <vector>

namespace plexus {

class ArrayCensus {
 public:
  // The largest sample so far, in bytes.
  std::uint64_t peak_bytes() const { return peak_; }

 private:
  friend class ArrayWatch;
  friend void sample_arrays();
  struct Entry {
    const void* array;
    std::uint64_t (*bytes)(const void*);
  };
  void sample();
  std::vector<Entry> entries_;
  std::uint64_t peak_ = 0;
};

// Makes `census` the calling thread's current one for the scope's life (restoring the one
// before: scopes nest).
class CensusScope {
 public:
  explicit CensusScope(ArrayCensus& census);
  ~CensusScope();
  CensusScope(const CensusScope&) = delete;
  CensusScope& operator=(const CensusScope&) = delete;

 private:
  ArrayCensus* before_;
};

// The current census samples its registered arrays (nothing without one).
void sample_arrays();

// Registers vectors with the thread's current census for the watch's life (watches end in the
// reverse order of their start, as scoped objects do), and samples once they are.
class ArrayWatch {
 public:
  template <class... T>
  explicit ArrayWatch(const std::vector<T>&... arrays) : census_(current()) {
    if (census_ == nullptr) return;
    first_ = census_->entries_.size();
    (census_->entries_.push_back({&arrays, &bytes_of<T>}), ...);
    census_->sample();
  }
  ~ArrayWatch() {
    if (census_ != nullptr) census_->entries_.resize(first_);
  }
  ArrayWatch(const ArrayWatch&) = delete;
  ArrayWatch& operator=(const ArrayWatch&) = delete;

 private:
  static ArrayCensus* current();
  template <class T>
  static std::uint64_t bytes_of(const void* v) {
    return static_cast<std::uint64_t>(static_cast<const std::vector<T>*>(v)->capacity()) * sizeof(T);
  }
  ArrayCensus* census_;
  std::size_t first_ = 0;
};

}  // namespace plexus
