#pragma once
// ZeroOptimizer: data parallelism over the grid's D axis, with ZeRO's stages of sharding, and
// AdamW — for a model whose parameters it owns as one flat space (docs/data-parallel.md).
//
// The flat space of a rank is the concatenation, in the model's order, of its tensor shards
// (Ψ floats: what one replica's rank at these X, Y, Z coordinates holds). The D ranks that hold
// the same shards each own one block of it, cut by flat index: block_range(Ψ, D, d). Tensors
// come in units (a transformer block; the embeddings, final LayerNorm and head), which are
// what ZeRO-3 gathers and frees together, and what the backward pass finishes one at a time.
//
//   stage  parameters        gradients                   Adam m, v     after backward / step
//   0      whole             whole                       whole         all-reduce / —
//   1      whole             whole                       own block     reduce-scatter / all-gather
//   2      whole             own block (+ one unit)      own block     reduce-scatter / all-gather
//   3      own block (+ the  own block (+ one unit)      own block     reduce-scatter / —
//          units in use)                                               (+ all-gather before each
//                                                                      unit's forward and backward)
//
// Gradients are reduced in buckets of at most `bucket_bytes` of one unit, started as soon as
// the backward pass has finished the unit (non-blocking collectives, progressed between units)
// and completed when the next unit finishes, or by finish_backward(): DDP's overlap, with one
// unit's reduction in flight at a time, so stages 2-3 hold the gradients of unit 0 (kept for
// the whole backward pass), of the block in backward and of the one whose reduction is in
// flight. With gradient accumulation stages 0 and 1 reduce after the last micro-batch only;
// stages 2 and 3 reduce every micro-batch (they keep no whole gradient to accumulate into).
//
// Precision BF16 (mixed precision, ZeRO's own layout): the parameters and gradients of the
// table are bfloat16 and every collective moves 16 bits; the optimizer keeps fp32 master
// weights besides Adam m and v (its 12 bytes per parameter of its range). The layers still
// compute in fp32: acquire() widens a unit's 16-bit values into an fp32 working copy (at every
// stage), backward writes fp32 gradients of the unit, and end_backward() rounds them to bf16
// before they are accumulated or reduced; the step updates the fp32 master and rounds it back.
#include <deque>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "optim/zero_observer.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/comm.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

// One parameter tensor shard of the model, as the optimizer sees it.
struct FlatTensor {
  std::size_t size = 0;
  int unit = 0;        // units are numbered 0..units-1; a unit's tensors are consecutive
  bool decay = false;  // AdamW weight decay applies
  bool owner = true;   // counts in the gradient norm (replicated tensors: one replica only)
  // Points the layer at its value and gradient (nullptr: not available now); empty: no layer
  // (a plan's replay of the optimizer alone, src/plan/zero_replay.hpp).
  std::function<void(float* value, float* grad)> bind;
};

struct ZeroOptions {
  int stage = 0;                          // 0..3
  std::size_t bucket_bytes = 25u << 20;   // largest collective of the gradient reduction
  Precision precision = Precision::FP32;  // of the parameters, gradients and their collectives
  // false: a model that only infers (generation): no gradient buffer, the layers bound to no
  // gradients; a backward pass or a step is refused.
  bool gradients = true;
};

// What the optimizer moved and hid: for the metrics.
struct ZeroStats {
  double reduce_seconds = 0;   // from starting the first gradient bucket to the last one done
  double exposed_seconds = 0;  // of that, the time the backward pass waited for it
};

class ZeroOptimizer {
 public:
  ZeroOptimizer(Backend& be, ProcessGrid& grid, std::vector<FlatTensor> tensors, ZeroOptions opt, AdamParams hp);
  ~ZeroOptimizer();

  std::size_t flat_size() const { return flat_; }              // Ψ
  std::size_t shard_size() const { return end_ - begin_; }     // this rank's block
  int units() const { return static_cast<int>(units_.size()); }

  // ---- the passes: the model calls these around each unit ------------------------------
  // A micro-batch begins (last: the last one before the optimizer step).
  void begin_micro_batch(bool last);
  // Stage 3: makes the unit's whole values available (gathering them, and starting the gather
  // of `prefetch` when >= 0); the other stages have them always. BF16: an fp32 working copy.
  void acquire(int unit, int prefetch = -1);
  // Stage 3 (BF16: every stage): frees the unit's gathered values (the working copy).
  void release(int unit);
  // Backward is about to produce the unit's gradients (stages 2-3 and BF16: a zeroed unit buffer).
  void begin_backward(int unit);
  // The unit's gradients are complete for this micro-batch: start reducing them.
  void end_backward(int unit);
  // Waits for every reduction of this micro-batch (call after the backward pass).
  void finish_backward();
  // A pass ended by an exception: waits for what is in flight, drops it, frees every gathered
  // unit and unit gradient, so the next pass starts clean.
  void abort_pass() noexcept;

  // ---- the step ----------------------------------------------------------------------------
  void zero_grads();
  // Σ g² over the whole model's reduced gradient (each element once), on every rank.
  double grad_squared_norm();
  void scale_grads(float s);
  // AdamW on this rank's block, then (stages 1-2) the updated values all-gathered.
  void step(float lr);
  std::int64_t steps() const { return hp_.step - 1; }
  // Makes a call that an observer saw again (a plan's replay of another replica's calls,
  // src/plan/zero_replay.hpp): the call's work with its arguments; set_moments with zeros.
  void replay(const ZeroCall& call);

  // ---- optimizer state, for checkpoints ----------------------------------------------------
  // The flat range whose Adam state this rank keeps ([0, Ψ) at stage 0, its block otherwise)
  // with, on the host, the fp32 values Adam updates there (BF16: the master copy), m and v
  // (zeros before the first step), and the steps taken. set_moments writes m, v and the step
  // count back; the values go in through the model (for_each_unit with store, which also fills
  // the BF16 master), so a resumed step is the step the uninterrupted run would take.
  struct RangeState {
    std::size_t begin = 0, end = 0;
    std::vector<float> value, m, v;
    std::int64_t steps = 0;
  };
  RangeState range_state();
  void set_moments(const std::vector<float>& m, const std::vector<float>& v, std::int64_t steps);
  std::size_t tensor_offset(std::size_t k) const { return offset_[k]; }
  // Every flat index where a tensor, a unit or a gradient bucket begins, and Ψ, in order: a
  // rank's block of Ψ enters this optimizer's work only through the sizes of its parts of the
  // segments between them (a plan's dry runs treat replicas whose parts are alike as one).
  std::vector<std::size_t> cuts() const;
  int stage() const { return opt_.stage; }

  // ---- whole values, for initialisation, loading and saving -------------------------------
  // Runs fn with every unit's values available (one unit at a time at stage 3); with `store`,
  // what fn wrote into them is kept.
  void for_each_unit(const std::function<void(int unit)>& fn, bool store);

  const ZeroStats& stats() const { return stats_; }
  void reset_stats() {
    stats_ = {};
    reduce_start_ = -1;
  }

 private:
  struct Unit {
    std::size_t begin = 0, end = 0;  // flat range
    int first_tensor = 0, end_tensor = 0;  // its tensors (consecutive)
    // While in use: stage 3 values and stage 2-3 gradients (BF16: the fp32 working copies).
    Buffer<float> values, grads;
    Buffer<bf16> gathered16, grads16;  // BF16: stage 3 gathered values, stage 2-3 rounded gradients
    std::unique_ptr<Communicator::Request> gather;  // stage 3: a gather in flight
  };
  struct Pending;  // a bucket's reduction in flight
  // Reports a call to the observer (zero_observer.hpp) as it begins and ends; calls made by
  // another call (for_each_unit's) are reported, those made inside a reported one are not.
  class Reported;

  bool half() const { return opt_.precision == Precision::BF16; }
  // Whether the layers see the units through acquire/release and begin/end_backward only.
  bool working_values() const { return half() || opt_.stage == 3; }
  bool working_grads() const { return half() || opt_.stage >= 2; }
  void bind_unit(int u);
  // Non-blocking collectives over D (T: float or bf16); nullptr when done already (one
  // replica: a device copy).
  // A collective's counts per D rank and their sum and largest value (counts()).
  struct Counts {
    const std::vector<std::size_t>& each;
    Communicator::CountsSum sum;
  };
  template <class T>
  std::unique_ptr<Communicator::Request> start_all_gather(const T* send, T* recv, const Counts& counts);
  template <class T>
  std::unique_ptr<Communicator::Request> start_reduce_scatter(const T* send, T* recv, const Counts& counts);
  std::unique_ptr<Communicator::Request> start_bucket(Unit& u, std::size_t c0, std::size_t c1, Pending& p);
  void round_unit_grads(Unit& u);  // BF16: the unit's fp32 gradient into 16 bits, then freed
  void store_unit(const Unit& u);  // for_each_unit: what was written into the unit's values is kept
  void start_gather(int u);
  void progress();
  void recycle(std::unique_ptr<Pending> p);  // a completed bucket's record, kept for the next
  void drain();  // waits for and completes every reduction in flight
  void complete(Pending& p);
  // Per D rank, of [b0, b1); valid until the next call (a collective's counts, read when started).
  Counts counts(std::size_t b0, std::size_t b1) const;
  std::pair<std::size_t, std::size_t> own(std::size_t b0, std::size_t b1) const;  // this rank's part of [b0, b1)
  std::pair<std::size_t, std::size_t> opt_piece(std::size_t k) const;  // tensor k's part Adam updates here
  // f(c0, c1) for each bucket [c0, c1) of the unit, in order.
  template <class F>
  void for_each_bucket(const Unit& u, F&& f) const;
  // This rank's reduced gradient and its parameter value of a flat index (in its block); the
  // 16-bit ones under BF16, and the fp32 master of the range Adam updates here.
  float* grad_at(std::size_t flat);
  float* value_at(std::size_t flat);
  bf16* grad16_at(std::size_t flat);
  bf16* value16_at(std::size_t flat);
  float* master_at(std::size_t flat) { return master_.data() + (flat - opt_begin_); }
  // The fp32 gradient of tensor k's optimizer piece [lo, hi) (BF16: widened into `tmp`, with the
  // deferred scale applied).
  const float* fp32_grad(std::size_t lo, std::size_t hi, Buffer<float>& tmp);

  Backend& be_;
  ProcessGrid& grid_;
  Communicator& dp_;
  std::vector<FlatTensor> tensors_;
  std::vector<std::size_t> offset_;  // flat offset of each tensor
  ZeroOptions opt_;
  AdamParams hp_;
  std::size_t flat_ = 0, begin_ = 0, end_ = 0;  // Ψ, and this rank's block [begin_, end_)
  std::size_t replicas_ = 1, base_ = 0, extra_ = 0;  // D, and block_range's cut of Ψ over it
  std::size_t block_start(std::size_t r) const;      // where replica r's block begins (r = D: Ψ)
  std::size_t last_block_from(std::size_t i) const;  // the last replica whose block begins at or before i
  bool binds_ = false;                          // some tensor has a layer to bind
  bool every_count_ = true;                     // dp_ reads every replica's count (else its own only)
  mutable std::vector<std::size_t> counts_;     // counts()'s, zero outside counts_set_
  mutable std::pair<std::size_t, std::size_t> counts_set_{0, 0};
  std::size_t opt_begin_ = 0, opt_end_ = 0;     // the range Adam updates here
  std::size_t bucket_ = 1;                      // floats per gradient bucket
  std::vector<Unit> units_;
  Buffer<float> values_, grads_;  // whole (stages 0-2 / 0-1) or this rank's block (FP32)
  Buffer<bf16> values16_, grads16_;  // the same, BF16
  Buffer<float> master_;           // BF16: fp32 master values of [opt_begin_, opt_end_)
  Buffer<float> m_, v_;            // Adam state of [opt_begin_, opt_end_), allocated by the first step
  float grad_scale_ = 1.0f;        // BF16: scale_grads() applied when the step widens the gradient
  std::deque<std::unique_ptr<Pending>> pending_;  // in start order; finished from the front
  // Completed records, reused: a step of a large model starts thousands of buckets (a plan's
  // dry runs, millions), and allocating each record was a tenth of a GPT-3 plan.
  std::vector<std::unique_ptr<Pending>> spare_;
  bool last_micro_ = true;
  ZeroObserver* observer_ = nullptr;  // ZeroObserverScope::current() when constructed
  int reporting_ = 0;                 // depth of reported calls in progress
  double reduce_start_ = -1;
  ZeroStats stats_;
};

}  // namespace plexus
