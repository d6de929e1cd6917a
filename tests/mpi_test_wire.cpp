// --wire int8|int4 under MPI (mpi_test_sums, on 1 to 4, 6 and 8 ranks): on every grid shape
// of the rank count, every GNN kind and GCN layer order trains with quantised activation sums
// near the fp32 losses in either form the sums take (the row-sparse sums' rows form, taken where
// it moves fewer bytes, or their dense one), the rows form never moving more than the dense; their
// activation sums moving at most half of fp32's bytes and the rest as fp32; the same run twice
// gives the same bits, with or without recomputation; on one rank nothing is rounded. (That the
// forms round alike where their scales cover the same rows: tests/test_row_sparse_sum.cpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "plan/plan.hpp"  // all_grids
#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "mpi_grid_runs.hpp"

namespace plexus {
namespace {

using testing::world_size;

// 211 nodes of degree 2.5: blocks of a few ranks' columns leave rows empty (the rows form).
const GraphData& graph() {
  static const GraphData g = [] {
    SbmOptions o;
    o.nodes = 211;
    o.classes = 4;
    o.features = 9;
    o.avg_degree = 2.5;
    o.seed = 37;
    return generate_sbm(o);
  }();
  return g;
}

using Case = testing::KindRunCase;

TrainConfig config(const Case& c, Wire wire, SparseComm sums) {
  TrainConfig t = testing::kind_run_config(c, 3);
  t.wire = wire;
  t.sparse_comm = sums;
  return t;
}

struct WireRun {
  std::vector<double> losses;
  ModelState state;
  double bytes = 0;       // every epoch's, every axis's
  double activation = 0;  // of them, the activation sums'
};

WireRun train(ProcessGrid& grid, const TrainConfig& cfg) {
  auto be = make_cpu_backend(1);
  GnnTrainer t(graph(), cfg, *be, grid);
  WireRun r;
  for (int e = 0; e < cfg.epochs; ++e) {
    const EpochMetrics m = t.epoch();
    r.losses.push_back(m.loss);
    for (const double b : m.comm_bytes) r.bytes += b;
    r.activation += m.activation_bytes;
  }
  r.state = t.state();
  return r;
}

void expect_same_bits(const WireRun& got, const WireRun& want, const std::string& what) {
  testing::expect_same_training(got.losses, got.state, want.losses, want.state, what);
}

TEST(Wire, EveryKindOnEveryGridQuantisesInEitherFormNearFp32) {
  const int p = world_size();
  for (const Case& c : testing::every_kind_case())
    for (const GridShape& shape : all_grids(p)) {
      auto grid = ProcessGrid::from_mpi(shape);
      const std::string what = c.name + " on " + shape.str();
      const WireRun fp32 = train(*grid, config(c, Wire::Fp32, SparseComm::Dense));
      const WireRun dense = train(*grid, config(c, Wire::Int8, SparseComm::Dense));
      const WireRun rows = train(*grid, config(c, Wire::Int8, SparseComm::Rows));
      for (std::size_t e = 0; e < fp32.losses.size(); ++e)
        for (const WireRun* run : {&dense, &rows}) {
          EXPECT_TRUE(std::isfinite(run->losses[e])) << what;
          EXPECT_NEAR(run->losses[e], fp32.losses[e], 0.02 * std::fabs(fp32.losses[e])) << what << " epoch " << e + 1;
        }
      // The rows form where it moves fewer bytes: never more than the dense form in all.
      EXPECT_LE(rows.activation, dense.activation) << what;
      if (shape.size() == 1) {  // nothing rounded on one rank
        expect_same_bits(dense, fp32, what + " one rank");
        EXPECT_EQ(fp32.activation, 0.0) << what;
        continue;
      }
      // The activation sums move fewer bytes — at most half of fp32's, about cols for 4·cols a
      // row, but for GAT's attention scores, which stay fp32 — and the rest of the traffic is fp32's
      // to the byte.
      EXPECT_GT(fp32.activation, 0.0) << what;
      EXPECT_LT(dense.activation, fp32.activation) << what;
      if (c.model.kind() != "gat") {
        EXPECT_LE(dense.activation, 0.5 * fp32.activation) << what;
      }
      // (to rounding: a ring's count of 3 ranks is not a whole number)
      EXPECT_NEAR(dense.bytes - dense.activation, fp32.bytes - fp32.activation, 1e-9 * fp32.bytes) << what;
    }
}

TEST(Wire, Int4AndChunksAndVariantsOnTheLastGrid) {
  const int p = world_size();
  auto grid = ProcessGrid::from_mpi(all_grids(p).back());
  for (const Case& c : testing::every_kind_case()) {
    const std::string what = c.name + " on " + all_grids(p).back().str();
    const WireRun fp32 = train(*grid, config(c, Wire::Fp32, SparseComm::Dense));
    const WireRun int4 = train(*grid, config(c, Wire::Int4, SparseComm::Dense));
    expect_same_bits(train(*grid, config(c, Wire::Int4, SparseComm::Dense)), int4, what + " int4 again");
    // Without --sparse-comm a quantised sum takes the dense form all the same.
    expect_same_bits(train(*grid, config(c, Wire::Int4, SparseComm::Off)), int4, what + " int4, off vs dense");
    for (std::size_t e = 0; e < fp32.losses.size(); ++e)
      EXPECT_NEAR(int4.losses[e], fp32.losses[e], 0.1 * std::fabs(fp32.losses[e])) << what << " epoch " << e + 1;
    // The rows form, in chunks, under rs-ag-reuse: the same bits again when the backward pass
    // recomputes the forward one (its draws a function of what is rounded), near fp32's.
    TrainConfig on = config(c, Wire::Int8, SparseComm::Rows);
    on.comm_variant = CommVariant::RsAgReuse;
    if (c.model.kind() != "gat") on.agg_chunks = 3;
    TrainConfig recompute = on;
    recompute.recompute = true;
    const WireRun chunked = train(*grid, on);
    expect_same_bits(train(*grid, recompute), chunked, what + " int8 chunked, rs-ag-reuse, recompute");
    for (std::size_t e = 0; e < fp32.losses.size(); ++e)
      EXPECT_NEAR(chunked.losses[e], fp32.losses[e], 0.02 * std::fabs(fp32.losses[e])) << what << " epoch " << e + 1;
  }
}

TEST(Wire, RefusedWithBf16) {
  TrainConfig t = config(testing::every_kind_case()[0], Wire::Int8, SparseComm::Off);
  t.precision = Precision::BF16;
  EXPECT_THROW(validate(t), InputError);
  t.wire = Wire::Bf16;
  t.precision = Precision::FP32;
  EXPECT_THROW(validate(t), InputError);
}

}  // namespace
}  // namespace plexus
