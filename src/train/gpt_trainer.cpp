// GptTrainer (include/plexus/gpt_trainer.hpp), top to bottom: build the model on the grid,
// then per step draw the batch, run the micro-batches (forward, loss, backward), clip by the
// global gradient norm, take an AdamW step at the scheduled learning rate, and evaluate on the
// held-out split now and then.
#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>

#include "models/gpt.hpp"
#include "plexus/error.hpp"
#include "train/config_agreement.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/rng.hpp"
#include "train/finite_loss.hpp"
#include "train/gpt_batches.hpp"

namespace plexus {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::array<double, 4> comm_bytes(ProcessGrid& grid) {
  std::array<double, 4> b{};
  for (Axis a : kAllAxes) b[static_cast<int>(a)] = grid.axis_stats(a).bytes;
  grid.world().all_reduce(b.data(), 4, ReduceOp::Sum);  // world traffic is not counted
  return b;
}

ZeroOptions zero_options(const GptTrainConfig& cfg) {
  ZeroOptions zero;
  zero.stage = cfg.zero_stage;
  zero.bucket_bytes = static_cast<std::size_t>(cfg.bucket_mb * (1 << 20));
  zero.precision = cfg.precision;
  return zero;
}

AdamParams adam_params(const GptTrainConfig& cfg) {
  AdamParams hp;
  hp.lr = cfg.lr;
  hp.beta1 = cfg.beta1;
  hp.beta2 = cfg.beta2;
  hp.weight_decay = cfg.weight_decay;
  hp.decoupled = true;  // AdamW
  return hp;
}

void check_corpus(const TokenCorpus& corpus, const GptTrainConfig& cfg) {
  if (corpus.vocab != cfg.model.vocab)
    throw InputError("GptConfig.vocab", "the data has " + std::to_string(corpus.vocab) + " tokens, the model " +
                                    std::to_string(cfg.model.vocab));
  const auto too_short = [&](const std::vector<std::int32_t>& s) {
    return static_cast<index_t>(s.size()) < cfg.model.block + 1;
  };
  if (too_short(corpus.train))
    throw InputError("TokenCorpus.train", "the training split has " + std::to_string(corpus.train.size()) +
                                   " tokens, fewer than GptConfig.block + 1 = " + std::to_string(cfg.model.block + 1));
  if (too_short(corpus.val))
    throw InputError("TokenCorpus.val", "the validation split has " + std::to_string(corpus.val.size()) +
                                   " tokens, fewer than GptConfig.block + 1 = " + std::to_string(cfg.model.block + 1));
  // Every id a row of the embedding table (read_token_file checks a file's; a corpus built in
  // memory comes here unchecked, and an id beyond the table would read past it).
  for (const auto* split : {&corpus.train, &corpus.val}) {
    const auto bad = std::find_if(split->begin(), split->end(),
                                  [&](std::int32_t t) { return t < 0 || static_cast<index_t>(t) >= corpus.vocab; });
    if (bad != split->end())
      throw InputError("TokenCorpus." + std::string(split == &corpus.train ? "train" : "val"),
                       "token " + std::to_string(bad - split->begin()) + " is id " + std::to_string(*bad) +
                           ", outside the vocabulary [0, " + std::to_string(corpus.vocab) + ")");
  }
}
}  // namespace

void validate(const GptConfig& c) {
  if (c.layers < 1 || c.layers > 1024) throw InputError("GptConfig.layers", "must be between 1 and 1024");
  if (c.heads < 1) throw InputError("GptConfig.heads", "must be at least 1");
  // Bounds far above any trained transformer (GPT-3: embed 12288, block 2048) that keep every
  // size product, and the planner's loops over them, finite.
  if (c.embed < 1 || c.embed > (index_t{1} << 20)) throw InputError("GptConfig.embed", "must be between 1 and 2^20");
  if (c.embed % c.heads != 0)
    throw InputError("GptConfig.embed", std::to_string(c.embed) + " is not divisible by GptConfig.heads " + std::to_string(c.heads));
  if (c.block < 1 || c.block > (index_t{1} << 20)) throw InputError("GptConfig.block", "must be between 1 and 2^20");
  if (c.vocab < 1 || c.vocab > (index_t{1} << 31) - 1) throw InputError("GptConfig.vocab", "must be between 1 and 2^31-1");
}

void validate(const GptTrainConfig& c) {
  validate(c.model);
  const auto positive = [](float v) { return v > 0.0f && std::isfinite(v); };
  if (c.batch < 1) throw InputError("GptTrainConfig.batch", "must be at least 1");
  if (c.iters < 0) throw InputError("GptTrainConfig.iters", "must be at least 0");
  if (!positive(c.lr)) throw InputError("GptTrainConfig.lr", "must be a positive number");
  if (!(c.min_lr >= 0.0f && c.min_lr <= c.lr)) throw InputError("GptTrainConfig.min_lr", "must be in [0, GptTrainConfig.lr]");
  if (c.warmup < 0) throw InputError("GptTrainConfig.warmup", "must be at least 0");
  if (!(c.weight_decay >= 0.0f) || !std::isfinite(c.weight_decay))
    throw InputError("GptTrainConfig.weight_decay", "must be a non-negative number");
  if (!(c.beta2 > 0.0f && c.beta2 < 1.0f)) throw InputError("GptTrainConfig.beta2", "must be in (0, 1)");
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) throw InputError("GptTrainConfig.dropout", "must be in [0, 1)");
  if (!(c.grad_clip >= 0.0f) || !std::isfinite(c.grad_clip)) throw InputError("GptTrainConfig.grad_clip", "must be >= 0");
  if (c.grad_accum < 1) throw InputError("GptTrainConfig.grad_accum", "must be at least 1");
  if (c.eval_every < 0) throw InputError("GptTrainConfig.eval_every", "must be at least 0");
  if (c.eval_iters < 1) throw InputError("GptTrainConfig.eval_iters", "must be at least 1");
  if (c.zero_stage < 0 || c.zero_stage > 3) throw InputError("GptTrainConfig.zero_stage", "must be 0, 1, 2 or 3");
  if (!(c.bucket_mb * (1 << 20) >= 4.0) || !std::isfinite(c.bucket_mb) || c.bucket_mb > 1e6)
    throw InputError("GptTrainConfig.bucket_mb", "must be a number of MiB that holds at least one float (4 bytes)");
}

float gpt_learning_rate(const GptTrainConfig& c, int iter) {
  if (iter < c.warmup) return c.lr * static_cast<float>(iter + 1) / static_cast<float>(c.warmup + 1);
  if (iter >= c.iters || c.iters <= c.warmup) return c.min_lr;
  const double ratio = static_cast<double>(iter - c.warmup) / static_cast<double>(c.iters - c.warmup);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
  return static_cast<float>(c.min_lr + coeff * (c.lr - c.min_lr));
}

struct GptTrainer::Impl {
  Impl(const TokenCorpus& corpus, const GptTrainConfig& c, Backend& be, ProcessGrid& g)
      : corpus(corpus), cfg(c), backend(be), grid(g), model(be, g, c.model, c.batch, zero_options(c), adam_params(c)) {}
  const TokenCorpus& corpus;
  GptTrainConfig cfg;
  Backend& backend;
  ProcessGrid& grid;
  GptModel model;
  int iters_done = 0;
  // NaN until an evaluation completes (GptTrainResult).
  double initial_val_loss = std::numeric_limits<double>::quiet_NaN(), best_val_loss = initial_val_loss;
  std::string run_id;  // carried by state() (set_run_id)

  StopCheck stop_check;  // set_stop_check; asked only where `stoppable`
  // An evaluation owed before the next step: the initial one, or after a resumed step that was
  // due one (set_state). Made by the next step; false when a stop abandoned it.
  bool evaluation_pending = false;
  bool pending_evaluation(bool stoppable);
  bool stop_now(bool stoppable) const { return stoppable && stop_check && stop_check(); }
  // Mean validation loss, or nullopt when the stop check answered true before a batch.
  std::optional<double> evaluate(bool stoppable);
  std::optional<GptStepMetrics> step(bool stoppable);
  // Whether an evaluation is due after `iters` steps.
  bool evaluation_due(int iters) const {
    return cfg.eval_every > 0 && iters > 0 && (iters % cfg.eval_every == 0 || iters == cfg.iters);
  }
  // This rank's rows of a batch; none for a plan's dry run (a backend that does not compute).
  LocalBatch batch(const std::vector<std::int32_t>& split, std::uint32_t stream, std::uint64_t counter) const {
    if (!backend.computes()) return {};
    return local_batch(split, cfg, stream, counter, model.layout());
  }
};

GptTrainer::GptTrainer(const TokenCorpus& corpus, const GptTrainConfig& cfg, Backend& backend, ProcessGrid& grid,
                       const GptWeights* init) {
  // The ranks' configurations and corpora alike (hashes compared over the grid), before any
  // rank can throw alone about its own.
  require_same_config(cfg, grid, "config");
  require_same_corpus(corpus, grid, "corpus");
  validate(cfg);
  check_corpus(corpus, cfg);
  backend.reset_peak();
  backend.set_matmul_precision(cfg.matmul_precision);
  impl_ = std::make_unique<Impl>(corpus, cfg, backend, grid);
  Impl& t = *impl_;
  if (init)
    t.model.load_weights(*init);
  else
    t.model.init_weights(cfg.seed);
  t.evaluation_pending = cfg.eval_every > 0;  // the initial evaluation, by the first step
}

void GptTrainer::set_state(const GptCheckpoint& c) {
  Impl& t = *impl_;
  if (c.model.chars != t.corpus.chars)
    throw InputError("checkpoint", "was trained on " + std::string(c.model.chars.empty() ? "a token file" : "text") +
                                       " of another vocabulary than this corpus");
  check_resumable(c, t.cfg, "checkpoint");
  t.model.load_optimizer_state({c.model.weights, c.adam_m, c.adam_v, c.iters_done});
  t.iters_done = static_cast<int>(c.iters_done);
  t.initial_val_loss = c.initial_val_loss;
  t.best_val_loss = c.best_val_loss;
  // The evaluation due after the checkpoint's step, which a stop may have abandoned: the
  // minimum is unchanged when it was made (the same value again).
  t.evaluation_pending = t.evaluation_due(t.iters_done);
}

void GptTrainer::resume(const std::string& path) {
  const GptCheckpoint c = read_gpt_checkpoint_h5(path);
  try {
    set_state(c);
  } catch (const InputError& e) {
    throw InputError(path, e.what());
  }
}

bool GptTrainer::Impl::pending_evaluation(bool stoppable) {
  if (!evaluation_pending) return true;
  const std::optional<double> v = evaluate(stoppable);
  if (!v) return false;
  evaluation_pending = false;
  if (iters_done == 0) initial_val_loss = *v;
  best_val_loss = std::fmin(best_val_loss, *v);  // (fmin: NaN, not evaluated yet, gives *v)
  return true;
}

GptTrainer::~GptTrainer() = default;

int GptTrainer::iters_done() const { return impl_->iters_done; }
const GptTrainConfig& GptTrainer::config() const { return impl_->cfg; }
double GptTrainer::initial_val_loss() const { return impl_->initial_val_loss; }
double GptTrainer::best_val_loss() const { return impl_->best_val_loss; }
GptWeights GptTrainer::weights() { return impl_->model.gather_weights(); }

void GptTrainer::set_stop_check(StopCheck check) { impl_->stop_check = std::move(check); }

double GptTrainer::evaluate() { return *impl_->evaluate(false); }

std::optional<double> GptTrainer::Impl::evaluate(bool stoppable) {
  Impl& t = *this;
  const index_t tokens = t.cfg.batch * t.cfg.model.block;
  double sum = 0.0;
  for (int k = 0; k < t.cfg.eval_iters; ++k) {
    if (t.stop_now(stoppable)) return std::nullopt;
    const LocalBatch b = t.batch(t.corpus.val, kValStream, static_cast<std::uint64_t>(k));
    sum += t.model.step(b.ids, b.targets, 1.0f / static_cast<float>(tokens), GptDropout{}, false);
  }
  return sum / t.cfg.eval_iters;
}

GptStepMetrics GptTrainer::step() { return *impl_->step(false); }

std::optional<GptStepMetrics> GptTrainer::step_unless_stopped() { return impl_->step(true); }

std::optional<GptStepMetrics> GptTrainer::Impl::step(bool stoppable) {
  Impl& t = *this;
  const GptTrainConfig& cfg = t.cfg;
  ZeroOptimizer& opt = t.model.optimizer();
  const int it = t.iters_done;
  const index_t tokens_per_step = cfg.batch * cfg.model.block * cfg.grad_accum;
  const float loss_scale = 1.0f / static_cast<float>(tokens_per_step);
  if (!t.pending_evaluation(stoppable)) return std::nullopt;
  t.grid.reset_stats();
  opt.reset_stats();
  const auto t_step = Clock::now();
  GptStepMetrics m;
  m.iter = it + 1;
  m.lr = gpt_learning_rate(cfg, it);

  t.model.zero_grads();
  double loss = 0.0;
  for (int micro = 0; micro < cfg.grad_accum; ++micro) {
    // Before the optimizer step nothing but the gradients changed: abandoning the step leaves
    // the run as it was after the previous one (the next step zeroes the gradients).
    if (t.stop_now(stoppable)) return std::nullopt;
    const std::uint64_t counter = static_cast<std::uint64_t>(it) * cfg.grad_accum + micro;
    const LocalBatch b = t.batch(t.corpus.train, kTrainStream, counter);
    const GptDropout drop{cfg.dropout, cfg.seed, static_cast<std::uint32_t>(counter)};
    opt.begin_micro_batch(micro + 1 == cfg.grad_accum);
    loss += t.model.step(b.ids, b.targets, loss_scale, drop, true);
  }
  m.loss = loss;  // the scale makes the sum over micro-batches their mean

  // Clipping by the global norm, as torch.nn.utils.clip_grad_norm_ does.
  m.grad_norm = std::sqrt(t.model.grad_squared_norm());
  if (cfg.grad_clip > 0.0f) {
    const double coef = cfg.grad_clip / (m.grad_norm + 1e-6);
    if (coef < 1.0) opt.scale_grads(static_cast<float>(coef));
  }
  opt.step(static_cast<float>(m.lr));
  t.model.weights_updated();
  t.backend.synchronize();
  m.step_seconds = seconds_since(t_step);
  m.tokens_per_second = static_cast<double>(tokens_per_step) / m.step_seconds;
  m.comm_bytes = comm_bytes(t.grid);
  for (Axis a : kAllAxes) m.comm_seconds += t.grid.axis_stats(a).seconds;
  m.dp_reduce_seconds = opt.stats().reduce_seconds;
  m.dp_exposed_seconds = opt.stats().exposed_seconds;

  if (t.evaluation_due(it + 1)) {
    if (const std::optional<double> v = t.evaluate(stoppable)) {
      m.evaluated = true;
      m.val_loss = *v;
      t.best_val_loss = std::fmin(t.best_val_loss, m.val_loss);
    } else {
      m.evaluation_abandoned = true;
    }
  }
  require_finite_loss(m.loss + (m.evaluated ? m.val_loss : 0.0), t.grid, "step " + std::to_string(m.iter),
                      "lower GptTrainConfig.lr or set GptTrainConfig.grad_clip");
  t.iters_done = it + 1;
  return m;
}

GptCheckpoint GptTrainer::state() {
  Impl& t = *impl_;
  GptModel::OptimizerTensors s = t.model.gather_optimizer_state();
  GptCheckpoint c;
  c.model = GptModelFile{t.cfg.model, t.corpus.chars, std::move(s.value)};
  c.adam_m = std::move(s.m);
  c.adam_v = std::move(s.v);
  c.iters_done = t.iters_done;
  c.initial_val_loss = t.initial_val_loss;
  c.best_val_loss = t.best_val_loss;
  c.options = t.cfg;
  c.run_id = t.run_id;
  return c;
}

void GptTrainer::set_run_id(const std::string& id) { impl_->run_id = id; }

namespace {
// `write` run by rank 0 alone; its InputError thrown on every rank.
void write_on_rank0(ProcessGrid& grid, const std::string& path, const std::function<void()>& write) {
  double failed = 0;
  std::string why;
  if (grid.rank() == 0) {
    try {
      write();
    } catch (const InputError& e) {
      failed = 1;
      why = e.what();
    }
  }
  grid.world().all_reduce(&failed, 1, ReduceOp::Max);
  if (failed != 0) throw InputError(path, grid.rank() == 0 ? why : "cannot write it (rank 0 failed)");
}
}  // namespace

void GptTrainer::save(const std::string& path) {
  const GptCheckpoint c = state();  // collective: gathered whole on every rank
  write_on_rank0(impl_->grid, path, [&] { write_gpt_checkpoint_h5(path, c); });
}

void GptTrainer::save_model(const std::string& path) {
  Impl& t = *impl_;
  const GptModelFile m{t.cfg.model, t.corpus.chars, weights()};  // collective: whole on every rank
  write_on_rank0(t.grid, path, [&] { write_gpt_model_h5(path, m); });
}

GptTrainResult GptTrainer::run(const std::function<void(const GptStepMetrics&)>& on_step,
                               const std::function<bool()>& stop) {
  Impl& t = *impl_;
  const auto t_start = Clock::now();
  GptTrainResult result;
  result.params = t.model.num_params();
  // (With no step left, the evaluation owed is made all the same: --iters 0 evaluates.)
  if (t.iters_done >= t.cfg.iters && !t.pending_evaluation(true)) {
    if (stop) stop();
    result.stopped = true;
  }
  while (!result.stopped && t.iters_done < t.cfg.iters) {
    std::optional<GptStepMetrics> m = t.step(true);
    if (!m) {  // abandoned by the stop check: the run ends as after a finished step
      if (stop) stop();
      result.stopped = true;
      break;
    }
    result.steps.push_back(*m);
    if (on_step) on_step(result.steps.back());
    if (stop && stop()) {
      result.stopped = true;
      break;
    }
  }
  result.iters_done = t.iters_done;
  result.initial_val_loss = t.initial_val_loss;
  result.best_val_loss = t.best_val_loss;
  result.total_seconds = seconds_since(t_start);
  Backend& backend = t.backend;
  ZeroOptimizer& opt = t.model.optimizer();
  result.weight_bytes = t.model.weight_bytes();
  result.peak_tensor_bytes = backend.peak_bytes();
  // Largest over ranks: weights, peak, peaks per kind, Ψ and the ZeRO block.
  std::vector<double> maxes = {static_cast<double>(result.weight_bytes), static_cast<double>(result.peak_tensor_bytes),
                               static_cast<double>(opt.flat_size()), static_cast<double>(opt.shard_size())};
  for (int k = 0; k < kMemoryKinds; ++k) maxes.push_back(static_cast<double>(backend.peak_bytes(MemoryKind(k))));
  t.grid.world().all_reduce(maxes.data(), maxes.size(), ReduceOp::Max);
  result.max_weight_bytes = static_cast<std::size_t>(maxes[0]);
  result.max_shard_params = static_cast<std::size_t>(maxes[2]);
  result.max_zero_block = static_cast<std::size_t>(maxes[3]);
  for (int k = 0; k < kMemoryKinds; ++k) result.max_kind_bytes[k] = static_cast<std::size_t>(maxes[4 + k]);
  double total = static_cast<double>(result.weight_bytes);
  t.grid.replica().all_reduce(&total, 1, ReduceOp::Sum);  // one replica's shards: the whole model once
  result.total_weight_bytes = static_cast<std::size_t>(total);
  result.max_peak_tensor_bytes = static_cast<std::size_t>(maxes[1]);
  return result;
}

}  // namespace plexus
