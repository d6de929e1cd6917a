// The activation sums' byte count (src/pmm/activation_sum_bytes.hpp).
#include "pmm/activation_sum_bytes.hpp"

namespace plexus {
namespace {
thread_local double counted = 0.0;
thread_local int depth = 0;
}  // namespace

ActivationSumScope::ActivationSumScope(const Communicator& comm)
    : comm_(comm), before_(comm.stats().bytes), outermost_(depth++ == 0) {}

ActivationSumScope::~ActivationSumScope() {
  --depth;
  if (outermost_) counted += comm_.stats().bytes - before_;
}

double take_activation_sum_bytes() {
  const double n = counted;
  counted = 0.0;
  return n;
}

}  // namespace plexus
