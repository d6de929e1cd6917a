// Data parallelism and ZeRO on one process: memory accounting by kind and the memory budget,
// the ZeroOptimizer's storage, binding and AdamW step at every stage against plain Adam, and the
// analytic model of the bytes on the D axis. (D > 1 on real ranks: tests/mpi_test_gpt.cpp and
// tests/cli_gpt_dp.sh.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "comm/nccl_schedule.hpp"
#include "comm/recording_communicator.hpp"
#include "kernels/shape/shape_backend.hpp"
#include "models/gpt.hpp"
#include "optim/adam.hpp"
#include "optim/zero.hpp"
#include "plexus/error.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/shard.hpp"
#include "plan/gpt_plan.hpp"

namespace plexus {
namespace {

TEST(MemoryAccounting, BuffersCountByKindAndBudgetRefusesWithWhatDidNotFit) {
  auto be = make_cpu_backend(1);
  be->reset_peak();
  {
    MemoryScope scope(*be, MemoryKind::Optimizer, "Adam state");
    Buffer<float> m(*be, 1000);
    EXPECT_EQ(be->live_bytes(MemoryKind::Optimizer), 4000u);
    {
      MemoryScope inner(*be, MemoryKind::Workspace, "a bucket");
      Buffer<float> w(*be, 10);
      EXPECT_EQ(be->live_bytes(MemoryKind::Workspace), 40u);
    }
    Buffer<float> m2(*be, 500);  // the outer scope's kind again
    EXPECT_EQ(be->live_bytes(MemoryKind::Optimizer), 6000u);
  }
  EXPECT_EQ(be->live_bytes(MemoryKind::Optimizer), 0u);
  EXPECT_EQ(be->peak_bytes(MemoryKind::Optimizer), 6000u);
  EXPECT_EQ(be->peak_bytes(MemoryKind::Workspace), 40u);
  EXPECT_EQ(be->memory_kind(), MemoryKind::Activations);

  be->set_memory_limit(be->live_bytes() + 4096);
  Buffer<float> fits(*be, 1024);
  try {
    MemoryScope scope(*be, MemoryKind::Gradients, "gradients");
    Buffer<float> too_big(*be, 1);
    FAIL() << "the budget let a buffer past it";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "Backend::set_memory_limit(bytes)");
    EXPECT_NE(std::string(e.what()).find("of gradients (grad) does not fit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(be->live_bytes(MemoryKind::Gradients), 0u);  // a refused buffer leaves no count behind
}

// Three units of tensors of uneven sizes, some without decay, one replicated (owner false).
struct Toy {
  std::vector<std::vector<float>> value, grad;  // what the optimizer bound, read back
  std::vector<FlatTensor> tensors;
  std::vector<float*> bound_value, bound_grad;
  Toy() {
    const std::size_t sizes[] = {5, 3, 7, 1, 4, 6};
    const int units[] = {0, 0, 1, 1, 1, 2};
    bound_value.assign(6, nullptr);
    bound_grad.assign(6, nullptr);
    for (int k = 0; k < 6; ++k)
      tensors.push_back({sizes[k], units[k], k % 2 == 0, k != 3, [this, k](float* v, float* g) {
                           bound_value[static_cast<std::size_t>(k)] = v;
                           bound_grad[static_cast<std::size_t>(k)] = g;
                         }});
  }
};

// AdamW with weight decay, as the GPT trains.
AdamParams toy_adamw() {
  AdamParams hp;
  hp.decoupled = true;
  hp.weight_decay = 0.1f;
  return hp;
}

std::vector<float> rounded_to_bf16(std::vector<float> v) {
  for (float& x : v) x = bf16_to_float(float_to_bf16(x));
  return v;
}

// Normal initial values and gradients for the toy's tensors, and plain Adam over copies of them:
// what a ZeroOptimizer's steps are compared with.
struct ToyReference {
  std::vector<std::vector<float>> init, grads;
  std::vector<Buffer<float>> value, grad;
  std::unique_ptr<Adam> adam;
  ToyReference(Backend& be, const Toy& toy, const AdamParams& hp, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n;
    std::vector<ParamRef> refs;
    for (const FlatTensor& t : toy.tensors) {
      init.emplace_back();
      grads.emplace_back();
      for (std::size_t i = 0; i < t.size; ++i) {
        init.back().push_back(n(rng));
        grads.back().push_back(n(rng));
      }
      value.emplace_back(be, init.back());
      grad.emplace_back(be, grads.back());
      refs.push_back({value.back().data(), grad.back().data(), t.size, t.decay});
    }
    adam = std::make_unique<Adam>(be, refs, hp);
  }
  // Σ g² over the owned tensors of what the reference steps on.
  double grad_squared_norm(const Toy& toy) {
    double sum = 0;
    for (std::size_t k = 0; k < grad.size(); ++k)
      if (toy.tensors[k].owner)
        for (const float g : grad[k].to_host()) sum += static_cast<double>(g) * g;
    return sum;
  }
};

// Writes `values` into the optimizer's parameters, through what it binds (as GptModel does).
void write_values(ZeroOptimizer& opt, Toy& toy, Backend& be, const std::vector<std::vector<float>>& values) {
  opt.for_each_unit(
      [&](int unit) {
        for (std::size_t k = 0; k < values.size(); ++k)
          if (toy.tensors[k].unit == unit) be.copy_from_host(toy.bound_value[k], values[k].data(), 4 * values[k].size());
      },
      /*store=*/true);
}

// The parameters as the layers see them.
std::vector<std::vector<float>> read_values(ZeroOptimizer& opt, Toy& toy, Backend& be) {
  std::vector<std::vector<float>> out(toy.tensors.size());
  opt.for_each_unit(
      [&](int unit) {
        for (std::size_t k = 0; k < out.size(); ++k) {
          if (toy.tensors[k].unit != unit) continue;
          out[k].resize(toy.tensors[k].size);
          be.copy_to_host(out[k].data(), toy.bound_value[k], 4 * out[k].size());
        }
      },
      /*store=*/false);
  return out;
}

// One micro-batch's backward pass, last unit first, writing `grads` as each unit's gradients.
void backward_pass(ZeroOptimizer& opt, Toy& toy, Backend& be, const std::vector<std::vector<float>>& grads) {
  opt.zero_grads();
  opt.begin_micro_batch(true);
  for (int unit = opt.units() - 1; unit >= 0; --unit) {
    opt.acquire(unit);
    opt.begin_backward(unit);
    for (std::size_t k = 0; k < grads.size(); ++k)
      if (toy.tensors[k].unit == unit) {
        ASSERT_NE(toy.bound_grad[k], nullptr);
        be.copy_from_host(toy.bound_grad[k], grads[k].data(), 4 * grads[k].size());
      }
    opt.end_backward(unit);
    opt.release(unit);
  }
  opt.finish_backward();
}

TEST(ZeroOptimizer, EveryStageOnOneRankTakesPlainAdamStepsAndBindsWhatIsInUse) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const AdamParams hp = toy_adamw();
  for (int stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    Toy toy;
    ZeroOptimizer opt(*be, *grid, toy.tensors, ZeroOptions{stage, 8}, hp);
    EXPECT_EQ(opt.flat_size(), 26u);
    EXPECT_EQ(opt.shard_size(), 26u);
    EXPECT_EQ(opt.units(), 3);
    // Values are there all the time below stage 3, only while acquired at stage 3.
    EXPECT_EQ(toy.bound_value[2] != nullptr, stage < 3);
    EXPECT_EQ(toy.bound_grad[2] != nullptr, stage < 2);

    ToyReference ref(*be, toy, hp, 7);
    write_values(opt, toy, *be, ref.init);
    for (int step = 0; step < 3; ++step) {
      backward_pass(opt, toy, *be, ref.grads);
      const double want = ref.grad_squared_norm(toy);
      EXPECT_NEAR(opt.grad_squared_norm(), want, 1e-9 * want);
      opt.step(hp.lr);
      ref.adam->step();
    }
    EXPECT_EQ(opt.steps(), 3);
    const auto got = read_values(opt, toy, *be);
    for (std::size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], ref.value[k].to_host()) << "tensor " << k;  // bit for bit
    if (stage == 3) {
      EXPECT_EQ(toy.bound_value[0], nullptr);  // released again
    }
  }
}

// BF16 on one rank: the layers see fp32 copies of 16-bit parameters; the optimizer keeps fp32
// master weights, so its steps are plain Adam's on the gradients rounded to bf16, and the
// parameters are the master's rounded. Storage follows ZeRO's mixed-precision layout.
TEST(ZeroOptimizer, BF16StoresSixteenBitParametersAndGradientsAndStepsAnFp32Master) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const AdamParams hp = toy_adamw();
  for (int stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    Toy toy;
    ZeroOptimizer opt(*be, *grid, toy.tensors, ZeroOptions{stage, 8, Precision::BF16}, hp);
    EXPECT_EQ(be->live_bytes(MemoryKind::Parameters), 2u * 26);
    EXPECT_EQ(be->live_bytes(MemoryKind::Gradients), 2u * 26);
    EXPECT_EQ(be->live_bytes(MemoryKind::Optimizer), 4u * 26);  // the master; m and v come with the first step
    EXPECT_EQ(toy.bound_value[2], nullptr);  // only fp32 copies, and only while acquired
    EXPECT_EQ(toy.bound_grad[2], nullptr);

    ToyReference ref(*be, toy, hp, 11);  // its master starts at the exact values written
    const std::size_t reference_state = be->live_bytes(MemoryKind::Optimizer) - 4u * 26;
    // The clipping scale is applied when the step widens the gradient: the reference's is halved.
    for (std::size_t k = 0; k < ref.grads.size(); ++k) {
      std::vector<float> g = rounded_to_bf16(ref.grads[k]);
      for (float& x : g) x *= 0.5f;
      ref.grad[k].upload(g.data());
    }
    write_values(opt, toy, *be, ref.init);
    const auto expect_values_are_rounded_master = [&] {
      const auto got = read_values(opt, toy, *be);
      for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_EQ(got[k], rounded_to_bf16(ref.value[k].to_host())) << "tensor " << k;  // bit for bit
    };
    expect_values_are_rounded_master();
    for (int step = 0; step < 3; ++step) {
      backward_pass(opt, toy, *be, ref.grads);
      const double want = 4 * ref.grad_squared_norm(toy);  // of the unhalved rounded gradients
      EXPECT_NEAR(opt.grad_squared_norm(), want, 1e-9 * want);
      opt.scale_grads(0.5f);
      opt.step(hp.lr);
      ref.adam->step();
    }
    expect_values_are_rounded_master();
    EXPECT_EQ(be->live_bytes(MemoryKind::Optimizer), 12u * 26 + reference_state);  // master, m, v
    EXPECT_EQ(be->live_bytes(MemoryKind::Workspace), 0u);  // every working copy freed
  }
}

// Gradient accumulation over micro-batches at every stage and precision: the layers add each
// micro-batch's gradients into what the optimizer binds (stages 0-1: the whole gradient; 2-3: a
// fresh unit buffer, which the optimizer adds into its block), so after two micro-batches the
// gradient is g1 + g2 (a stage that overwrote would hold g2). Checked against float64: the
// squared norm, and the moments of the first step, m = (1 - beta1)·g and v = (1 - beta2)·g²,
// element by element (to bf16's rounding under BF16).
TEST(ZeroOptimizer, MicroBatchesAddUpAtEveryStageAndTheFirstMomentsAreThoseOfTheSum) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const AdamParams hp = toy_adamw();
  for (const Precision precision : {Precision::FP32, Precision::BF16})
    for (int stage = 0; stage <= 3; ++stage) {
      const bool bf16 = precision == Precision::BF16;
      SCOPED_TRACE("stage " + std::to_string(stage) + (bf16 ? ", bf16" : ", fp32"));
      Toy toy;
      ZeroOptimizer opt(*be, *grid, toy.tensors, ZeroOptions{stage, 8, precision}, hp);
      ToyReference first(*be, toy, hp, 21), second(*be, toy, hp, 22);  // two micro-batches' gradients
      write_values(opt, toy, *be, first.init);
      opt.zero_grads();
      for (int micro = 0; micro < 2; ++micro) {
        opt.begin_micro_batch(micro == 1);
        const auto& g = micro == 0 ? first.grads : second.grads;
        for (int unit = opt.units() - 1; unit >= 0; --unit) {
          opt.acquire(unit);
          opt.begin_backward(unit);
          for (std::size_t k = 0; k < g.size(); ++k) {
            if (toy.tensors[k].unit != unit) continue;
            std::vector<float> sum(g[k].size());  // as a layer accumulates: into what is bound
            be->copy_to_host(sum.data(), toy.bound_grad[k], 4 * sum.size());
            for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += g[k][i];
            be->copy_from_host(toy.bound_grad[k], sum.data(), 4 * sum.size());
          }
          opt.end_backward(unit);
          opt.release(unit);
        }
        opt.finish_backward();
      }
      // float64 sums; bf16 rounds each micro-batch's gradient and their sum (2^-8 relative
      // each), so an element's error is bounded by its terms' magnitudes: e = tol·(|g1| + |g2|).
      const double tol = bf16 ? 2.0 / 256 : 1e-6;
      std::vector<double> sum, err;
      double want = 0, want_err = 0;
      for (std::size_t k = 0; k < toy.tensors.size(); ++k)
        for (std::size_t i = 0; i < toy.tensors[k].size; ++i) {
          const double g1 = first.grads[k][i], g2 = second.grads[k][i];
          sum.push_back(g1 + g2);
          err.push_back(tol * (std::fabs(g1) + std::fabs(g2)));
          if (!toy.tensors[k].owner) continue;
          want += sum.back() * sum.back();
          want_err += err.back() * (2 * std::fabs(sum.back()) + err.back());
        }
      EXPECT_NEAR(opt.grad_squared_norm(), want, want_err);
      opt.step(hp.lr);
      const ZeroOptimizer::RangeState r = opt.range_state();
      ASSERT_EQ(r.m.size(), sum.size());
      for (std::size_t i = 0; i < sum.size(); ++i) {
        const double m = (1 - hp.beta1) * sum[i], v = (1 - hp.beta2) * sum[i] * sum[i];
        EXPECT_NEAR(r.m[i], m, (1 - hp.beta1) * err[i]) << "element " << i;
        EXPECT_NEAR(r.v[i], v, (1 - hp.beta2) * err[i] * (2 * std::fabs(sum[i]) + err[i])) << "element " << i;
      }
    }
}

TEST(ZeroOptimizer, AnAbortedPassFreesWhatItGatheredAndStartsClean) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  Toy toy;
  ZeroOptimizer opt(*be, *grid, toy.tensors, ZeroOptions{3, 8}, AdamParams{});
  opt.acquire(0, 1);
  opt.acquire(2);
  opt.begin_backward(2);
  opt.end_backward(2);
  opt.begin_backward(1);  // an exception here: the model's guard calls abort_pass
  EXPECT_GT(be->live_bytes(MemoryKind::Workspace), 0u);
  opt.abort_pass();
  EXPECT_EQ(be->live_bytes(MemoryKind::Workspace), 0u);
  for (std::size_t k = 0; k < toy.tensors.size(); ++k) {
    EXPECT_EQ(toy.bound_value[k], nullptr) << k;
    EXPECT_EQ(toy.bound_grad[k], nullptr) << k;
  }
  opt.acquire(1);  // and the next pass works
  EXPECT_NE(toy.bound_value[2], nullptr);
  opt.release(1);
}

// Every replica's count in each collective over D is its part of the bucket or unit (the blocks
// cut as block_range cuts them): each rank of a recording grid is charged, per all-gather and
// reduce-scatter, the whole range less its own part (MPI accounting). Over 7 replicas of
// uneven blocks (a bucket holding some whole and two partial), and 30 of one float or none.
// The bytes replica d of D counts over D in the toy's backward pass and step (buckets of 8
// floats) on recording communicators of `transport`.
double toy_step_bytes(int dp, int stage, int d, Transport transport) {
  ShapeBackend be;
  auto grid = make_recording_grid(GridShape{1, 1, 1}, dp, d, transport);
  Toy toy;
  ZeroOptimizer opt(be, *grid, toy.tensors, ZeroOptions{stage, 8 * sizeof(float)}, toy_adamw());
  std::vector<std::vector<float>> grads;
  for (const FlatTensor& t : toy.tensors) grads.emplace_back(t.size, 0.0f);
  grid->reset_stats();
  backward_pass(opt, toy, be, grads);
  opt.step(1e-3f);
  return grid->axis_stats(Axis::D).bytes;
}

TEST(ZeroOptimizer, EachReplicaCountsItsOwnPartOfEveryBucketAndUnit) {
  for (const int dp : {7, 30})
    for (const int stage : {1, 3})
      for (int d = 0; d < dp; ++d) {
        SCOPED_TRACE("D=" + std::to_string(dp) + " stage " + std::to_string(stage) + " replica " + std::to_string(d));
        const double moved = toy_step_bytes(dp, stage, d, Transport::Mpi);
        // The flat space: units [0, 8), [8, 20), [20, 26); buckets of 8 floats within each.
        const Range own = block_range(26, dp, d);
        const auto rest = [&](index_t b0, index_t b1) {  // what the others hold of [b0, b1)
          const index_t lo = std::clamp(own.begin, b0, b1), hi = std::clamp(own.end, b0, b1);
          return static_cast<double>((b1 - b0) - (hi - lo)) * sizeof(float);
        };
        const double buckets = rest(0, 8) + rest(8, 16) + rest(16, 20) + rest(20, 26);
        const double units = rest(0, 8) + rest(8, 20) + rest(20, 26);
        // Stage 1: each bucket reduce-scattered, then all-gathered after the step; stage 3: each
        // unit gathered before its backward, each bucket reduce-scattered.
        EXPECT_EQ(moved, stage == 1 ? 2 * buckets : units + buckets);
      }
}

// The same over NCCL's accounting (comm/nccl_schedule.hpp: a padded or grouped call by each
// bucket's counts, their largest among them): every collective's bytes as the schedule of the
// counts computed here, replica by replica, gives them.
TEST(ZeroOptimizer, NcclAccountingOfEveryBucketIsTheScheduleOfItsCounts) {
  for (const int dp : {3, 7, 30})
    for (const int stage : {1, 3})
      for (int d = 0; d < dp; ++d) {
        SCOPED_TRACE("D=" + std::to_string(dp) + " stage " + std::to_string(stage) + " replica " + std::to_string(d));
        const double moved = toy_step_bytes(dp, stage, d, Transport::Nccl);
        const auto bytes = [&](index_t b0, index_t b1) {  // of one collective over [b0, b1)
          std::vector<std::size_t> counts;
          for (int r = 0; r < dp; ++r) {
            const Range own = block_range(26, dp, r);
            counts.push_back(static_cast<std::size_t>(std::clamp(own.end, b0, b1) - std::clamp(own.begin, b0, b1)));
          }
          return schedule_uneven(counts, sizeof(float)).rank_bytes(counts, d, sizeof(float));
        };
        const double buckets = bytes(0, 8) + bytes(8, 16) + bytes(16, 20) + bytes(20, 26);
        const double units = bytes(0, 8) + bytes(8, 20) + bytes(20, 26);
        EXPECT_EQ(moved, stage == 1 ? 2 * buckets : units + buckets);
      }
}

TEST(ZeroModel, StageThreeMovesOneAndAHalfTimesStageZeroOverD) {
  GptConfig c;
  c.layers = 3;
  c.heads = 6;
  c.embed = 90;
  c.block = 16;
  for (int dp : {2, 3, 4, 5}) {
    for (GridShape g : {GridShape{1, 1, 1}, GridShape{2, 1, 1}, GridShape{1, 3, 1}, GridShape{1, 1, 2}}) {
      SCOPED_TRACE("D=" + std::to_string(dp) + " grid " + g.str());
      const double ranks = dp * g.size();
      const double loss = ranks * 2.0 * (dp - 1) / dp * 8;  // the loss over D, once per micro-batch
      double d[4];
      for (int stage = 0; stage <= 3; ++stage)
        d[stage] = predict_gpt_step(c, 7, 1, g, true, GptParallel{dp, stage, 0.01})[Axis::D] - loss;
      EXPECT_GT(d[0], 0);
      EXPECT_NEAR(d[3] / d[0], 1.5, 1e-12);
      EXPECT_NEAR(d[1], d[0], 1e-9 * d[0]);
      EXPECT_NEAR(d[2], d[0], 1e-9 * d[0]);
      // The tensor axes do not change with D's stage.
      EXPECT_EQ(predict_gpt_step(c, 7, 1, g, true, GptParallel{dp, 3, 0.01})[Axis::X],
                predict_gpt_step(c, 7, 1, g, true, GptParallel{dp, 0, 0.01})[Axis::X]);
    }
  }
  EXPECT_EQ(predict_gpt_step(c, 7, 2, GridShape{2, 1, 1})[Axis::D], 0.0);  // no replicas, no D traffic
}

TEST(ZeroModel, BF16HalvesTheGradientAndParameterBytesOverD) {
  GptConfig c;
  c.layers = 2;
  c.heads = 4;
  c.embed = 64;
  c.block = 16;
  for (int stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    const GridShape g{1, 2, 1};
    const double loss = 3 * g.size() * 2.0 * (3 - 1) / 3 * 8;  // D = 3: the 8-byte loss is not halved
    // Buckets as bytes: the same MiB hold twice the bf16 elements, so the same collectives.
    const double fp32 = predict_gpt_step(c, 6, 1, g, true, GptParallel{3, stage, 0.02})[Axis::D] - loss;
    const double bf16 =
        predict_gpt_step(c, 6, 1, g, true, GptParallel{3, stage, 0.01, Precision::BF16})[Axis::D] - loss;
    EXPECT_GT(fp32, 0);
    EXPECT_NEAR(bf16, fp32 / 2, 1e-9 * fp32);
  }
}

// Replicas as threads (in-process communicators: every count read, the sums passed checked) at
// every ZeRO stage, FP32 and BF16, with buckets small enough that a unit has several and a
// bucket meets several replicas' blocks: three steps lose what one replica's do (up to the
// order of the sums) and move over each axis what the plan predicts.
TEST(ZeroInProcess, ReplicasAtEveryStageTrainAsOneAndMoveWhatThePlanSays) {
  TokenCorpus corpus;
  corpus.vocab = 13;
  for (int k = 0; k < 400; ++k) corpus.train.push_back((k * 7 + k / 5) % 13);
  corpus.val = corpus.train;
  GptTrainConfig base;
  base.model = {1, 2, 10, 8, 13, true};
  base.batch = 6;
  base.iters = 3;
  base.eval_every = 0;
  base.bucket_mb = 300.0 / (1 << 20);  // 300 bytes
  for (const Precision precision : {Precision::FP32, Precision::BF16}) {
    base.precision = precision;
    std::vector<double> want;
    {
      auto be = make_cpu_backend(1);
      auto grid = ProcessGrid::single();
      GptTrainer(corpus, base, *be, *grid).run([&](const GptStepMetrics& m) { want.push_back(m.loss); });
    }
    ASSERT_EQ(want.size(), 3u);
    for (const int dp : {2, 3})
      for (int stage = 0; stage <= 3; ++stage) {
        GptTrainConfig cfg = base;
        cfg.zero_stage = stage;
        const GridShape g{1, 2, 1};
        const AxisBytes bytes =
            predict_gpt_step(cfg.model, cfg.batch, 1, g, true, GptParallel{dp, stage, cfg.bucket_mb, precision});
        std::vector<std::vector<double>> losses(static_cast<std::size_t>(dp * g.size()));
        run_in_process_grid(g, dp, [&](ProcessGrid& grid) {
          auto be = make_cpu_backend(1);
          GptTrainer(corpus, cfg, *be, grid).run([&](const GptStepMetrics& m) {
            losses[static_cast<std::size_t>(grid.world().rank())].push_back(m.loss);
            for (int a = 0; a < 4; ++a)
              EXPECT_NEAR(m.comm_bytes[static_cast<std::size_t>(a)], bytes.bytes[static_cast<std::size_t>(a)],
                          1e-9 * std::max(1.0, bytes.bytes[static_cast<std::size_t>(a)]))
                  << "axis " << a;
          });
        });
        const std::string what = std::string(precision == Precision::BF16 ? "bf16" : "fp32") + " D " +
                                 std::to_string(dp) + " ZeRO-" + std::to_string(stage);
        for (const std::vector<double>& l : losses) {
          ASSERT_EQ(l.size(), want.size()) << what;
          for (std::size_t i = 0; i < want.size(); ++i)
            EXPECT_NEAR(l[i], want[i], (precision == Precision::BF16 ? 2e-3 : 2e-5) * std::abs(want[i]))
                << what << " step " << i + 1;
        }
      }
  }
}

}  // namespace
}  // namespace plexus
