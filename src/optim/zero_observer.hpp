#pragma once
// What a ZeroOptimizer tells an observer of its calls: each public call that works (allocates,
// computes, communicates or changes what a later call does) is reported as it begins and ends,
// with its arguments. A plan's dry runs (src/plan/zero_replay.hpp) record the calls of a model's
// step once per layout and replay them on the optimizer of each replica whose ZeRO block differs:
// the replicas of a layout run the same layer code, so only the optimizer's work is run again.
//
// An observer is picked up by the optimizers constructed on its thread while a
// ZeroObserverScope is alive (a plan runs its dry runs on several threads, each with its own),
// and must outlive them.
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"

namespace plexus {

struct FlatTensor;
struct ZeroOptions;

// One call of ZeroOptimizer's (its arguments: unit, a second int, a float, a step count).
struct ZeroCall {
  enum class Op : std::uint8_t {
    Construct,
    BeginMicroBatch,  // arg: last (0/1)
    Acquire,          // unit, arg: prefetch
    Release,          // unit
    BeginBackward,    // unit
    EndBackward,      // unit
    FinishBackward,
    AbortPass,
    ZeroGrads,
    GradNorm,
    ScaleGrads,  // value: the scale
    Step,        // value: the learning rate
    StoreUnit,   // unit (for_each_unit with store: what the model wrote is kept)
    RangeState,
    SetMoments,  // steps
  };
  Op op = Op::Construct;
  int unit = -1, arg = -1;
  float value = 0.0f;
  std::int64_t steps = 0;
  bool operator==(const ZeroCall&) const = default;
};

class ZeroObserver {
 public:
  virtual ~ZeroObserver() = default;
  // An optimizer is constructed from these (before it allocates anything).
  virtual void constructed(const std::vector<FlatTensor>& tensors, const ZeroOptions& options,
                           const AdamParams& adam) = 0;
  virtual void begin(const ZeroCall& call) = 0;
  virtual void end(const ZeroCall& call) = 0;
};

// While alive, optimizers constructed on this thread report to `observer` (scopes nest).
class ZeroObserverScope {
 public:
  explicit ZeroObserverScope(ZeroObserver* observer);
  ~ZeroObserverScope();
  ZeroObserverScope(const ZeroObserverScope&) = delete;
  ZeroObserverScope& operator=(const ZeroObserverScope&) = delete;
  static ZeroObserver* current();

 private:
  ZeroObserver* previous_;
};

}  // namespace plexus
