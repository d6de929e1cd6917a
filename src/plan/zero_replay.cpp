// ZeroRecorder, the replay of a replica's optimizer and the merge (zero_replay.hpp).
#include "plan/zero_replay.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "comm/recording_communicator.hpp"

namespace plexus {

ZeroRecorder::ZeroRecorder(DryRun& run, bool calls_only)
    : run_(run), d_(recording_axis(run.grid(), Axis::D)), calls_only_(calls_only), scope_(this) {
  d_.log_bytes(&d_bytes_);
  kinds_.reserve(64);
  pieces_.reserve(64);
  d_bytes_.reserve(64);
}

ZeroRecorder::~ZeroRecorder() { d_.log_bytes(nullptr); }

void ZeroRecorder::close(Kind kind, const ZeroCall& call) {
  ShapeBackend& be = run_.shape_backend();
  kinds_.push_back(kind);
  CallPiece& c = pieces_.emplace_back();
  c.call = call;
  const double stream = be.counts().stream_bytes;
  const long d_steps = d_.ring_steps();
  c.stream_bytes = stream - stream_;
  c.d_steps = d_steps - d_steps_;
  c.d_first = d_logged_;
  c.d_end = d_bytes_.size();
  c.live_end[0] = be.live_bytes();
  c.peak[0] = be.peak_bytes();
  for (int k = 0; k < kMemoryKinds; ++k) {
    c.live_end[1 + static_cast<std::size_t>(k)] = be.live_bytes(MemoryKind(k));
    c.peak[1 + static_cast<std::size_t>(k)] = be.peak_bytes(MemoryKind(k));
  }
  stream_ = stream;
  d_steps_ = d_steps;
  d_logged_ = c.d_end;
  be.reset_peak();  // the next piece's peak starts from what is live now
}

RankCost ZeroRecorder::measure() {
  close(Kind::Layers, {});
  close(Kind::Measure, {});
  record_.cost = run_.measure();  // counts start anew (stream bytes, ring steps; not the D log)
  stream_ = 0;
  d_steps_ = 0;
  return record_.cost;
}

void ZeroRecorder::constructed(const std::vector<FlatTensor>& tensors, const ZeroOptions& options,
                               const AdamParams& adam) {
  if (constructed_) throw std::logic_error("ZeroRecorder: a second optimizer in one dry run");
  constructed_ = true;
  if (calls_only_) return;  // (a replay's are the layout's)
  record_.tensors.reserve(tensors.size());
  for (const FlatTensor& t : tensors) record_.tensors.push_back({t.size, t.unit, t.decay, t.owner, {}});
  record_.options = options;
  record_.adam = adam;
}

void ZeroRecorder::begin(const ZeroCall&) {
  // A replay runs nothing between calls: the last call's end is this one's beginning.
  if (!calls_only_) close(Kind::Layers, {});
}
void ZeroRecorder::end(const ZeroCall& call) { close(Kind::Call, call); }

OptimizerRun ZeroRecorder::take_calls() {
  d_.log_bytes(nullptr);
  if (!calls_only_) throw std::logic_error("ZeroRecorder::take_calls: a whole run's record is take()'s");
  OptimizerRun run;
  run.calls = std::move(pieces_);  // (a replay's pieces are all calls)
  run.d_bytes = std::move(d_bytes_);
  return run;
}

RunRecord ZeroRecorder::take() {
  // The pieces split into the layers' and the optimizer's: what the optimizer holds between its
  // calls is what its calls added, and the rest is the layers'. (Unsigned: every difference is
  // of a larger value less a part of it, never negative.)
  d_.log_bytes(nullptr);
  RunRecord r = std::move(record_);
  r.gaps.emplace_back();
  Memory before{};      // the backend's live bytes at the last boundary
  Memory opt{};         // the optimizer's
  bool counted = false;  // between the two measures: the step
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const CallPiece& c = pieces_[i];
    LayerGap& gap = r.gaps.back();
    switch (kinds_[i]) {
      case Kind::Measure:
        counted = !counted;
        break;
      case Kind::Layers:
        for (std::size_t k = 0; k < opt.size(); ++k) {
          gap.peak[k] = std::max(gap.peak[k], c.peak[k] - opt[k]);
          gap.live[k] = c.live_end[k] - opt[k];
        }
        if (counted) {
          r.layer_stream_bytes += c.stream_bytes;
          r.layer_d_steps += c.d_steps;
          if (c.d_end > c.d_first) {  // (the step's D collectives of a gap are consecutive)
            if (gap.d_end == gap.d_first) gap.d_first = c.d_first;
            gap.d_end = c.d_end;
          }
        }
        break;
      case Kind::Call: {
        gap.call_counted = counted;
        CallPiece own = c;
        for (std::size_t k = 0; k < opt.size(); ++k) {
          own.peak[k] = c.peak[k] - gap.live[k];  // the layers' bytes do not change inside a call
          opt[k] += c.live_end[k] - before[k];
          own.live_end[k] = opt[k];
        }
        r.own.calls.push_back(own);
        const Memory layers = gap.live;  // (the next gap begins with the layers' bytes as they are)
        r.gaps.emplace_back().live = layers;
        break;
      }
    }
    before = c.live_end;
  }
  r.own.d_bytes = std::move(d_bytes_);
  return r;
}

RankCost merge_runs(const RunRecord& layout, const OptimizerRun& optimizer) {
  if (optimizer.calls.size() + 1 != layout.gaps.size())
    throw std::logic_error("merge_runs: " + std::to_string(optimizer.calls.size()) + " optimizer calls for " +
                           std::to_string(layout.gaps.size() - 1) + " in the layout's run");
  RankCost out = layout.cost;
  const int d = static_cast<int>(Axis::D);
  double d_bytes = 0;
  long d_steps = layout.layer_d_steps;
  double stream = layout.layer_stream_bytes;
  const auto add = [&](const std::vector<double>& log, std::size_t first, std::size_t end) {
    for (std::size_t i = first; i < end; ++i) d_bytes += log[i];
  };
  Memory peak = layout.gaps[0].peak, opt{};
  for (std::size_t c = 0; c < optimizer.calls.size(); ++c) {
    const CallPiece& q = optimizer.calls[c];
    const LayerGap& gap = layout.gaps[c];
    if (!(q.call == layout.own.calls[c].call))
      throw std::logic_error("merge_runs: the optimizer's calls differ from the layout's at call " + std::to_string(c));
    add(layout.own.d_bytes, gap.d_first, gap.d_end);  // (in the order they were counted)
    const Memory& after = layout.gaps[c + 1].peak;
    for (std::size_t k = 0; k < peak.size(); ++k) {
      peak[k] = std::max(peak[k], gap.live[k] + q.peak[k]);  // inside the call
      opt[k] = q.live_end[k];
      peak[k] = std::max(peak[k], after[k] + opt[k]);  // the layers after it
    }
    if (gap.call_counted) {
      stream += q.stream_bytes;
      d_steps += q.d_steps;
      add(optimizer.d_bytes, q.d_first, q.d_end);
    }
  }
  add(layout.own.d_bytes, layout.gaps.back().d_first, layout.gaps.back().d_end);
  out.bytes[d] = d_bytes;
  out.calls[d] = static_cast<int>(d_steps);
  out.stream_bytes = stream;
  out.memory_bytes = static_cast<double>(peak[0]);
  for (std::size_t k = 0; k < out.memory_by_kind.size(); ++k) out.memory_by_kind[k] = static_cast<double>(peak[1 + k]);
  return out;
}

OptimizerRun replay_optimizer(const RunRecord& layout, const ZeroOptions& options, GridShape grid, int dp, int rank,
                              Transport transport) {
  DryRun run(grid, dp, rank, transport);
  OptimizerRun calls;
  {
    ZeroRecorder recorder(run, /*calls_only=*/true);
    ZeroOptimizer opt(run.backend(), run.grid(), layout.tensors, options, layout.adam);
    for (const CallPiece& c : layout.own.calls)
      if (c.call.op != ZeroCall::Op::Construct) opt.replay(c.call);
    calls = recorder.take_calls();
  }
  // The merge takes tensor work and the X, Y and Z axes from the layout's run: the optimizer
  // must have done none of it.
  const ShapeCounts& c = run.shape_backend().counts();
  bool tensor_axes = false;
  for (Axis a : {Axis::X, Axis::Y, Axis::Z})
    tensor_axes = tensor_axes || run.grid().axis_stats(a).bytes != 0 || recording_axis(run.grid(), a).ring_steps() != 0;
  if (c.gemm_flops != 0 || c.spmm_flops != 0 || c.spmm_bytes != 0 || c.random_draws != 0 || tensor_axes)
    throw std::logic_error("replay_optimizer: the optimizer did tensor work or used a tensor axis; a replica's cost "
                           "cannot be assembled from its layout's");
  return calls;
}

RankCost replay_replica(const RunRecord& layout, const ZeroOptions& options, GridShape grid, int dp, int rank,
                        Transport transport) {
  return merge_runs(layout, replay_optimizer(layout, options, grid, dp, rank, transport));
}

}  // namespace plexus
