// The analytic model of a GPT step (include/plexus/gpt.hpp): every collective that
// GptModel::step, GptBlock, Linear3D, LayerNorm3D and Embedding3D issue, in the same order,
// with MpiCommunicator's byte accounting — so the prediction equals the measured comm_bytes.
#include <algorithm>
#include <cmath>
#include <functional>

#include "comm/nccl_schedule.hpp"
#include "models/gpt_layout.hpp"
#include "plexus/gpt.hpp"

namespace plexus {

namespace {

class StepCost {
 public:
  StepCost(GridShape shape, const std::array<int, 3>& coords, int dp, int d, Transport transport)
      : shape_(shape), coords_(coords), dp_(dp), d_(d), transport_(transport) {
    cost.coords = coords;
    cost.d = d;
  }
  RankCost cost;

  // MpiCommunicator's accounting: all-reduce 2(p−1)/p of the buffer, all-gather and
  // reduce-scatter everything but this rank's own part; under NCCL the gathers follow the
  // device communicator's padded or grouped schedule (src/comm/nccl_schedule.hpp).
  void all_reduce(Axis a, double elements, double bytes_each = 4) {
    const int p = a == Axis::D ? dp_ : shape_.dim(a);
    if (p == 1) return;
    add(a, 2.0 * (p - 1) / p * elements * bytes_each);
  }
  void gather(Axis a, index_t rows, index_t cols) {  // all-gather or reduce-scatter of a row-split block
    const int p = shape_.dim(a);
    if (p == 1) return;
    uneven(a, block_counts(rows, p, cols), coords_[static_cast<int>(a)], 4);
  }
  // A ZeRO reduce-scatter or all-gather over D of a bucket whose parts on the D ranks are
  // `counts` (ZeroOptimizer::counts).
  void dp_part(const std::vector<std::size_t>& counts, std::size_t bytes_each) {
    if (dp_ > 1) uneven(Axis::D, counts, d_, bytes_each);
  }
  void gemm(index_t m, index_t k, index_t n) { cost.gemm_flops += 2.0 * m * k * n; }
  void tensor(double elements, double bytes_each = 4) { cost.memory_bytes += bytes_each * elements; }

 private:
  void uneven(Axis a, const std::vector<std::size_t>& counts, int own, std::size_t bytes_each) {
    add(a, uneven_rank_bytes(transport_, counts, own, bytes_each));
  }
  void add(Axis a, double bytes) {
    cost.bytes[static_cast<int>(a)] += bytes;
    cost.calls[static_cast<int>(a)] += 1;
  }
  GridShape shape_;
  std::array<int, 3> coords_;
  int dp_, d_;
  Transport transport_;
};

struct LinearShape {
  Axis row, in, out;
  index_t rows;
  Range in_cols, out_cols;
  bool bias = true, transposed = false;
  index_t stored_rows() const { return transposed ? out_cols.size() : in_cols.size(); }
  index_t stored_cols() const { return transposed ? in_cols.size() : out_cols.size(); }
  // Parameters this rank holds: its rows of the stored block (split over `row`), and the bias.
  double params(GridShape g, const std::array<int, 3>& coords) const {
    const Range stored = transposed ? out_cols : in_cols;
    const index_t rows_here = sub_range(stored, g.dim(row), coords[static_cast<int>(row)]).size();
    return static_cast<double>(rows_here * stored_cols() + (bias ? out_cols.size() : 0));
  }
};

void linear_gather(StepCost& s, const LinearShape& l) { s.gather(l.row, l.stored_rows(), l.stored_cols()); }
void linear_forward(StepCost& s, const LinearShape& l) {
  s.gemm(l.rows, l.in_cols.size(), l.out_cols.size());
  s.all_reduce(l.in, static_cast<double>(l.rows * l.out_cols.size()));
}
void linear_backward(StepCost& s, const LinearShape& l) {
  if (l.bias) s.all_reduce(l.row, static_cast<double>(l.out_cols.size()));
  s.gather(l.row, l.stored_rows(), l.stored_cols());  // dW: reduce-scatter
  s.gemm(l.rows, l.in_cols.size(), l.out_cols.size());
  s.all_reduce(l.out, static_cast<double>(l.rows * l.in_cols.size()));
  s.gemm(l.rows, l.in_cols.size(), l.out_cols.size());
}
// The gathered block and its gradient when split, and the output (parameter state: zero_memory).
void linear_memory(StepCost& s, const LinearShape& l, GridShape g) {
  const double stored = static_cast<double>(l.stored_rows() * l.stored_cols());
  s.tensor((g.dim(l.row) > 1 ? 2.0 * stored : 0.0) + static_cast<double>(l.rows * l.out_cols.size()));
}

// ZeroOptimizer's traffic over D in one step (optim/zero.hpp): per unit, buckets of at most
// `bucket` elements, each reduced (stage 0: all-reduced; else reduce-scattered to the owners
// of its elements) and, at stage 3, gathered before the unit's forward and backward; at
// stages 1-2 the updated values all-gathered after the step.
void zero_traffic(StepCost& s, const std::vector<double>& units, const GptParallel& par, int d, int grad_accum) {
  double flat = 0;
  for (const double n : units) flat += n;
  (void)d;  // the rank's own part is its entry of each bucket's counts
  const std::size_t elem = par.precision == Precision::BF16 ? 2 : 4;
  const double bucket = std::max(1.0, std::floor(par.bucket_mb * (1 << 20) / static_cast<double>(elem)));
  // Calls f(length, parts of the D ranks) for each bucket of each unit.
  const auto each_bucket = [&](const std::function<void(double, const std::vector<std::size_t>&)>& f,
                               bool whole_units) {
    double begin = 0;
    std::vector<std::size_t> parts(static_cast<std::size_t>(par.dp));
    for (const double n : units) {
      const double step = whole_units ? std::max(n, 1.0) : bucket;
      for (double c0 = begin; c0 < begin + n; c0 += step) {
        const double c1 = std::min(begin + n, c0 + step);
        for (int r = 0; r < par.dp; ++r) {
          const Range own = block_range(static_cast<index_t>(flat), par.dp, r);
          parts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(
              std::max(0.0, std::min(c1, static_cast<double>(own.end)) - std::max(c0, static_cast<double>(own.begin))));
        }
        f(c1 - c0, parts);
      }
      begin += n;
    }
  };
  const auto part = [&](double, const std::vector<std::size_t>& parts) { s.dp_part(parts, elem); };
  const auto reduce = [&] {
    each_bucket(
        [&](double n, const std::vector<std::size_t>& parts) {
          par.zero == 0 ? s.all_reduce(Axis::D, n, static_cast<double>(elem)) : s.dp_part(parts, elem);
        },
        false);
  };
  for (int micro = 0; micro < grad_accum; ++micro) {
    if (par.zero == 3)
      for (int pass = 0; pass < 2; ++pass) each_bucket(part, true);
    if (par.zero >= 2 || micro + 1 == grad_accum) reduce();
  }
  if (par.zero == 1 || par.zero == 2) each_bucket(part, false);
}

// Parameters, gradients and Adam state by ZeRO's formulas (fp32: 4Ψ + 4Ψ + 8Ψ; bf16: 2Ψ + 2Ψ +
// 12Ψ, the master weights with Adam's state; the parts sharded over D as the stage says), and the
// workspace of a unit's gathered values and gradients (bf16: fp32 working copies at every stage).
void zero_memory(StepCost& s, const std::vector<double>& units, const GptParallel& par, int d) {
  double flat = 0, largest_block = 0;
  for (std::size_t u = 0; u < units.size(); ++u) {
    flat += units[u];
    if (u > 0) largest_block = std::max(largest_block, units[u]);
  }
  const double blk = static_cast<double>(block_range(static_cast<index_t>(flat), par.dp, d).size());
  const double params = par.zero == 3 ? blk : flat, grads = par.zero >= 2 ? blk : flat;
  const double adam = par.zero >= 1 ? blk : flat;  // elements Adam updates here
  // Stages 2-3 hold unit 0, the block in use and the one in flight (gradients) or prefetched
  // (values); stages 1-3 receive a reduced bucket of up to a unit's owned part.
  const double in_use = units.empty() ? 0 : units[0] + 2 * largest_block;
  const double received = par.zero >= 1 ? std::ceil(std::max(units.empty() ? 0 : units[0], largest_block) / par.dp) : 0;
  if (par.precision == Precision::BF16) {
    s.tensor(params + grads + received, 2.0);
    s.tensor(3 * adam + 2 * in_use);                  // master, m, v; the working values and gradients
    if (par.zero >= 2) s.tensor(in_use, 2.0);         // rounded gradients held for their reduction
    if (par.zero == 3) s.tensor(in_use, 2.0);         // gathered values
  } else {
    s.tensor(params + grads + 2 * adam + received + (par.zero >= 2 ? in_use : 0) + (par.zero == 3 ? in_use : 0));
  }
}

void layernorm_forward(StepCost& s, const GptLayout& l) {
  s.all_reduce(l.hid, static_cast<double>(l.rows));  // mean
  s.all_reduce(l.hid, static_cast<double>(l.rows));  // variance
}
void layernorm_backward(StepCost& s, const GptLayout& l) {
  s.all_reduce(l.hid, 2.0 * static_cast<double>(l.rows));      // a, b
  s.all_reduce(l.seq, 2.0 * static_cast<double>(l.embed.size()));  // dγ, dβ
}

}  // namespace

std::vector<RankCost> predict_gpt_ranks(const GptConfig& c, index_t batch, int grad_accum, GridShape g,
                                        bool gather_weights, const GptParallel& par) {
  validate(c);
  std::vector<RankCost> out;
  for (int d = 0; d < par.dp; ++d)
  for (int z = 0; z < g.z; ++z)
    for (int x = 0; x < g.x; ++x)
      for (int y = 0; y < g.y; ++y) {
        const std::array<int, 3> coords{x, y, z};
        const GptLayout l = gpt_layout_at(g, coords, c, batch, par.dp, d);
        StepCost s(g, coords, par.dp, d, par.transport);
        const LinearShape head{l.seq, l.hid, l.head, l.rows, l.embed, l.vocab, false, true};
        const LinearShape wte{l.seq, l.hid, l.head, 0, l.embed, l.vocab, false, true};  // untied table
        const LinearShape wpe{l.seq, l.hid, l.head, 0, l.embed, l.pos, false, true};
        const LinearShape qkv{l.seq, l.hid, l.head, l.rows, l.embed, l.qkv_cols};
        const LinearShape proj{l.seq, l.head, l.hid, l.rows, l.att_cols, l.embed};
        const LinearShape fc{l.seq, l.hid, l.head, l.rows, l.embed, l.ff};
        const LinearShape fc2{l.seq, l.head, l.hid, l.rows, l.ff, l.embed};
        const LinearShape* block[] = {&qkv, &proj, &fc, &fc2};

        if (gather_weights) {  // in the order of first use: tables, then the blocks, then the head
          if (!c.tied) linear_gather(s, wte);
          else linear_gather(s, head);
          linear_gather(s, wpe);
          for (int b = 0; b < c.layers; ++b)
            for (const LinearShape* lin : block) linear_gather(s, *lin);
          if (!c.tied) linear_gather(s, head);
        }
        const double attention = 2.0 * l.seqs.size() * l.heads.size() * c.block * c.block * l.head_dim;
        for (int micro = 0; micro < grad_accum; ++micro) {
          s.all_reduce(l.head, static_cast<double>(l.rows * l.embed.size()));  // embeddings
          for (int b = 0; b < c.layers; ++b) {
            layernorm_forward(s, l);
            linear_forward(s, qkv);
            s.cost.gemm_flops += attention;  // causal: half of QKᵀ and PV
            linear_forward(s, proj);
            layernorm_forward(s, l);
            linear_forward(s, fc);
            linear_forward(s, fc2);
          }
          layernorm_forward(s, l);
          linear_forward(s, head);
          s.all_reduce(l.head, static_cast<double>(l.rows));  // row maxima
          s.all_reduce(l.head, static_cast<double>(l.rows));  // exp-sums
          s.all_reduce(l.head, 1, 8);                         // the loss (double)
          s.all_reduce(l.seq, 1, 8);
          s.all_reduce(Axis::D, 1, 8);
          linear_backward(s, head);
          layernorm_backward(s, l);
          for (int b = c.layers; b-- > 0;) {
            linear_backward(s, fc2);
            linear_backward(s, fc);
            layernorm_backward(s, l);
            linear_backward(s, proj);
            s.cost.gemm_flops += 2.0 * attention;
            linear_backward(s, qkv);
            layernorm_backward(s, l);
          }
          s.gather(l.seq, l.vocab.size(), l.embed.size());  // token table gradient: reduce-scatter
          s.gather(l.seq, l.pos.size(), l.embed.size());    // position table
        }

        linear_memory(s, head, g);
        if (!c.tied) linear_memory(s, wte, g);
        linear_memory(s, wpe, g);
        for (int b = 0; b < c.layers; ++b) {
          for (const LinearShape* lin : block) linear_memory(s, *lin, g);
          // LayerNorms (8 vectors each), their outputs, attention output and LSE, residuals, GELU.
          s.tensor(2.0 * (8.0 * l.embed.size() + l.rows * l.embed.size()) +
                   static_cast<double>(l.rows * (l.att_cols.size() + l.heads.size() + 2 * l.embed.size() +
                                                 l.ff.size())));
        }
        s.tensor(static_cast<double>(l.rows * (2 * l.embed.size() + l.vocab.size())));  // x0, dx, dlogits

        // The units of the ZeroOptimizer (GptModel::register_params): embeddings, final
        // LayerNorm and head; then each block.
        const double ln = 2.0 * static_cast<double>(l.embed.size());
        std::vector<double> units{head.params(g, coords) + wpe.params(g, coords) + ln +
                                  (c.tied ? 0.0 : wte.params(g, coords))};
        for (int b = 0; b < c.layers; ++b) {
          double n = 2 * ln;
          for (const LinearShape* lin : block) n += lin->params(g, coords);
          units.push_back(n);
        }
        zero_traffic(s, units, par, d, grad_accum);
        zero_memory(s, units, par, d);
        out.push_back(s.cost);
      }
  return out;
}

AxisBytes predict_gpt_step(const GptConfig& c, index_t batch, int grad_accum, GridShape g, bool gather_weights,
                           const GptParallel& par) {
  AxisBytes b;
  for (const RankCost& r : predict_gpt_ranks(c, batch, grad_accum, g, gather_weights, par))
    for (int a = 0; a < 4; ++a) b.bytes[a] += r.bytes[a];
  return b;
}

std::vector<GridPlan> plan_gpt(const GptConfig& c, index_t batch, int grad_accum, int ranks,
                               const MachineModel& machine, double memory_per_rank, double bucket_mb,
                               Precision precision, Transport transport) {
  std::vector<GridPlan> plans;
  for (int dp = 1; dp <= ranks; ++dp) {
    if (ranks % dp) continue;
    for (GridShape g : all_grids(ranks / dp))
      for (int stage = 0; stage <= (dp > 1 ? 3 : 0); ++stage) {
        const std::vector<RankCost> step = predict_gpt_ranks(c, batch, grad_accum, g, true, {dp, stage, bucket_mb, precision, transport});
        GridPlan plan = plan_from_costs(g, step, step, machine, dp);
        plan.zero = stage;
        if (memory_per_rank <= 0 || plan.memory_bytes <= memory_per_rank) plans.push_back(plan);
      }
  }
  sort_plans(plans);
  return plans;
}

}  // namespace plexus
