// Data parallelism and ZeRO on one process: memory accounting by kind and the memory budget,
// the ZeroOptimizer's storage, binding and AdamW step at every stage against plain Adam, and the
// analytic model of the bytes on the D axis. (D > 1 on real ranks: tests/cli_gpt_dp.sh.)
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "models/gpt.hpp"
#include "optim/adam.hpp"
#include "optim/zero.hpp"
#include "plexus/error.hpp"
#include "plexus/gpt.hpp"

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
    EXPECT_EQ(e.where(), "--memory-per-rank");
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

TEST(ZeroOptimizer, EveryStageOnOneRankTakesPlainAdamStepsAndBindsWhatIsInUse) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  AdamParams hp;
  hp.decoupled = true;
  hp.weight_decay = 0.1f;
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

    // The reference: plain Adam over the same tensors.
    std::mt19937 rng(7);
    std::normal_distribution<float> n;
    std::vector<Buffer<float>> ref_v, ref_g;
    std::vector<ParamRef> refs;
    std::vector<std::vector<float>> init(6), grads(6);
    for (std::size_t k = 0; k < 6; ++k) {
      for (std::size_t i = 0; i < toy.tensors[k].size; ++i) {
        init[k].push_back(n(rng));
        grads[k].push_back(n(rng));
      }
      ref_v.emplace_back(*be, init[k]);
      ref_g.emplace_back(*be, grads[k]);
      refs.push_back({ref_v.back().data(), ref_g.back().data(), toy.tensors[k].size, toy.tensors[k].decay});
    }
    Adam adam(*be, refs, hp);
    opt.for_each_unit(
        [&](int unit) {
          for (std::size_t k = 0; k < 6; ++k)
            if (toy.tensors[k].unit == unit) be->copy_from_host(toy.bound_value[k], init[k].data(), 4 * init[k].size());
        },
        /*store=*/true);

    for (int step = 0; step < 3; ++step) {
      opt.zero_grads();
      opt.begin_micro_batch(true);
      for (int unit = 2; unit >= 0; --unit) {  // the backward pass: last unit first
        opt.acquire(unit);
        opt.begin_backward(unit);
        for (std::size_t k = 0; k < 6; ++k)
          if (toy.tensors[k].unit == unit) {
            ASSERT_NE(toy.bound_grad[k], nullptr);
            be->copy_from_host(toy.bound_grad[k], grads[k].data(), 4 * grads[k].size());
          }
        opt.end_backward(unit);
        opt.release(unit);
      }
      opt.finish_backward();
      double want = 0;
      for (std::size_t k = 0; k < 6; ++k)
        if (toy.tensors[k].owner)
          for (const float g : grads[k]) want += static_cast<double>(g) * g;
      EXPECT_NEAR(opt.grad_squared_norm(), want, 1e-9 * want);
      opt.step(hp.lr);
      adam.step();
    }
    EXPECT_EQ(opt.steps(), 3);
    opt.for_each_unit(
        [&](int unit) {
          for (std::size_t k = 0; k < 6; ++k) {
            if (toy.tensors[k].unit != unit) continue;
            std::vector<float> got(toy.tensors[k].size);
            be->copy_to_host(got.data(), toy.bound_value[k], 4 * got.size());
            EXPECT_EQ(got, ref_v[k].to_host()) << "tensor " << k;  // bit for bit
          }
        },
        /*store=*/false);
    if (stage == 3) {
      EXPECT_EQ(toy.bound_value[0], nullptr);  // released again
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

}  // namespace
}  // namespace plexus
