#pragma once
// GptTrainer: a GPT being trained, one optimizer step at a time, with the shape of GnnTrainer
// (plexus/gnn_trainer.hpp), for programs that embed the engine.
//
//   plexus::GptTrainer trainer(corpus, config, backend, *grid);   // collective
//   while (trainer.iters_done() < config.iters) trainer.step();   // or trainer.run(...)
//   trainer.save("ckpt.h5");                                      // resumes on any grid
//
// Every method is collective: all ranks of the grid call it, in the same order. Errors throw
// (InputError for bad input). train_gpt (plexus/gpt.hpp) is run() with its hooks.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "plexus/gpt.hpp"
#include "plexus/stop_check.hpp"

namespace plexus {

class GptTrainer {
 public:
  // Builds the model on the grid and starts it: from `resume`'s run (check_resumable first;
  // its weights, moments, steps and evaluations), else from `init`'s weights, else GPT-2's
  // initialisation drawn from cfg.seed — and then, when cfg.eval_every > 0, evaluates it once
  // (initial_val_loss). A run resumed at a step after which an evaluation was due evaluates
  // its weights again: a graceful stop may have abandoned that evaluation, and when it did
  // not, the best validation loss stays what it was (the same weights, the same batches).
  // `corpus` (every rank the same) must outlive the trainer. `stop_check` (set_stop_check) is
  // asked already during these evaluations.
  GptTrainer(const TokenCorpus& corpus, const GptTrainConfig& cfg, Backend& backend, ProcessGrid& grid,
             const GptWeights* init = nullptr, const GptCheckpoint* resume = nullptr, StopCheck stop_check = {});
  ~GptTrainer();
  GptTrainer(const GptTrainer&) = delete;
  GptTrainer& operator=(const GptTrainer&) = delete;

  // One optimizer step: cfg.grad_accum micro-batches (forward, loss, backward), clipping by the
  // global norm, AdamW at the scheduled rate; then the evaluation when one is due (every
  // eval_every steps and after the last). Throws InputError when the loss stops being finite.
  GptStepMetrics step();
  // The stop points (plexus/stop_check.hpp): `check` is asked before each micro-batch and before
  // each evaluation batch. {} asks nothing.
  void set_stop_check(StopCheck check);
  // step(), unless the stop check answers true at one of its stop points: before the optimizer
  // step (before a micro-batch) the step is abandoned, nullopt returned and the weights,
  // moments and steps done are those before it; during the evaluation after the step, the
  // evaluation is abandoned (evaluation_abandoned; the best validation loss leaves it out
  // until a resumed run makes it up) and the step's metrics returned.
  std::optional<GptStepMetrics> step_unless_stopped();
  // Mean validation loss over cfg.eval_iters batches (the same batches every time), no step.
  double evaluate();
  // The remaining steps up to config().iters: `on_step` after each, then `stop` (ends the run
  // when it answers true, alike on every rank), then `checkpoint(iters_done, stopping, save)`,
  // which may call save(path) (GptTrainHooks says more). A step the stop check abandons
  // (step_unless_stopped) ends the run too, after `stop` and `checkpoint` were called. The result's weights are filled
  // when `keep_weights`.
  GptTrainResult run(const std::function<void(const GptStepMetrics&)>& on_step = {},
                     const std::function<bool()>& stop = {},
                     const std::function<void(int, bool, const GptTrainHooks::SaveCheckpoint&)>& checkpoint = {},
                     bool keep_weights = false);
  int iters_done() const;
  const GptTrainConfig& config() const;
  double initial_val_loss() const;  // 0 when never evaluated
  double best_val_loss() const;

  // The whole weights, on every rank.
  GptWeights weights();
  // The run as a checkpoint (weights the optimizer updates, AdamW moments, steps, evaluations,
  // options), whole on every rank; and save(): that checkpoint written to `path` by rank 0,
  // atomically, a failed write thrown on every rank.
  GptCheckpoint state();
  void save(const std::string& path);
  // The run identity state() and save() carry (GptCheckpoint::run_id), so that a checkpoint
  // directory tells this run's checkpoints from others' (docs/checkpoints.md). Alike on every rank.
  void set_run_id(const std::string& id);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
