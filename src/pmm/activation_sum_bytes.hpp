#pragma once
// The bytes of the activation-sized sums (spmm_all_reduce, all_reduce_activation, the bf16 sums
// of a layer's input and gradient): the traffic --wire and --precision bf16 change, counted apart
// from the rest (the weights' gathers, the features', the parameter gradients) so that a run can
// say what its wire saved (EpochMetrics::activation_bytes). The count is what the communicators
// count (their stats' bytes), per thread: a rank, or a rank of an in-process group.
#include "plexus/comm.hpp"

namespace plexus {

// While it lives, the bytes `comm` counts are activation-sum bytes of this thread. Nested
// scopes count once (the outermost's).
class ActivationSumScope {
 public:
  explicit ActivationSumScope(const Communicator& comm);
  ~ActivationSumScope();
  ActivationSumScope(const ActivationSumScope&) = delete;
  ActivationSumScope& operator=(const ActivationSumScope&) = delete;

 private:
  const Communicator& comm_;
  double before_;
  bool outermost_;
};

// This thread's activation-sum bytes since the last call.
double take_activation_sum_bytes();

}  // namespace plexus
