// KernelProfiler (plexus/profiling.hpp): wall clock from a kernel's start to the end of a
// synchronize after it.
#include <stdexcept>

#include "plexus/profiling.hpp"

namespace plexus {

KernelProfiler::KernelProfiler(Backend& backend) : backend_(backend) {
  if (backend.observer()) throw std::logic_error("KernelProfiler: the backend is observed already");
  backend.set_observer(this);
}

KernelProfiler::~KernelProfiler() { backend_.set_observer(nullptr); }

// Calls are not nested (the backend hides its observer while a kernel runs), so one start suffices.
void KernelProfiler::begin(const char*) { start_ = std::chrono::steady_clock::now(); }

void KernelProfiler::end(const char* kernel) {
  backend_.synchronize();
  Entry& e = entries_[kernel];
  e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  ++e.calls;
}

}  // namespace plexus
