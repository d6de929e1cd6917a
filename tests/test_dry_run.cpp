// The pieces a plan is made of (src/plan/dry_run.hpp): the recording communicator counts what
// the transport would move and touches no element, the shape-only backend allocates address
// space only and counts FLOPs, a shape-only Â block holds what the real one holds, and a dry
// run follows the code it runs: a collective or a buffer added to a layer shows in the plan
// with no other edit. Ranks sharing a run, and ZeRO replicas and stages assembled from their
// layout's record, cost what each costs alone.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include "comm/nccl_schedule.hpp"
#include "comm/recording_communicator.hpp"
#include "kernels/shape/shape_backend.hpp"
#include "plan/dry_run.hpp"
#include "plan/gnn_plan.hpp"
#include "plan/kernel_work.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/gcn_layer_3d.hpp"
#include "pmm/linear_3d.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/sparse.hpp"
#include "plan/gpt_plan.hpp"
#include "plan/zero_replay.hpp"
#include "core/shard_layout.hpp"

namespace plexus {
namespace {

// Address space that faults on any access: what the recording communicator and the shape
// backend are handed must never be read or written.
struct Untouchable {
  Untouchable() : p(mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)) {}
  ~Untouchable() { munmap(p, kBytes); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
  static constexpr std::size_t kBytes = std::size_t{1} << 24;
  void* p;
};

TEST(RecordingCommunicator, CountsWhatEachTransportWouldMoveAndTouchesNothing) {
  const Untouchable u;
  for (Transport t : {Transport::Mpi, Transport::Nccl})
    for (int p : {1, 2, 3, 5})
      for (int r = 0; r < p; ++r) {
        SCOPED_TRACE(std::string(transport_name(t)) + " p=" + std::to_string(p) + " rank " + std::to_string(r));
        RecordingCommunicator c(p, r, t);
        EXPECT_EQ(c.size(), p);
        EXPECT_EQ(c.rank(), r);
        std::vector<std::size_t> counts;
        for (int k = 0; k < p; ++k) counts.push_back(static_cast<std::size_t>(3 + 2 * k));  // uneven
        const auto gathered = [&](std::size_t bytes_each) { return uneven_rank_bytes(t, counts, r, bytes_each); };
        double want = 0;
        long steps = 0;
        const long ar_steps = p > 1 ? 2 * (p - 1) : 0, ag_steps = p - 1;
        c.all_reduce(u.as<float>(), 100, ReduceOp::Sum), want += 2.0 * (p - 1) / p * 400, steps += ar_steps;
        c.all_reduce(u.as<double>(), 3, ReduceOp::Max), want += 2.0 * (p - 1) / p * 24, steps += ar_steps;
        c.all_gather(u.as<float>(), u.as<float>() + 64, counts), want += p > 1 ? gathered(4) : 0, steps += ag_steps;
        c.all_gather(u.as<std::int32_t>(), u.as<std::int32_t>() + 64, counts), want += p > 1 ? gathered(4) : 0,
            steps += ag_steps;
        c.reduce_scatter(u.as<float>(), u.as<float>() + 64, counts), want += p > 1 ? gathered(4) : 0, steps += ag_steps;
        c.iall_reduce(u.as<float>(), 10)->wait(), want += 2.0 * (p - 1) / p * 40, steps += ar_steps;
        c.iall_reduce(u.as<bf16>(), 10)->wait(), want += 2.0 * (p - 1) / p * 20, steps += ar_steps;
        c.ireduce_scatter(u.as<bf16>(), u.as<bf16>() + 64, counts)->wait(), want += p > 1 ? gathered(2) : 0,
            steps += ag_steps;
        EXPECT_TRUE(c.iall_gather(u.as<bf16>(), u.as<bf16>() + 64, counts)->test());
        want += p > 1 ? gathered(2) : 0, steps += ag_steps;
        c.iall_gather(u.as<float>(), u.as<float>() + 64, counts)->wait(), want += p > 1 ? gathered(4) : 0,
            steps += ag_steps;
        EXPECT_NEAR(c.stats().bytes, want, 1e-9 * std::max(1.0, want));
        EXPECT_EQ(c.stats().calls, 10u);
        EXPECT_EQ(c.ring_steps(), steps);
        c.reset_stats();
        EXPECT_EQ(c.stats().bytes, 0.0);
        EXPECT_EQ(c.ring_steps(), 0);
      }
}

TEST(RecordingCommunicator, GridSeesEachAxisFromItsRank) {
  const GridShape shape{2, 3, 2};
  for (int rank = 0; rank < 2 * shape.size(); ++rank) {
    auto grid = make_recording_grid(shape, 2, rank, Transport::Mpi);
    EXPECT_EQ(grid->rank(), rank);
    for (Axis a : kAllAxes) {
      EXPECT_EQ(grid->comm(a).size(), grid->dim(a));
      EXPECT_EQ(grid->comm(a).rank(), grid->coord(a));
    }
    EXPECT_EQ(grid->world().size(), 24);
    EXPECT_EQ(grid->replica().size(), 12);
  }
}

TEST(ShapeBackend, CountsMemoryByKindAndFlopsAndComputesNothing) {
  ShapeBackend be;
  EXPECT_FALSE(be.computes());
  {
    MemoryScope scope(be, MemoryKind::Parameters, "weights");
    Matrix w(be, 1000, 3000);  // 12 MB that are never backed by memory
    EXPECT_EQ(be.live_bytes(MemoryKind::Parameters), 12'000'000u);
    Matrix a(be, 50, 1000), c(be, 50, 3000);
    be.gemm(Trans::No, Trans::No, 1.0f, a.view(), w.view(), 0.0f, c.view());
    EXPECT_DOUBLE_EQ(be.counts().gemm_flops, 2.0 * 50 * 1000 * 3000);
    Matrix at(be, 1000, 50);  // op(A) = Aᵀ: m = 50, k = 1000
    be.gemm(Trans::Yes, Trans::No, 1.0f, at.view(), w.view(), 0.0f, c.view());
    EXPECT_DOUBLE_EQ(be.counts().gemm_flops, 4.0 * 50 * 1000 * 3000);
    be.fill(w.view(), 1.0f);  // would fault if it wrote
    be.relu(c.view());
    std::vector<float> host(4, 7.0f);
    be.copy_to_host(host.data(), w.data(), 4 * sizeof(float));
    EXPECT_EQ(host, std::vector<float>(4, 0.0f));  // zeros, never garbage
    const CsrView csr{10, 1000, 40, nullptr, nullptr, nullptr};
    be.spmm(csr, at.view(), Matrix(be, 10, 50).view(), 0.0f);
    // Its arguments are checked like every backend's (Backend::spmm).
    EXPECT_THROW(be.spmm(csr, a.view(), Matrix(be, 10, 1000).view(), 0.0f), std::invalid_argument);
  }
  EXPECT_DOUBLE_EQ(be.counts().spmm_flops, 2.0 * 40 * 50);
  EXPECT_DOUBLE_EQ(be.counts().spmm_bytes, 40 * 8.0 + 40 * 50 * 4.0 + 10 * 50 * 4.0 + 11 * 8.0);
  EXPECT_EQ(be.live_bytes(), 0u);
  // w, a, c, at and an SpMM's output, all in the scope's kind.
  EXPECT_EQ(be.peak_bytes(MemoryKind::Parameters), 12'000'000u + 4u * (50 * 1000 + 50 * 3000 + 1000 * 50 + 10 * 1000));
  EXPECT_EQ(be.peak_bytes(MemoryKind::Activations), 0u);
  be.reset_counts();
  EXPECT_EQ(be.counts().gemm_flops, 0.0);
}

// The memory-bound kernels count the bytes they would read and write, a dropout its draws,
// an allocation its zero fill; GEMM and SpMM keep their own counts.
TEST(ShapeBackend, CountsTheBytesOfMemoryBoundKernelsAndTheDropoutDraws) {
  ShapeBackend be;
  Matrix a(be, 10, 6), b(be, 10, 6);
  Buffer<float> bias(be, 6);
  EXPECT_DOUBLE_EQ(be.counts().stream_bytes, 4.0 * (60 + 60 + 6));  // zero fills
  be.reset_counts();
  const double n = 60 * 4.0;  // one 10 × 6 matrix
  const auto added = [&](auto&& kernel) {
    const double before = be.counts().stream_bytes;
    kernel();
    return be.counts().stream_bytes - before;
  };
  EXPECT_DOUBLE_EQ(added([&] { be.fill(a.view(), 1.0f); }), n);
  EXPECT_DOUBLE_EQ(added([&] { be.copy(a.view(), b.view()); }), 2 * n);
  EXPECT_DOUBLE_EQ(added([&] { be.relu(a.view()); }), 2 * n);
  EXPECT_DOUBLE_EQ(added([&] { be.relu_backward(a.view(), b.view()); }), 3 * n);
  EXPECT_DOUBLE_EQ(added([&] { be.add_bias(a.view(), bias.data()); }), 2 * n + 24);
  EXPECT_DOUBLE_EQ(added([&] { be.column_sum(a.view(), 0.0f, bias.data()); }), n + 24);
  EXPECT_DOUBLE_EQ(added([&] { be.axpby(60, 1.0f, a.data(), 1.0f, b.data()); }), 3 * n);
  EXPECT_DOUBLE_EQ(added([&] { be.axpby(60, 2.0f, b.data(), 0.0f, b.data()); }), 2 * n);
  EXPECT_DOUBLE_EQ(added([&] { be.axpby(60, 1.0f, a.data(), 0.0f, b.data()); }), 2 * n);  // y not read
  EXPECT_DOUBLE_EQ(added([&] { be.adam_step(60, a.data(), b.data(), a.data(), b.data(), AdamParams{}); }), 7 * n);
  EXPECT_DOUBLE_EQ(added([&] { be.copy_on_device(a.data(), b.data(), 240); }), 480);
  EXPECT_EQ(be.counts().random_draws, 0.0);
  EXPECT_DOUBLE_EQ(added([&] { be.dropout(a.view(), b.view(), 0.5f, DropoutKey{}, 0, 0); }), 0.0);  // priced by
  EXPECT_DOUBLE_EQ(be.counts().random_draws, 60);                                                 // its draws
  // p = 0 is a copy and p = 1 a fill, with no draw.
  EXPECT_DOUBLE_EQ(added([&] { be.dropout(a.view(), b.view(), 0.0f, DropoutKey{}, 0, 0); }), 2 * n);
  EXPECT_DOUBLE_EQ(added([&] { be.dropout(a.view(), b.view(), 1.0f, DropoutKey{}, 0, 0); }), n);
  EXPECT_DOUBLE_EQ(be.counts().random_draws, 60);
  EXPECT_DOUBLE_EQ(added([&] { (void)Matrix(be, 3, 5, Matrix::PaddedRows{}); }), 3 * 8 * 4.0);  // rows padded to 8
  EXPECT_DOUBLE_EQ(added([&] { (void)Matrix(be, 3, 5, uninitialized); }), 0.0);  // no fill
  EXPECT_DOUBLE_EQ(added([&] { (void)Buffer<float>(be, std::vector<float>(7)); }), 2 * 7 * 4.0);  // the upload, no fill
  // A view counts its rows and columns, not its leading dimension.
  EXPECT_DOUBLE_EQ(added([&] { be.fill(rows_of(a.view(), 2, 5), 0.0f); }), 3 * 6 * 4.0);
  EXPECT_EQ(be.counts().gemm_flops, 0.0);
  EXPECT_EQ(be.counts().spmm_bytes, 0.0);
  be.reset_counts();
  EXPECT_EQ(be.counts().stream_bytes, 0.0);
  EXPECT_EQ(be.counts().random_draws, 0.0);
}

// One GCN layer's training step on one rank, counted by hand from gcn_layer_3d.cpp and
// linear_3d.cpp: transforming first, N × F in, C out, no ReLU (a last layer), dropout 0.5 and
// no input gradient (layer 0). With recompute the dropped-out input [N × ceil4(F)] is
// allocated (zero-filled) in forward and in backward (without, once with the layer), and
// drawn again.
TEST(DryRun, AGcnLayerStepStreamsTheBytesCountedByHand) {
  const index_t N = 10, F = 6, C = 3, ld = 8, nnz = 25;
  for (bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "recompute" : "plain");
    DryRun run(GridShape{1, 1, 1}, 1, 0, Transport::Mpi);
    const LayerGeometry geo = layer_geometry(run.grid(), 0, N, {F, C}, {true});
    ASSERT_TRUE(geo.transform_first);
    AdjBlockRange range;
    range.rows = range.part_rows = Range{0, N};
    range.cols = range.part_cols = Range{0, N};
    DeviceAdj adj(run.backend(), range, nnz, 1, nullptr, nullptr);
    LayerCommOptions comm;
    comm.recompute = recompute;
    GcnLayer3D layer(run.backend(), run.grid(), geo, adj, /*relu=*/false, 1, /*constant_input=*/true, comm);
    Matrix h(run.backend(), N, F), d_out(run.backend(), N, C);
    run.measure();
    const DropoutSpec drop{0.5f, DropoutKey{}, true};
    layer.forward(h, drop);
    layer.backward(d_out, drop, /*need_input_grad=*/false);
    const RankCost step = run.measure();
    // forward: dropout(H) (N·F draws), the bias added to OUT (read, write; the bias read);
    // backward: db = colsum(dOUT) (read; db written), dY allocated [N × C].
    double want = (8.0 * N * C + 4 * C) + (4.0 * N * C + 4 * C) + 4.0 * N * C;
    double draws = N * F;
    if (recompute) {
      want += 2 * 4.0 * N * ld;  // dropout(H)'s buffer, allocated in forward and in backward
      draws += N * F;            // and drawn again
    }
    EXPECT_DOUBLE_EQ(step.stream_bytes, want);
    EXPECT_DOUBLE_EQ(step.random_draws, draws);
    EXPECT_DOUBLE_EQ(step.gemm_flops, 2.0 * (2.0 * N * F * C));  // H·W and Hᵀ·dY
    EXPECT_DOUBLE_EQ(step.spmm_flops, 2.0 * (2.0 * nnz * C));    // Â·Y and Âᵀ·dOUT
  }
}

// The roofline's kernel work (src/plan/kernel_work.hpp): a steady epoch's kernels, each by its
// name, add up to that epoch's dry run, and the kernels that do the work are there.
TEST(KernelWork, TheKernelsOfASteadyEpochAddUpToItsDryRun) {
  for (const char* kind : {"gcn", "sage", "gat"}) {
    SCOPED_TRACE(kind);
    ProblemSize p;
    p.num_nodes = 120;
    p.nnz = 700;
    p.num_features = 12;
    p.num_classes = 5;
    p.config.model = GnnSpec(kind);
    p.config.layers = 3;
    p.config.hidden = 8;
    p.config.dropout = 0.5f;
    const std::map<std::string, KernelWork> work = gnn_epoch_kernel_work(p);
    const RankCost steady = dry_run_gnn_rank(p, GridShape{1, 1, 1}, 0).steady;
    KernelWork sum;
    for (const auto& [name, w] : work) {
      EXPECT_GT(w.calls, 0u) << name;
      sum.flops += w.flops;
      sum.bytes += w.bytes;
      sum.draws += w.draws;
    }
    EXPECT_DOUBLE_EQ(sum.flops, steady.gemm_flops + steady.spmm_flops);
    EXPECT_DOUBLE_EQ(sum.bytes, steady.stream_bytes + steady.spmm_bytes);
    EXPECT_DOUBLE_EQ(sum.draws, steady.random_draws);
    ASSERT_TRUE(work.count("gemm_nn"));
    EXPECT_GT(work.at("gemm_nn").flops, 0.0);
    EXPECT_GT(work.at("dropout").draws, 0.0);
    if (std::string(kind) != "gat") {
      ASSERT_TRUE(work.count("spmm"));
      EXPECT_GT(work.at("spmm").bytes, 0.0);
    }
  }
}

HostCsr random_block(index_t rows, index_t cols, double density, unsigned seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution keep(density);
  HostCsr a;
  a.rows = rows;
  a.cols = cols;
  for (index_t r = 0; r < rows; ++r) {
    for (index_t c = 0; c < cols; ++c)
      if (keep(rng)) {
        a.indices.push_back(static_cast<col_t>(c));
        a.values.push_back(0.5f);
      }
    a.indptr.push_back(static_cast<index_t>(a.indices.size()));
  }
  return a;
}

// A shape-only block holds, to the byte, what the real one holds for a block of that many entries.
TEST(DeviceAdj, ShapeOnlyBlockHoldsWhatTheRealOneHolds) {
  for (int chunks : {1, 3}) {
    const HostCsr a = random_block(37, 23, 0.3, 7 + chunks);
    auto cpu = make_cpu_backend(1);
    AdjBlockRange range;
    range.rows = range.part_rows = Range{0, 37};
    range.cols = range.part_cols = Range{0, 23};
    DeviceAdj real(*cpu, range, HostCsr(a), csr_transpose(a), chunks, nullptr, nullptr);
    ShapeBackend shape;
    DeviceAdj dry(shape, range, a.nnz(), chunks, nullptr, nullptr);
    EXPECT_EQ(shape.live_bytes(), cpu->live_bytes()) << chunks << " chunks";
    EXPECT_THROW(DeviceAdj(*cpu, range, a.nnz(), chunks, nullptr, nullptr), std::logic_error);
  }
}

// A two-linear MLP of this test, on any grid: the dry run of its step reports what its
// collectives move. Its variant adds one all-reduce and one buffer; the plan follows with no
// edit anywhere else.
struct TinyMlp {
  TinyMlp(Backend& be, ProcessGrid& grid, bool variant)
      : be(be), grid(grid), variant(variant),
        fc(be, grid, layout(grid), {}),
        proj(be, grid, layout(grid).transposed(sub_range(Range{0, 6}, grid.dim(Axis::Y), grid.coord(Axis::Y))), {}),
        x(be, 8, layout(grid).in_cols.size()) {}
  static Linear3DLayout layout(const ProcessGrid& g) {
    return {Axis::Z, Axis::Y, Axis::X, 8, sub_range(Range{0, 6}, g.dim(Axis::Y), g.coord(Axis::Y)),
            sub_range(Range{0, 10}, g.dim(Axis::X), g.coord(Axis::X))};
  }
  void step() {
    Matrix& h = fc.forward(x.view());
    Matrix& y = proj.forward(h.view());
    Matrix dy(be, y.rows(), y.cols());
    if (variant) {  // the test-only collective, and a buffer it needs
      Matrix extra(be, 8, 3);
      grid.comm(Axis::X).all_reduce(extra.data(), extra.size(), ReduceOp::Sum);
    }
    Matrix dh = proj.backward(h.view(), dy, true);
    fc.backward(x.view(), dh, false);
  }
  Backend& be;
  ProcessGrid& grid;
  bool variant;
  Linear3D fc, proj;
  Matrix x;
};

RankCost dry_step(GridShape g, int rank, bool variant) {
  DryRun run(g, 1, rank, Transport::Mpi);
  TinyMlp mlp(run.backend(), run.grid(), variant);
  run.measure();
  mlp.step();
  return run.measure();
}

TEST(DryRun, APlanFollowsACollectiveAddedToALayer) {
  for (GridShape g : {GridShape{1, 1, 1}, GridShape{2, 1, 1}, GridShape{3, 2, 1}, GridShape{2, 2, 2}}) {
    for (int rank = 0; rank < g.size(); ++rank) {
      SCOPED_TRACE(g.str() + " rank " + std::to_string(rank));
      const RankCost base = dry_step(g, rank, false), more = dry_step(g, rank, true);
      const int p = g.x;
      EXPECT_DOUBLE_EQ(more.bytes[0] - base.bytes[0], 2.0 * (p - 1) / p * 24 * 4);  // the added all-reduce
      EXPECT_EQ(more.calls[0] - base.calls[0], p > 1 ? 2 * (p - 1) : 0);
      for (int a = 1; a < 4; ++a) EXPECT_EQ(more.bytes[a], base.bytes[a]);
      EXPECT_GE(more.memory_bytes, base.memory_bytes);
      EXPECT_EQ(more.gemm_flops, base.gemm_flops);
      EXPECT_GT(base.gemm_flops, 0.0);
      if (g.size() > 1) {
        EXPECT_GT(base.bytes[0] + base.bytes[1] + base.bytes[2], 0.0);
      }
    }
  }
}

// A GPT step's dropout draws, counted by hand: the embeddings' sum and each block's two
// residual branches, [batch·block × embed] each, forward and backward (the attention's own
// dropout is part of its products); with recompute each block's forward runs again in its
// backward, drawing its two masks again. The plan takes train's --dropout (GptParallel).
TEST(DryRun, GptStepDrawsItsDropoutMasks) {
  GptConfig c;
  c.layers = 2;
  c.heads = 2;
  c.embed = 16;
  c.block = 8;
  c.vocab = 11;
  const double mask = 3.0 * 8 * 16;  // batch 3
  for (bool recompute : {false, true}) {
    c.recompute = recompute;
    GptParallel par;
    EXPECT_EQ(predict_gpt_ranks(c, 3, 1, GridShape{}, true, par)[0].random_draws, 0.0);  // no dropout
    par.dropout = 0.1f;
    const RankCost step = predict_gpt_ranks(c, 3, 1, GridShape{}, true, par)[0];
    EXPECT_DOUBLE_EQ(step.random_draws, (2 + 4 * 2 + (recompute ? 2 * 2 : 0)) * mask) << recompute;
    EXPECT_GT(step.stream_bytes, 0.0);
  }
}

// The GPT's plan holds, kind by kind, what a real run of one step holds on one rank (every token
// id is held there, as the dry run assumes for the one-hot embedding matrices).
TEST(DryRun, GptPlanHoldsWhatTrainingHoldsByKind) {
  GptTrainConfig cfg;
  cfg.model.layers = 2;
  cfg.model.heads = 2;
  cfg.model.embed = 16;
  cfg.model.block = 8;
  cfg.model.vocab = 11;
  cfg.batch = 3;
  cfg.iters = 1;
  cfg.eval_every = 0;
  for (int stage : {0, 3}) {
    SCOPED_TRACE("ZeRO-" + std::to_string(stage));
    cfg.zero_stage = stage;
    TokenCorpus corpus;
    corpus.vocab = 11;
    for (int k = 0; k < 200; ++k) corpus.train.push_back(k % 11);
    corpus.val = corpus.train;
    auto be = make_cpu_backend(1);
    auto grid = ProcessGrid::single();
    GptTrainer trainer(corpus, cfg, *be, *grid);
    trainer.step();
    const RankCost plan =
        predict_gpt_ranks(cfg.model, cfg.batch, 1, GridShape{}, true, GptParallel{1, stage, cfg.bucket_mb})[0];
    EXPECT_EQ(plan.memory_bytes, static_cast<double>(be->peak_bytes()));
    for (int k = 0; k < kMemoryKinds; ++k)
      EXPECT_EQ(plan.memory_by_kind[static_cast<std::size_t>(k)], static_cast<double>(be->peak_bytes(MemoryKind(k))))
          << memory_kind_name(MemoryKind(k));
    EXPECT_GT(plan.memory_by_kind[static_cast<int>(MemoryKind::Parameters)], 0.0);
    EXPECT_GT(plan.gemm_flops, 0.0);
  }
}

}  // namespace
}  // namespace plexus

namespace plexus {
namespace {

// Every rank's own dry run of a GPT step, as src/plan/gpt_plan.cpp runs its representatives.
struct StepSetup {
  GptConfig model;
  index_t batch = 12;
  int grad_accum = 1;
  bool gather_weights = true;  // false: an evaluation before the step (weights gathered already)
  GptParallel par;             // (its dropout the run's)
};

GptTrainConfig train_config(const StepSetup& s) {
  GptTrainConfig cfg;
  cfg.model = s.model;
  cfg.batch = s.batch;
  cfg.grad_accum = s.grad_accum;
  cfg.iters = 1;
  cfg.eval_every = 0;
  cfg.eval_iters = 1;
  cfg.zero_stage = s.par.zero;
  cfg.bucket_mb = s.par.bucket_mb;
  cfg.precision = s.par.precision;
  cfg.dropout = s.par.dropout;
  return cfg;
}

TokenCorpus corpus_for(const GptConfig& c) {
  TokenCorpus corpus;
  corpus.vocab = c.vocab;
  corpus.train.assign(static_cast<std::size_t>(c.block + 1), 0);
  corpus.val = corpus.train;
  return corpus;
}

// The rank's step dry-run whole (`measure`: the DryRun, or a ZeroRecorder that records it).
template <class Measure>
RankCost step(const StepSetup& s, DryRun& run, Measure& measure) {
  const TokenCorpus corpus = corpus_for(s.model);
  GptTrainer trainer(corpus, train_config(s), run.backend(), run.grid());
  if (!s.gather_weights) trainer.evaluate();
  measure.measure();
  trainer.step();
  return measure.measure();
}

RankCost alone(const StepSetup& s, GridShape g, int rank) {
  DryRun run(g, s.par.dp, rank, s.par.transport);
  return step(s, run, run);
}

RunRecord record(const StepSetup& s, GridShape g, int rank) {
  DryRun run(g, s.par.dp, rank, s.par.transport);
  ZeroRecorder recorder(run);
  step(s, run, recorder);
  return recorder.take();
}

RankCost gpt_rank_alone(const GptConfig& c, index_t batch, GridShape g, const GptParallel& par, int rank) {
  StepSetup s;
  s.model = c;
  s.batch = batch;
  s.par = par;
  return alone(s, g, rank);
}

void expect_same_cost(const RankCost& a, const RankCost& b, const std::string& what) {
  EXPECT_EQ(a.bytes, b.bytes) << what;
  EXPECT_EQ(a.calls, b.calls) << what;
  EXPECT_EQ(a.gemm_flops, b.gemm_flops) << what;
  EXPECT_EQ(a.spmm_flops, b.spmm_flops) << what;
  EXPECT_EQ(a.stream_bytes, b.stream_bytes) << what;
  EXPECT_EQ(a.random_draws, b.random_draws) << what;
  EXPECT_EQ(a.memory_bytes, b.memory_bytes) << what;
  EXPECT_EQ(a.memory_by_kind, b.memory_by_kind) << what;
}

// ZeRO replicas share a dry run when their blocks meet the optimizer's segments alike: the
// shared result is each replica's own, on blocks that straddle tensors and buckets (small
// buckets, BF16, both transports), and uneven batches over the replicas.
// Sequence parallelism on a grid with G_y = 4 (1x4x1, the benchmark's baby GPT): every
// rank's peak activation bytes at most 1.2/4 of the largest without it (issue 48's bound; the
// plan is what training measures, GptPlanHoldsWhatTrainingHoldsByKind), and the logits split
// over Y: the LM head's output [rows × vocab] is no longer held whole on each Y rank.
TEST(DryRun, SequenceParallelismHoldsAtMost1Point2OverGyOfTheActivations) {
  GptConfig c;  // (its defaults: the baby GPT, 4 layers, 4 heads, embed 128, block 64, vocab 65)
  const auto largest = [&](bool sp) {
    c.sequence_parallel = sp;
    double most = 0;
    for (const RankCost& r : predict_gpt_ranks(c, 8, 1, GridShape{1, 4, 1}))
      most = std::max(most, r.memory_by_kind[static_cast<int>(MemoryKind::Activations)]);
    return most;
  };
  const double without = largest(false), with = largest(true);
  EXPECT_LE(with, 1.2 / 4 * without) << with << " of " << without;
  EXPECT_GT(with, 0.2 * without);  // (a plan that lost the blocks' activations would pass the bound)
}

TEST(DistinctRuns, ZeroReplicasSharingARunCostWhatEachWouldAlone) {
  GptConfig c;
  c.layers = 1;
  c.heads = 2;
  c.embed = 8;
  c.block = 4;
  c.vocab = 7;
  for (int stage : {1, 2, 3})
    for (Transport t : {Transport::Mpi, Transport::Nccl})
      for (Precision p : {Precision::FP32, Precision::BF16}) {
        const GptParallel par{12, stage, 0.0003, p, t};
        const GridShape g{1, 2, 1};
        const std::string what = "ZeRO-" + std::to_string(stage) + " " + transport_name(t);
        const std::vector<RankCost> shared = predict_gpt_ranks(c, 13, 1, g, true, par);
        ASSERT_EQ(shared.size(), 24u);
        for (int rank = 0; rank < 24; ++rank)
          expect_same_cost(shared[static_cast<std::size_t>(rank)], gpt_rank_alone(c, 13, g, par, rank),
                           what + " rank " + std::to_string(rank));
      }
}

// The GPT plan keys a rank by its layout in three parts, each keyed once per pair of coordinates
// (heads: x, z; embedding: y, z; sequences: z, d; src/plan/gpt_plan.cpp), and looks the rank's
// class up from them. On every grid of 4 and 6 ranks, one replica and two, each ZeRO stage, over sizes
// that split unevenly on every axis (heads and positions over X, the embedding over Y, the
// sequences over Z and the replicas): each rank's share of the runs is what it costs alone.
// With sequence parallelism too (a rank's sequences split again over X and Y).
TEST(DistinctRuns, GptRanksSharingARunCostWhatEachWouldAloneOnEveryGrid) {
  int configs = 0;
  for (const int ranks : {4, 6})
  for (const bool sp : {false, true}) {
    GptConfig c;
    c.sequence_parallel = sp;
    c.layers = 1;
    c.heads = ranks == 4 ? 4 : 2;
    c.embed = ranks == 4 ? 12 : 10;
    c.block = 5;
    c.vocab = 7;
    for (const GridShape g : all_grids(ranks))
      for (int dp : {1, 2})
        for (int stage = 0; stage <= (dp > 1 ? 3 : 0); ++stage)
          for (const index_t batch : {8, 9}) {  // sequences even over Z and the replicas, and not
            const GptParallel par{dp, stage, 0.0002, Precision::FP32, Transport::Mpi};
            const std::string what = g.str() + " x" + std::to_string(dp) + " ZeRO-" + std::to_string(stage) +
                                     " batch " + std::to_string(batch) + (sp ? " sequence-parallel" : "");
            const std::vector<RankCost> shared = predict_gpt_ranks(c, batch, 1, g, true, par);
            ASSERT_EQ(shared.size(), static_cast<std::size_t>(ranks * dp));
            for (int rank = 0; rank < ranks * dp; ++rank)
              expect_same_cost(shared[static_cast<std::size_t>(rank)], gpt_rank_alone(c, batch, g, par, rank),
                               what + " rank " + std::to_string(rank));
            ++configs;
          }
  }
  EXPECT_EQ(configs, (6 + 9) * 5 * 2 * 2);
}

// Every kind (with the options that change what its layers hold) on every grid of 6 and 8 ranks,
// over sizes that split evenly (where only a kind's own ranges tell two ranks apart) and
// unevenly: each rank's share of the plan's deduplicated runs is what the rank costs dry-run
// alone (src/plan/gnn_plan.hpp). A size a layer holds that neither the common key nor its
// kind's rank_key names would give two different ranks one run.
TEST(DistinctRuns, EveryGnnRankSharingARunCostsWhatItWouldAlone) {
  const std::vector<std::pair<std::string, GnnSpec>> kinds = {
      {"gcn", GnnSpec("gcn")},
      {"sage", GnnSpec("sage").set("normalize", true)},
      {"gin", GnnSpec("gin")},
      {"gin trained eps", GnnSpec("gin").set("train-eps", true)},
      {"gat", GnnSpec("gat").set("heads", 2).set("out-heads", 2)},
      {"appnp", GnnSpec("appnp").set("steps", 2)},
  };
  int configs = 0;
  for (const auto& [name, model] : kinds)
    for (const index_t n : {12, 37})
      for (const index_t f : {3, 7})
        for (const index_t c : {2, 5})
          for (const int layers : {1, 3})
            for (const int ranks : {6, 8})
              for (const GridShape g : all_grids(ranks))
                for (const CommVariant v : {CommVariant::Baseline, CommVariant::RsAg}) {
                  ProblemSize p;
                  p.num_nodes = n;
                  p.nnz = 4 * n;
                  p.num_features = f;
                  p.num_classes = c;
                  p.config.model = model;
                  p.config.layers = layers;
                  p.config.hidden = 4;  // (gat: 2 heads of 2)
                  p.config.comm_variant = v;
                  p.config.shard_adj = n == 12 && name != "gat";  // (GAT holds its blocks whole)
                  const std::string what = name + " N " + std::to_string(n) + " F " + std::to_string(f) + " C " +
                                           std::to_string(c) + " L " + std::to_string(layers) + " on " + g.str() + " " +
                                           comm_variant_name(v);
                  const std::vector<RankCost> first = predict_ranks(p, g, true), steady = predict_ranks(p, g, false);
                  for (int rank = 0; rank < g.size(); ++rank) {
                    const RankEpochs alone = dry_run_gnn_rank(p, g, rank);
                    expect_same_cost(first[static_cast<std::size_t>(rank)], alone.first, what + " rank " + std::to_string(rank));
                    expect_same_cost(steady[static_cast<std::size_t>(rank)], alone.steady,
                                     what + " rank " + std::to_string(rank));
                  }
                  ++configs;
                }
  EXPECT_EQ(configs, 6 * 2 * 2 * 2 * 2 * (9 + 10) * 2);
}

// The size of a plan at the sizes the docs allow, counted rather than timed: a ZeRO plan of
// 4,096 replicas dry-runs a few ranks per segment of the optimizer's flat space, not one per
// replica (which made `plan gpt --ranks 65536` quadratic).
TEST(DistinctRuns, ZeroReplicasOfSmallBlocksShareFewDryRuns) {
  const GptConfig c;  // plan gpt's default model
  for (int stage : {1, 3}) {
    const std::size_t before = DryRun::started();
    const std::vector<RankCost> ranks =
        predict_gpt_ranks(c, 12, 1, GridShape{}, true, GptParallel{4096, stage, 25.0, Precision::FP32, Transport::Mpi});
    const std::size_t runs = DryRun::started() - before;
    EXPECT_EQ(ranks.size(), 4096u);
    EXPECT_LT(runs, 400u) << "ZeRO-" << stage << ": " << runs << " dry runs for 4096 replicas";
  }
}

// ---- a ZeRO replica's dry run assembled from its layout's record (src/plan/zero_replay.hpp):
// the layout's first rank recorded at one ZeRO stage, every replica of it at every stage
// replayed and merged, against each rank's own dry run at that stage, field by field and bit for
// bit; a merge of calls that differ refused; and plan gpt, which records once per grid for its
// four stages, giving each stage the plan that stage's own runs give.

GptConfig small_model(bool recompute) {
  GptConfig c;
  c.layers = 2;
  c.heads = 2;
  c.embed = 8;
  c.block = 4;
  c.vocab = 7;
  c.recompute = recompute;
  return c;
}

// Recorded at replica 0 at ZeRO-1 or ZeRO-3, every replica at every stage (0-3): what it costs
// alone. Over grids that split the heads, the embedding and the sequences, 2 and 3 replicas,
// FP32 with MPI's accounting and BF16 with NCCL's, small buckets (several per unit), gradient
// accumulation, an evaluation before the step, dropout and recomputation.
TEST(ZeroReplay, EveryReplicaAtEveryStageFromOneRecordCostsWhatItWouldAlone) {
  int checked = 0;
  for (const GridShape g : {GridShape{1, 2, 1}, GridShape{2, 1, 1}, GridShape{1, 1, 2}})
    for (const int dp : {2, 3})
      for (const int recorded_stage : {1, 3})
        for (const int variant : {0, 1, 2, 3}) {
          StepSetup s;
          s.model = small_model(variant == 3);
          s.grad_accum = variant == 1 ? 2 : 1;
          s.gather_weights = variant != 2;
          const bool half = variant % 2 == 1;
          s.par = {dp, recorded_stage, 0.0003, half ? Precision::BF16 : Precision::FP32,
                   half ? Transport::Nccl : Transport::Mpi, variant == 3 ? 0.1f : 0.0f};
          for (int first = 0; first < g.size(); ++first) {  // replica 0's ranks: each a layout
            const RunRecord rec = record(s, g, first);
            for (int stage = 0; stage <= 3; ++stage)
              for (int d = 0; d < dp; ++d) {
                const int rank = d * g.size() + first;
                StepSetup at = s;
                at.par.zero = stage;
                ZeroOptions options = rec.options;
                options.stage = stage;
                const RankCost merged = stage == recorded_stage && d == 0
                                            ? merge_runs(rec, rec.own)
                                            : replay_replica(rec, options, g, dp, rank, s.par.transport);
                expect_same_cost(merged, alone(at, g, rank),
                            g.str() + " x" + std::to_string(dp) + " recorded at ZeRO-" + std::to_string(recorded_stage) +
                                " variant " + std::to_string(variant) + ": rank " + std::to_string(rank) +
                                " at ZeRO-" + std::to_string(stage));
                ++checked;
              }
          }
        }
  EXPECT_EQ(checked, 3 * 2 * 4 * 2 * 4 * (2 + 3));  // grids, recorded stages, variants, ranks, stages, replicas
}

// The recorded rank's optimizer replayed at its own stage is what the record saw it do, call by
// call (setup included: the stores of the initial values, which no step cost shows).
TEST(ZeroReplay, AReplayOfTheRecordedRankIsItsRecordCallByCall) {
  for (const int stage : {1, 2, 3})
    for (const Precision p : {Precision::FP32, Precision::BF16}) {
      StepSetup s;
      s.model = small_model(false);
      s.par = {3, stage, 0.0003, p, Transport::Mpi, 0.0f};
      const GridShape g{1, 1, 2};
      for (int rank = 0; rank < 3 * g.size(); ++rank) {
        const RunRecord rec = record(s, g, rank);
        const OptimizerRun replay = replay_optimizer(rec, rec.options, g, 3, rank, Transport::Mpi);
        const std::string what = "ZeRO-" + std::to_string(stage) + (p == Precision::BF16 ? " bf16" : "") + " rank " +
                                 std::to_string(rank);
        ASSERT_EQ(replay.calls.size(), rec.own.calls.size()) << what;
        for (std::size_t c = 0; c < replay.calls.size(); ++c) {
          const CallPiece &a = replay.calls[c], &b = rec.own.calls[c];
          const std::string call = what + " call " + std::to_string(c);
          EXPECT_EQ(a.call, b.call) << call;
          EXPECT_EQ(a.stream_bytes, b.stream_bytes) << call;
          EXPECT_EQ(a.d_steps, b.d_steps) << call;
          EXPECT_EQ(a.live_end, b.live_end) << call;
          EXPECT_EQ(a.peak, b.peak) << call;
          EXPECT_EQ(std::vector<double>(replay.d_bytes.begin() + static_cast<std::ptrdiff_t>(a.d_first),
                                        replay.d_bytes.begin() + static_cast<std::ptrdiff_t>(a.d_end)),
                    std::vector<double>(rec.own.d_bytes.begin() + static_cast<std::ptrdiff_t>(b.d_first),
                                        rec.own.d_bytes.begin() + static_cast<std::ptrdiff_t>(b.d_end)))
              << call;
        }
      }
    }
}

// A merge of an optimizer whose calls are not the layout's (another call, one missing) is
// refused rather than summed.
TEST(ZeroReplay, MergeRefusesCallsThatDiffer) {
  StepSetup s;
  s.model = small_model(false);
  s.par = {2, 3, 0.0003, Precision::FP32, Transport::Mpi, 0.0f};
  const RunRecord rec = record(s, GridShape{1, 2, 1}, 0);
  ASSERT_GT(rec.own.calls.size(), 4u);
  EXPECT_NO_THROW(merge_runs(rec, rec.own));
  OptimizerRun other = rec.own;
  other.calls[3].call.unit += 1;
  EXPECT_THROW(merge_runs(rec, other), std::logic_error);
  other = rec.own;
  other.calls.pop_back();
  EXPECT_THROW(merge_runs(rec, other), std::logic_error);
}

// plan gpt takes its records once per grid for the four stages: each stage's plan is what that
// stage's own runs give (plan_gpt_grid records at the stage it plans).
TEST(ZeroReplay, PlanGptGivesEachStageItsOwnPlan) {
  GptConfig c = small_model(false);
  c.heads = 4;
  c.embed = 12;
  const MachineModel machine;
  for (const int ranks : {6, 8})
    for (const Precision p : {Precision::FP32, Precision::BF16}) {
      const Transport t = p == Precision::BF16 ? Transport::Nccl : Transport::Mpi;
      const std::vector<GridPlan> plans = plan_gpt(c, 9, 2, ranks, machine, 0, 0.0004, p, t, 0.1f);
      int stages_above_0 = 0;
      for (const GridPlan& plan : plans) {
        const GridPlan own = plan_gpt_grid(c, 9, 2, plan.grid, machine, {plan.dp, plan.zero, 0.0004, p, t, 0.1f});
        const std::string what = std::to_string(ranks) + " ranks: " + plan.grid.str() + " x" + std::to_string(plan.dp) +
                                 " ZeRO-" + std::to_string(plan.zero);
        EXPECT_EQ(plan.total_seconds, own.total_seconds) << what;
        EXPECT_EQ(plan.comm_seconds, own.comm_seconds) << what;
        EXPECT_EQ(plan.compute_seconds, own.compute_seconds) << what;
        EXPECT_EQ(plan.memory_bytes, own.memory_bytes) << what;
        EXPECT_EQ(plan.memory_by_kind, own.memory_by_kind) << what;
        EXPECT_EQ(plan.steady.bytes, own.steady.bytes) << what;
        EXPECT_EQ(plan.latency_steps, own.latency_steps) << what;
        stages_above_0 += plan.zero > 0;
      }
      EXPECT_GT(stages_above_0, 0);
    }
}

}  // namespace
}  // namespace plexus
