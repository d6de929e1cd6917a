// The census of a computation's host arrays (src/core/array_census.hpp).
#include "src/core/array_census.hpp"

#include <algorithm>

namespace plexus {

namespace {
thread_local ArrayCensus* current_census = nullptr;
}

void ArrayCensus::sample() {
  std::uint64_t live = 0;
  for (const Entry& e : entries_) live += e.bytes(e.array);
  peak_ = std::max(peak_, live);
}

CensusScope::CensusScope(ArrayCensus& census) : before_(current_census) { current_census = &census; }
CensusScope::~CensusScope() { current_census = before_; }

void sample_arrays() {
  if (current_census != nullptr) current_census->sample();
}

ArrayCensus* ArrayWatch::current() { return current_census; }

}  // namespace plexus
