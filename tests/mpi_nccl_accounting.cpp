// NCCL's byte accounting against the analytic model on the engine's real collectives, without
// a GPU (part of mpi_test_comm, run under mpirun on 1 to 4 ranks).
//
// The grid gets device communicators (ProcessGrid::use_device_communicators) that move the data
// over the axis's MPI communicator but count bytes exactly as the NCCL communicator does: with
// the same functions, ring_all_reduce_bytes and schedule_uneven(...).rank_bytes
// (src/comm/nccl_schedule.hpp). A GCN trained on a graph whose sizes do not divide by the grid
// then reports per-axis bytes that must equal predict_epoch(..., Transport::Nccl) exactly, on
// every grid of the job's ranks: the model mirrors every collective and every padded or grouped
// choice. The data the wrappers forward to MPI is counted there too; it is subtracted.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "comm/forwards_host_collectives.hpp"
#include "comm/nccl_schedule.hpp"
#include "plexus/backend.hpp"
#include "plexus/comm.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plan/plan.hpp"
#include "plexus/gpt.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"
#include "plan/gpt_plan.hpp"

namespace plexus {
namespace {

class NcclAccounting final : public ForwardsHostCollectives<NcclAccounting> {
  template <class F>
  auto count(double bytes, const F& f) {
    stats_.calls += 1;
    stats_.bytes += bytes;
    const double before = host_.stats().bytes;
    struct Forwarded {  // adds what the host counted, also when f returns a request
      NcclAccounting& self;
      double before;
      ~Forwarded() { self.forwarded_ += self.host_.stats().bytes - before; }
    } guard{*this, before};
    return f();
  }
  template <class F>
  auto reduce_bytes(std::size_t n, std::size_t elem, const F& f) {
    return count(ring_all_reduce_bytes(size(), n, elem), f);
  }
  template <class F>
  auto uneven(const std::vector<std::size_t>& c, std::size_t elem, const F& f) {
    return count(schedule_uneven(c, elem).rank_bytes(c, rank(), elem), f);
  }

 public:
  explicit NcclAccounting(Communicator& host) : host_(host) {}
  int size() const override { return host_.size(); }
  int rank() const override { return host_.rank(); }
  double forwarded() const { return forwarded_; }
  void reset_stats() override {
    stats_ = {};
    forwarded_ = 0;
  }

  using ForwardsHostCollectives<NcclAccounting>::all_reduce;  // (the host one, over int64)
  void all_reduce(float* b, std::size_t n, ReduceOp op) override {
    reduce_bytes(n, sizeof(float), [&] { host_.all_reduce(b, n, op); });
  }
  void all_reduce(double* b, std::size_t n, ReduceOp op) override {
    reduce_bytes(n, sizeof(double), [&] { host_.all_reduce(b, n, op); });
  }
  void all_gather(const float* s, float* r, const std::vector<std::size_t>& c) override {
    uneven(c, sizeof(float), [&] { host_.all_gather(s, r, c); });
  }
  void all_gather(const std::int32_t* s, std::int32_t* r, const std::vector<std::size_t>& c) override {
    uneven(c, sizeof(std::int32_t), [&] { host_.all_gather(s, r, c); });
  }
  void reduce_scatter(const float* s, float* r, const std::vector<std::size_t>& c) override {
    uneven(c, sizeof(float), [&] { host_.reduce_scatter(s, r, c); });
  }
  std::unique_ptr<Request> iall_reduce(float* b, std::size_t n) override {
    return reduce_bytes(n, sizeof(float), [&] { return host_.iall_reduce(b, n); });
  }
  std::unique_ptr<Request> ireduce_scatter(const float* s, float* r, const std::vector<std::size_t>& c) override {
    return uneven(c, sizeof(float), [&] { return host_.ireduce_scatter(s, r, c); });
  }
  std::unique_ptr<Request> iall_gather(const float* s, float* r, const std::vector<std::size_t>& c) override {
    return uneven(c, sizeof(float), [&] { return host_.iall_gather(s, r, c); });
  }
  std::unique_ptr<Request> iall_reduce(bf16* b, std::size_t n) override {
    return reduce_bytes(n, sizeof(bf16), [&] { return host_.iall_reduce(b, n); });
  }
  std::unique_ptr<Request> ireduce_scatter(const bf16* s, bf16* r, const std::vector<std::size_t>& c) override {
    return uneven(c, sizeof(bf16), [&] { return host_.ireduce_scatter(s, r, c); });
  }
  std::unique_ptr<Request> iall_gather(const bf16* s, bf16* r, const std::vector<std::size_t>& c) override {
    return uneven(c, sizeof(bf16), [&] { return host_.iall_gather(s, r, c); });
  }
  // The host collectives run on the host communicator, as the NCCL communicator's do.
  Communicator& host() const { return host_; }

 private:
  Communicator& host_;
  double forwarded_ = 0;
};

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

TEST(NcclAccountingModel, EngineBytesEqualTheModelOnEveryGrid) {
  SbmOptions so;
  so.nodes = 101;  // prime: no grid splits the rows evenly
  so.classes = 5;
  so.features = 13;
  so.avg_degree = 6;
  const GraphData graph = generate_sbm(so);
  for (GridShape shape : all_grids(world_size())) {
    for (int layers : {2, 3}) {
      TrainConfig cfg;
      cfg.layers = layers;
      cfg.hidden = 7;
      cfg.epochs = 3;
      // A run over NCCL is a device backend's, whose sums are the communicator's all-reduces
      // (the plan under NCCL takes them so): this CPU stand-in's must be too.
      cfg.sparse_comm = SparseComm::Off;
      auto grid = ProcessGrid::from_mpi(shape);
      auto backend = make_cpu_backend(1);
      grid->use_device_communicators(*backend, [](Communicator& host) { return std::make_unique<NcclAccounting>(host); });
      ProblemSize p;
      p.num_nodes = graph.num_nodes;
      p.nnz = graph.num_edges();
      p.num_features = graph.num_features;
      p.num_classes = graph.num_classes;
      p.config = cfg;
      p.transport = Transport::Nccl;
      int checked = 0;
      train_gnn(graph, cfg, *backend, *grid, [&](const EpochMetrics& m) {
        std::array<double, 3> forwarded{};
        for (Axis a : {Axis::X, Axis::Y, Axis::Z})
          if (auto* acc = dynamic_cast<NcclAccounting*>(&grid->comm(a))) forwarded[static_cast<int>(a)] = acc->forwarded();
        MPI_Allreduce(MPI_IN_PLACE, forwarded.data(), 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        const AxisBytes want = predict_epoch(p, shape, m.epoch == 0);
        for (int a = 0; a < 3; ++a) {
          const double got = m.comm_bytes[a] - forwarded[a];
          EXPECT_NEAR(got, want.bytes[a], 1e-9 * std::max(1.0, want.bytes[a]))
              << shape.str() << " layers " << layers << " epoch " << m.epoch << " axis " << a;
        }
        ++checked;
      });
      EXPECT_EQ(checked, 3);
    }
  }
}

// The same for a GPT with data parallelism and every ZeRO stage: small buckets over a flat
// parameter vector that does not split evenly over D make the bucket collectives uneven.
TEST(NcclAccountingModel, GptStepBytesEqualTheModelForEveryZeroStage) {
  const int world = world_size();
  TokenCorpus corpus;
  corpus.vocab = 13;
  for (int k = 0; k < 400; ++k) corpus.train.push_back((k * 7 + k / 5) % 13);
  corpus.val = corpus.train;
  for (int dp = 1; dp <= world; ++dp) {
    if (world % dp) continue;
    for (GridShape shape : all_grids(world / dp)) {
      for (int stage = 0; stage <= (dp > 1 ? 3 : 0); ++stage) {
        for (Precision precision : {Precision::FP32, Precision::BF16}) {
          GptTrainConfig cfg;
          cfg.model = {1, 2, 10, 8, 13, true};
          cfg.batch = 3;
          cfg.iters = 2;
          cfg.eval_every = 0;
          cfg.zero_stage = stage;
          cfg.bucket_mb = 300.0 / (1 << 20);  // 300 bytes: many buckets
          cfg.precision = precision;
          auto grid = ProcessGrid::from_mpi(shape, dp);
          auto backend = make_cpu_backend(1);
          grid->use_device_communicators(*backend,
                                         [](Communicator& host) { return std::make_unique<NcclAccounting>(host); });
          const GptParallel par{dp, stage, cfg.bucket_mb, precision, Transport::Nccl};
          const AxisBytes want = predict_gpt_step(cfg.model, cfg.batch, cfg.grad_accum, shape, true, par);
          int checked = 0;
          const auto on_step = [&](const GptStepMetrics& m) {
            std::array<double, 4> forwarded{};
            for (Axis a : kAllAxes)
              if (auto* acc = dynamic_cast<NcclAccounting*>(&grid->comm(a))) forwarded[static_cast<int>(a)] = acc->forwarded();
            MPI_Allreduce(MPI_IN_PLACE, forwarded.data(), 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            for (int a = 0; a < 4; ++a)
              EXPECT_NEAR(m.comm_bytes[a] - forwarded[a], want.bytes[a], 1e-9 * std::max(1.0, want.bytes[a]))
                  << shape.str() << " dp " << dp << " zero " << stage << " bf16 " << (precision == Precision::BF16)
                  << " step " << m.iter << " axis " << a;
            ++checked;
          };
          GptTrainer(corpus, cfg, *backend, *grid).run(on_step);
          EXPECT_EQ(checked, 2);
        }
      }
    }
  }
}

// Host values never reach a device communicator once the call sites take host_comm: the
// accounting wrapper above sees the same traffic as the model, so here it is enough that
// host_comm is the axis's host communicator and comm a different object on split axes.
TEST(NcclAccountingModel, HostCommIsTheAxisHostCommunicator) {
  auto grid = ProcessGrid::from_mpi(GridShape{world_size(), 1, 1});
  auto backend = make_cpu_backend(1);
  Communicator* before = &grid->comm(Axis::X);
  grid->use_device_communicators(*backend, [](Communicator& host) { return std::make_unique<NcclAccounting>(host); });
  EXPECT_EQ(&grid->host_comm(Axis::X), world_size() > 1 ? before : &grid->comm(Axis::X));
  EXPECT_EQ(dynamic_cast<NcclAccounting*>(&grid->comm(Axis::X)) != nullptr, world_size() > 1);
  double one = 1;
  grid->host_comm(Axis::X).all_reduce(&one, 1, ReduceOp::Sum);
  EXPECT_EQ(one, world_size());
}

}  // namespace
}  // namespace plexus
