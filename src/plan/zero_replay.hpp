#pragma once
// A ZeRO replica's dry run assembled from its layout's: the layers' work recorded once, the
// optimizer's replayed (src/plan/gpt_plan.cpp).
//
// The D replicas of a rank's layout run the same layer code; they differ only in which block of
// the optimizer's flat space each owns, and so in what the optimizer allocates, moves and
// updates (and the ZeRO stages differ only in the optimizer too). A plan of 65,536 ranks meets
// hundreds of thousands of such (layout, block, stage) runs. Each is therefore not dry-run
// whole: the layout's first rank is, with a ZeroRecorder noting each optimizer call and what the
// layers did between the calls (FLOPs, bytes over each axis and their order, memory live and
// its peaks); another replica or stage then constructs only its ZeroOptimizer, replays the
// recorded calls on it, and the two records are merged in the order things happened. What the
// merge gives is exactly that rank's own dry run (the tests compare them rank by rank):
//   - tensor work and the X, Y and Z axes are the layers' alone (the replay checks that the
//     optimizer did none of it);
//   - the D axis's bytes are added call by call in the order of the whole run, so their
//     floating-point sum is the same to the last bit; ring steps and stream bytes are integers;
//   - the memory live at any moment is the layers' plus the optimizer's, which allocates and
//     frees only inside its calls: a peak between calls is the layers' peak there plus what the
//     optimizer then holds, a peak inside a call the layers' live bytes plus the call's peak.
#include <array>
#include <cstddef>
#include <vector>

#include "optim/zero.hpp"
#include "plan/dry_run.hpp"

namespace plexus {

// Bytes of a backend's memory: all of it [0], then each MemoryKind's [1 + k].
using Memory = std::array<std::size_t, 1 + kMemoryKinds>;

// One optimizer call as the optimizer alone would see it.
struct CallPiece {
  ZeroCall call;
  double stream_bytes = 0;             // memory-bound kernels' bytes
  long d_steps = 0;                    // ring steps over D
  std::size_t d_first = 0, d_end = 0;  // its D collectives' bytes: [d_first, d_end) of the run's log
  Memory live_end{}, peak{};           // the optimizer's bytes after the call, and at its peak inside
};

// An optimizer's calls in order, with the bytes of its D collectives in the order counted.
struct OptimizerRun {
  std::vector<CallPiece> calls;
  std::vector<double> d_bytes;
};

// What the layers did before call c of the layout's run (the last: after the last call).
struct LayerGap {
  Memory peak{};                       // the layers' own peak there
  Memory live{};                       // the layers' bytes at its end (while call c runs)
  std::size_t d_first = 0, d_end = 0;  // their D collectives of the step, in the layout's log
  bool call_counted = false;           // call c is part of the step
};

// The layout's first rank's dry run, recorded.
struct RunRecord {
  std::vector<LayerGap> gaps;  // one per call, and one after the last
  OptimizerRun own;            // its own optimizer's calls (their D bytes: the whole run's log)
  double layer_stream_bytes = 0;  // the layers' memory-bound bytes in the step
  long layer_d_steps = 0;         // and their ring steps over D
  // The optimizer's construction, for a replay: its tensors (sizes, units and flags; no binds).
  std::vector<FlatTensor> tensors;
  ZeroOptions options;
  AdamParams adam;
  RankCost cost;  // the run's own measure() of the step (its X, Y, Z, FLOPs and draws are the layers')
};

// Observes the optimizer of the dry run it is made for (installed on this thread while alive).
class ZeroRecorder final : public ZeroObserver {
 public:
  // `calls_only`: the optimizer is all the run holds (a replay): take_calls() after it.
  explicit ZeroRecorder(DryRun& run, bool calls_only = false);
  ~ZeroRecorder() override;
  ZeroRecorder(const ZeroRecorder&) = delete;
  ZeroRecorder& operator=(const ZeroRecorder&) = delete;

  // run.measure() with the mark it makes: the step's counts start (first call) or end (second).
  RankCost measure();
  RunRecord take();           // the whole run (after the second measure())
  OptimizerRun take_calls();  // a replay's calls (calls_only)

  void constructed(const std::vector<FlatTensor>& tensors, const ZeroOptions& options, const AdamParams& adam) override;
  void begin(const ZeroCall& call) override;
  void end(const ZeroCall& call) override;

 private:
  // The stretches of the run between two boundaries (a call's beginning or end, a measure): what
  // each is, and what happened in it (live_end and peak: the backend's, layers and optimizer).
  enum class Kind : std::uint8_t { Layers, Call, Measure };
  void close(Kind kind, const ZeroCall& call);  // the piece since the last boundary

  DryRun& run_;
  RecordingCommunicator& d_;  // the D axis's
  bool calls_only_;
  ZeroObserverScope scope_;
  std::vector<Kind> kinds_;
  std::vector<CallPiece> pieces_;
  std::vector<double> d_bytes_;
  RunRecord record_;
  bool constructed_ = false;
  // The last boundary's readings.
  double stream_ = 0;
  long d_steps_ = 0;
  std::size_t d_logged_ = 0;
};

// The optimizer of `rank` (on the grid `layout` was recorded on), with `options`, replaying the
// layout's calls on a fresh dry run: what each call did.
OptimizerRun replay_optimizer(const RunRecord& layout, const ZeroOptions& options, GridShape grid, int dp, int rank,
                              Transport transport);
// The cost of `rank` (a replica of the layout `layout` was recorded at, on the same grid): its
// optimizer, with `options` (the layout's, or another ZeRO stage's: the layers do not depend on
// it), replayed (replay_optimizer) and merged with the layout's layers.
RankCost replay_replica(const RunRecord& layout, const ZeroOptions& options, GridShape grid, int dp, int rank,
                        Transport transport);
// The merge itself: `layout`'s layers with an optimizer's calls (the layout's own, or a replay's).
RankCost merge_runs(const RunRecord& layout, const OptimizerRun& optimizer);

}  // namespace plexus
