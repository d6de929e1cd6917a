// What only the CUDA backend has, checked where a GPU is visible (skipped elsewhere): the
// factory, cuBLAS's reduced-precision GEMM modes, and whole training runs against the CPU
// backend. The kernels themselves are tested on every backend, this one included, by the
// backend-parameterised suite in tests/test_kernels.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "kernel_test_util.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/comm.hpp"
#include "plexus/io.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"

namespace plexus::test {
namespace {

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible";
    gpu = make_cuda_backend(0);
    ref = make_reference_backend();
  }
  std::unique_ptr<Backend> gpu, ref;
  std::mt19937_64 rng{12345};
};

// Runs everywhere: without a usable GPU, cuda_available() says so (without aborting) and the
// factory throws instead of handing out a broken backend.
TEST(CudaAvailability, FactoryThrowsWithoutDevice) {
  if (cuda_available()) {
    EXPECT_THROW(make_cuda_backend(1 << 20), std::runtime_error);  // no such device index
    EXPECT_THROW(make_cuda_backend(-1), std::runtime_error);
  } else {
    EXPECT_THROW(make_cuda_backend(0), std::runtime_error);
  }
}

// ---- gemm in reduced precision ------------------------------------------------------------------
// C = 1.25·op(A)·op(B) + beta·C with M, N, K = 257, 129, 65 and padded leading dimensions.
struct GemmCase {
  Trans ta, tb;
  float beta;
  static constexpr index_t M = 257, N = 129, K = 65;
  HostMat a, b, c;
  GemmCase(Trans ta_, Trans tb_, float beta_, std::mt19937_64& rng)
      : ta(ta_),
        tb(tb_),
        beta(beta_),
        a(ta == Trans::No ? random_mat(rng, M, K, 3) : random_mat(rng, K, M, 3)),
        b(tb == Trans::No ? random_mat(rng, K, N, 5) : random_mat(rng, N, K, 5)),
        c(random_mat(rng, M, N, 2)) {}
  HostMat run(Backend& be) const {
    DevMat da(be, a), db(be, b), dc(be, c);
    be.gemm(ta, tb, 1.25f, da.cview(), db.cview(), beta, dc.view());
    return dc.download();
  }
};

// ||got - want||_F / ||want||_F over the logical elements.
double relative_frobenius(const HostMat& got, const HostMat& want) {
  double err = 0.0, norm = 0.0;
  for (index_t i = 0; i < got.rows; ++i)
    for (index_t j = 0; j < got.cols; ++j) {
      const double g = got.at(i, j), w = want.at(i, j);
      err += (g - w) * (g - w);
      norm += w * w;
    }
  return std::sqrt(err / norm);
}

// Reduced matmul precision: cuBLAS rounds A and B to bf16 (8-bit significand: relative error up
// to 2^-9 per input) or tf32 (11-bit: 2^-12) and accumulates in fp32. The K product errors have
// random signs, so they grow like sqrt(K) as the sum itself does: the expected relative error of
// C is about 2^-9·sqrt(2) ≈ 3e-3 for bf16 and 2^-12·sqrt(2) ≈ 3.5e-4 for tf32, hence the upper
// bounds 1e-2 and 1.5e-3. Each must also be well above fp32's (~1e-7): the lower bounds show
// the reduced path really ran. FP32 is restored after.
TEST_F(CudaBackendTest, GemmReducedPrecisionWithinItsTolerance) {
  struct Mode {
    MatmulPrecision precision;
    double low, high;
  };
  for (const Mode mode : {Mode{MatmulPrecision::BF16, 1e-4, 1e-2}, Mode{MatmulPrecision::TF32, 1e-5, 1.5e-3}}) {
    for (const Trans ta : {Trans::No, Trans::Yes})
      for (const Trans tb : {Trans::No, Trans::Yes})
        for (const float beta : {0.0f, 0.75f}) {
          SCOPED_TRACE(::testing::Message() << (mode.precision == MatmulPrecision::BF16 ? "bf16" : "tf32")
                                            << " ta=" << (ta == Trans::Yes) << " tb=" << (tb == Trans::Yes)
                                            << " beta=" << beta);
          const GemmCase g(ta, tb, beta, rng);
          const HostMat want = g.run(*ref);
          gpu->set_matmul_precision(mode.precision);
          const HostMat got = g.run(*gpu);
          const double err = relative_frobenius(got, want);
          EXPECT_LE(err, mode.high);
          if (beta == 0.0f) {
            EXPECT_GE(err, mode.low) << "as accurate as fp32: the reduced path did not run";
          }
          EXPECT_EQ(got.at(0, GemmCase::N), kPad) << "padding overwritten";
          gpu->set_matmul_precision(MatmulPrecision::FP32);
          EXPECT_LE(relative_frobenius(g.run(*gpu), want), 1e-5) << "back to fp32";
        }
  }
}

// ---- whole training runs: Cora on the GPU against the CPU backend -----------------------------
// The same seed gives the same weights and, bit for bit, the same dropout masks on both
// backends; only summation orders differ (fp32 SpMM/GEMM, expf). So every epoch's training
// loss must agree to 1e-4 relative for the whole run, and the accuracies to within a few nodes.
struct CoraCase {
  int layers, epochs;
  index_t hidden;
  bool adamw;
};

TEST_F(CudaBackendTest, CoraTrainingMatchesCpuBackend) {
  const GraphData cora = read_graph_h5(std::string(PLEXUS_DATA_DIR) + "/cora.h5");
  auto cpu = make_cpu_backend(0);
  // The CLI's default (Kipf & Welling: 2 layers, hidden 16, 200 epochs), and a deeper, wider
  // model that takes the float4 SpMM path and 32-lane groups (hidden 64).
  for (const CoraCase& c : {CoraCase{2, 200, 16, false}, CoraCase{3, 100, 64, true}}) {
    SCOPED_TRACE("layers " + std::to_string(c.layers) + ", hidden " + std::to_string(c.hidden));
    TrainConfig cfg;
    cfg.layers = c.layers;
    cfg.hidden = c.hidden;
    cfg.epochs = c.epochs;
    cfg.adamw = c.adamw;
    auto grid_gpu = ProcessGrid::single(), grid_cpu = ProcessGrid::single(), grid_again = ProcessGrid::single();
    const TrainResult g = train_gnn(cora, cfg, *gpu, *grid_gpu);
    const TrainResult h = train_gnn(cora, cfg, *cpu, *grid_cpu);
    const TrainResult again = train_gnn(cora, cfg, *gpu, *grid_again);
    ASSERT_EQ(g.epochs.size(), static_cast<std::size_t>(c.epochs));
    ASSERT_EQ(h.epochs.size(), g.epochs.size());
    double worst = 0;
    int worst_epoch = -1;
    for (std::size_t e = 0; e < g.epochs.size(); ++e) {
      ASSERT_TRUE(std::isfinite(g.epochs[e].loss) && std::isfinite(h.epochs[e].loss)) << "epoch " << e;
      const double rel = std::fabs(g.epochs[e].loss - h.epochs[e].loss) / std::fabs(h.epochs[e].loss);
      if (rel > worst) worst = rel, worst_epoch = static_cast<int>(e);
      // The GPU is deterministic run to run: the same losses, bit for bit.
      EXPECT_EQ(g.epochs[e].loss, again.epochs[e].loss) << "epoch " << e;
    }
    EXPECT_LE(worst, 1e-4) << "worst relative loss difference at epoch " << worst_epoch;
    RecordProperty("worst_relative_loss_difference", std::to_string(worst));
    std::printf("[ cora    ] layers %d hidden %lld: worst |loss_gpu - loss_cpu| / loss_cpu = %.3g (epoch %d); "
                "final loss %.6f vs %.6f; test acc %.4f vs %.4f; best val %.4f vs %.4f\n",
                c.layers, static_cast<long long>(c.hidden), worst, worst_epoch, g.epochs.back().loss,
                h.epochs.back().loss, g.test_acc, h.test_acc, g.best_val_acc, h.best_val_acc);
    // Accuracy within noise: 1000 test and 500 validation nodes; 1.5 points is 15 test nodes.
    EXPECT_NEAR(g.test_acc, h.test_acc, 0.015);
    EXPECT_NEAR(g.best_val_acc, h.best_val_acc, 0.015);
    EXPECT_NEAR(g.epochs.back().train_acc, h.epochs.back().train_acc, 0.015);
    if (c.layers == 2) {
      EXPECT_GE(g.test_acc, 0.78);  // Kipf & Welling report 81.5 %
    }
  }
}


// ---- the NCCL communicator --------------------------------------------------------------------
// NCCL refuses two ranks on one GPU, so a one-GPU machine checks a communicator of one rank:
// creation (the id over the host communicator), the stream and event ordering (results are read
// back on the compute stream), event timing and the refusal of host buffers. Several ranks'
// padded and grouped schedules are checked without a GPU (tests/test_nccl_schedule.cpp,
// tests/mpi_nccl_accounting.cpp).
TEST_F(CudaBackendTest, NcclCommunicatorOfOneRank) {
  if (!nccl_available()) GTEST_SKIP() << "built without NCCL";
  auto host = make_self_communicator();
  auto nccl = make_nccl_communicator(*host, *gpu);
  EXPECT_EQ(nccl->size(), 1);
  const std::vector<float> x = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};
  Buffer<float> a(*gpu, x), b(*gpu, x.size());
  nccl->all_reduce(a.data(), x.size(), ReduceOp::Sum);
  EXPECT_EQ(a.to_host(), x);
  nccl->all_gather(a.data(), b.data(), {x.size()});
  EXPECT_EQ(b.to_host(), x);
  Buffer<float> c(*gpu, x.size());
  nccl->reduce_scatter(b.data(), c.data(), {x.size()});
  EXPECT_EQ(c.to_host(), x);
  auto req = nccl->iall_reduce(c.data(), x.size());
  req->wait();  // stream-ordered: the compute stream waits; the host does not
  EXPECT_EQ(c.to_host(), x);  // reads on the compute stream, after the collective
  EXPECT_TRUE(req->test());   // so the collective has finished by now (test() right after wait()
                              // could be false: flaky after a long test kept the GPU busy)
  EXPECT_EQ(nccl->stats().calls, 4u);
  EXPECT_EQ(nccl->stats().bytes, 0.0);  // one rank receives nothing
  EXPECT_GE(nccl->stats().seconds, 0.0);
  double host_value = 1.0;
  EXPECT_THROW(nccl->all_reduce(&host_value, 1, ReduceOp::Sum), std::logic_error);
  nccl->reset_stats();
  EXPECT_EQ(nccl->stats().calls, 0u);
}

}  // namespace
}  // namespace plexus::test
