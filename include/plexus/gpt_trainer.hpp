#pragma once
// GptTrainer: a GPT being trained, one optimizer step at a time, with the shape of GnnTrainer
// (plexus/gnn_trainer.hpp), for programs that embed the engine.
//
//   plexus::GptTrainer trainer(corpus, config, backend, *grid);   // collective
//   trainer.resume("ckpt.h5");                                    // optional: continue that run
//   trainer.set_stop_check(...);                                  // optional: a graceful stop
//   GptTrainResult r = trainer.run(on_step, stop);                // or trainer.step() in a loop
//   trainer.save("ckpt.h5");                                      // a checkpoint, any grid resumes it
//   trainer.save_model("model.h5");                               // the trained model (GPT-2 names)
//
// Every method is collective: all ranks of the grid call it, in the same order. Errors throw
// (InputError for bad input).
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "plexus/gpt.hpp"
#include "plexus/stop_check.hpp"

namespace plexus {

class GptTrainer {
 public:
  // Builds the model on the grid from `init`'s weights, else GPT-2's initialisation drawn from
  // cfg.seed. The first step (or run()) evaluates the model first when cfg.eval_every > 0
  // (initial_val_loss), asking the stop check (set_stop_check) between its batches. `corpus`
  // (every rank the same) must outlive the trainer.
  GptTrainer(const TokenCorpus& corpus, const GptTrainConfig& cfg, Backend& backend, ProcessGrid& grid,
             const GptWeights* init = nullptr);
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
  // The remaining steps up to config().iters, calling `on_step` after each; `stop`, when given,
  // is asked after each step (after on_step) whether to end the run there; it must answer alike
  // on every rank. A step the stop check abandons (step_unless_stopped) ends the run too, after
  // `stop` was asked (it writes the checkpoint of the last finished step in `plexus gpt train`).
  GptTrainResult run(const std::function<void(const GptStepMetrics&)>& on_step = {},
                     const std::function<bool()>& stop = {});
  int iters_done() const;
  const GptTrainConfig& config() const;
  double initial_val_loss() const;  // NaN until the initial evaluation completed
  double best_val_loss() const;     // NaN until an evaluation completed

  // The whole weights, on every rank.
  GptWeights weights();
  // The run as a checkpoint (weights the optimizer updates, AdamW moments, steps, evaluations,
  // options), whole on every rank; and save(): that checkpoint written to `path` by rank 0,
  // atomically, a failed write thrown on every rank.
  GptCheckpoint state();
  void save(const std::string& path);
  // Continue the run `c` (a checkpoint of any grid, replica count or ZeRO stage): refused with
  // InputError("checkpoint", ...) when it was trained on another vocabulary or with options
  // that change the run (check_resumable); its weights, moments, steps and evaluations, and the
  // evaluation due after its last step made again by the next step (a graceful stop may have
  // abandoned it; when it did not, the best validation loss stays what it was).
  void set_state(const GptCheckpoint& c);
  // set_state of the checkpoint file `path` (its errors name the file).
  void resume(const std::string& path);
  // The trained model (weights, configuration, the character vocabulary) as a model file
  // (write_gpt_model_h5: GPT-2's tensor names), written by rank 0, atomically; a failed write
  // thrown on every rank.
  void save_model(const std::string& path);
  // The run identity state() and save() carry (GptCheckpoint::run_id), so that a checkpoint
  // directory tells this run's checkpoints from others' (docs/checkpoints.md). Alike on every rank.
  void set_run_id(const std::string& id);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
