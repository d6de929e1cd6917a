// `plexus gpt train` and `plexus gpt sample`: a GPT on the 3D-PMM core (include/plexus/gpt.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>
#include <string>

#include "plexus/error.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/grid_choice.hpp"
#include "src/cli/model_options.hpp"
#include "models/gpt_layout.hpp"
#include "src/cli/sequence_parallel_option.hpp"
#include "src/cli/training_run.hpp"

namespace plexus::cli {

namespace {

struct GptTrainOptions {
  std::string data, val_data, metrics, save, config, backend = "auto", grid = "auto", memory_per_rank,
      precision = "fp32", matmul_precision;
  int dp = 1;
  CheckpointOptions checkpoints{"", "", 100, 2};  // docs/checkpoints.md
  index_t vocab = 0;  // token files: the vocabulary size (text files: derived)
  int threads = 0;
  bool untie = false, quiet = false, profile = false;
  std::string sequence_parallel;  // on | off (GptConfig::sequence_parallel)
  GptTrainConfig cfg;
};

bool is_token_file(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".bin") == 0;
}

// The corpus of --data (and --val-data): a text file is character-level, a .bin file holds
// llm.c tokens of a --vocab vocabulary.
TokenCorpus load_corpus(const GptTrainOptions& o) {
  if (!is_token_file(o.data)) {
    if (o.vocab != 0) throw InputError("--vocab", "is for token files (.bin); a text file's vocabulary is its characters");
    if (!o.val_data.empty()) throw InputError("--val-data", "is for token files (.bin); a text file is split 90/10");
    return read_text_corpus(o.data);
  }
  if (o.vocab < 1) throw InputError("--vocab", "a token file (.bin) needs the vocabulary size, e.g. --vocab 50257");
  TokenCorpus c;
  c.vocab = o.vocab;
  c.train = read_token_file(o.data, o.vocab);
  if (!o.val_data.empty()) {
    c.val = read_token_file(o.val_data, o.vocab);
    // Named here: the trainer's own check knows only "--data" (a split of one file).
    const auto need = static_cast<std::size_t>(o.cfg.model.block) + 1;
    if (c.val.size() < need)
      throw InputError(o.val_data, fmt::format("--val-data has {} tokens, fewer than --block + 1 = {}", c.val.size(), need));
  } else {  // nanoGPT's split: the last 10 % validates
    const auto n = c.train.size(), cut = n * 9 / 10;
    c.val.assign(c.train.begin() + static_cast<std::ptrdiff_t>(cut), c.train.end());
    c.train.resize(cut);
  }
  return c;
}

// Peak bytes per kind (largest over ranks), with Ψ and the ZeRO block they follow from.
nlohmann::json memory_json(const GptTrainResult& r) {
  nlohmann::json j{{"shard_params", r.max_shard_params}, {"zero_block_params", r.max_zero_block}};
  for (int k = 0; k < kMemoryKinds; ++k)
    j[std::string(memory_kind_name(MemoryKind(k))) + "_bytes"] = r.max_kind_bytes[static_cast<std::size_t>(k)];
  return j;
}

const std::map<std::string, std::string> kStepReductions = {
    {"step_seconds", "rank 0"},
    {"tokens_per_second", "rank 0's step: the tokens of every replica over its time"},
    {"comm_bytes", "sum over ranks, per axis (each rank counts the bytes it receives)"},
    {"dp_reduce", "rank 0"},
    {"loss", "global: the mean over every replica's micro-batches"},
};

nlohmann::ordered_json step_json(const GptStepMetrics& m) {
  nlohmann::ordered_json j{{"iter", m.iter},
                   {"loss", m.loss},
                   {"lr", m.lr},
                   {"grad_norm", m.grad_norm},
                   {"step_seconds", m.step_seconds},
                   {"tokens_per_second", m.tokens_per_second},
                   {"comm_bytes", axis_bytes_json(m.comm_bytes)}};
  if (m.evaluated) j["val_loss"] = m.val_loss;
  if (m.evaluation_abandoned) j["val_loss"] = nullptr;  // due, but a stop abandoned it
  if (m.dp_reduce_seconds > 0)
    j["dp_reduce"] = {{"seconds", m.dp_reduce_seconds}, {"exposed_seconds", m.dp_exposed_seconds}};
  return j;
}

// Whether some rank splits its attention by positions (GptLayout::context_parallel, as the
// model will on `be`).
bool splits_positions(const GptConfig& c, GridShape shape, index_t batch, int dp, const Backend& be) {
  const GptConfig run = gpt_config_on(c, be);
  for (int d = 0; d < dp; ++d)
    for (int z = 0; z < shape.z; ++z)
      if (gpt_layout_at(shape, {0, 0, z}, run, batch, dp, d).context_parallel) return true;
  return false;
}

void run_gpt_train(GptTrainOptions& o, const CLI::App& cmd) {
  o.cfg.model.tied = !o.untie;
  o.cfg.precision = precision_of(o.precision);
  o.cfg.matmul_precision = matmul_precision_of(
      o.matmul_precision, o.cfg.precision == Precision::BF16 ? MatmulPrecision::BF16 : MatmulPrecision::FP32);
  o.threads = threads_per_rank(o.threads);
  if (o.data.empty()) o.data = default_dataset("tinyshakespeare.txt");
  validate(o.cfg);
  const std::size_t memory_limit = parse_memory_budget(o.memory_per_rank);
  set_rank_memory_budget(memory_limit);
  const GridChoice grid_choice = choose_gpt_grid(o.grid, o.cfg, o.dp);
  auto grid = ProcessGrid::create(grid_choice.shape, o.dp);
  RunBackend run = make_run_backend(o.backend, o.threads, o.profile, *grid);
  Backend* backend = &run.get();
  backend->set_memory_limit(memory_limit);
  KernelProfiler* profiler = run.profiler.get();
  const bool root = grid->rank() == 0;
  if (!root) o.quiet = true;
  TrainingRun training(*grid, "step", {o.metrics, "--save", o.save, o.checkpoints, {o.data, o.config}}, o.quiet,
                       profiler);
  if (!o.quiet && !grid_choice.why.empty()) fmt::print("--grid auto: {} ({})\n", grid->shape().str(), grid_choice.why);
  training.header("gpt train", cmd,
                  {{"data", o.data},
                   {"grid", grid->shape().str()},
                   {"dp", grid->dp()},
                   {"ranks", grid->size()},
                   {"threads", o.threads},
                   {"backend", backend->name()},
                   {"matmul_precision", matmul_precision_name(o.cfg.matmul_precision)}},
                  kStepReductions);

  training.measure_base_rss();
  const TokenCorpus corpus = load_corpus(o);
  o.cfg.model.vocab = corpus.vocab;
  const std::string& resume_from = training.resume_from();
  std::optional<GptCheckpoint> resume;
  if (!resume_from.empty()) {
    require_model_file(resume_from, ModelFamily::Gpt);  // a GNN's checkpoint is named as one
    resume = read_gpt_checkpoint_h5(resume_from);
  }
  // Before the model is built, not by the OOM killer.
  check_gpt_memory(o.cfg, grid->shape(), o.dp, is_token_file(o.data) ? "--vocab" : o.data);
  if (!o.quiet)
    fmt::print("{}: {} training and {} validation tokens, vocabulary {}; backend {}, grid {}{}{}{}{}\n", o.data,
               corpus.train.size(), corpus.val.size(), corpus.vocab, backend->name(), grid->shape().str(),
               o.dp > 1 ? fmt::format(" x {} replicas (ZeRO-{})", o.dp, o.cfg.zero_stage) : std::string(),
               // (where it splits something: X or Y of more than one rank)
               o.cfg.model.sequence_parallel && grid->dim(Axis::X) * grid->dim(Axis::Y) > 1 ? ", sequence-parallel" : "",
               splits_positions(o.cfg.model, grid->shape(), o.cfg.batch, o.dp, *backend) ? ", context-parallel" : "",
               o.cfg.precision == Precision::BF16 ? ", bf16" : "");

  training.start(resume ? resume->iters_done : 0, o.cfg.iters, std::max(1, o.cfg.iters / 100));
  // From before the model is built.
  const auto t_start = std::chrono::steady_clock::now();
  GptTrainer trainer(corpus, o.cfg, *backend, *grid);
  // A stop is honoured before the next micro-batch or evaluation batch (docs/checkpoints.md).
  trainer.set_stop_check([&] { return training.stop_agreed(); });
  trainer.set_run_id(training.run_id());  // stored in each checkpoint (docs/checkpoints.md)
  if (resume) {
    try {
      trainer.set_state(*resume);
    } catch (const InputError& e) {
      throw InputError(resume_from, e.what());
    }
  }
  const auto on_step = [&](const GptStepMetrics& m) {
    training.step_done(step_json(m), m.iter,
                       fmt::format("loss {:.4f}  lr {:.2e}  |g| {:.3f}  {:8.0f} tok/s{}", m.loss, m.lr, m.grad_norm,
                                   m.tokens_per_second, m.evaluated ? fmt::format("  val {:.4f}", m.val_loss) : ""),
                       m.step_seconds, m.evaluated);
  };
  const auto save = [&](const std::string& path) { trainer.save(path); };
  GptTrainResult r = trainer.run(on_step, [&] { return training.stop_after(trainer.iters_done(), save); });
  r.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  training.finish(r.iters_done, [&] {
    if (!o.save.empty()) trainer.save_model(o.save);
  });
  if (!root) return;
  training.print_interruption();
  // --eval-every 0 never evaluates, and a run stopped during its first evaluation has none: no
  // validation loss to report (NaN: 0 would read as a perfect one).
  const bool evaluated = !std::isnan(r.best_val_loss);
  if (evaluated)
    fmt::print("{} parameters; best validation loss {:.4f} ({:.1f} s)\n", r.params, r.best_val_loss, r.total_seconds);
  else
    fmt::print("{} parameters; not evaluated ({}) ({:.1f} s)\n", r.params,
               o.cfg.eval_every > 0 ? "stopped before its first evaluation completed" : "--eval-every 0", r.total_seconds);
  double comm_seconds = 0;
  for (const GptStepMetrics& m : r.steps) comm_seconds += m.comm_seconds;
  training.summary(r.total_seconds, comm_seconds, "iters_done", r.iters_done,
                   {{"initial_val_loss", std::isnan(r.initial_val_loss) ? nlohmann::json() : nlohmann::json(r.initial_val_loss)},
                    {"best_val_loss", evaluated ? nlohmann::json(r.best_val_loss) : nlohmann::json()},
                    {"total_seconds", r.total_seconds},
                    {"params", r.params},
                    {"weight_bytes", r.max_weight_bytes},
                    {"weight_bytes_total", r.total_weight_bytes},
                    {"base_rss_bytes", training.base_rss()},
                    {"peak_rss_bytes", training.peak_rss()},
                    {"peak_tensor_bytes", r.max_peak_tensor_bytes},
                    {"ranks", grid->size()},
                    {"grid", grid->shape().str()},
                    {"dp", grid->dp()},
                    {"zero", o.cfg.zero_stage},
                    {"recompute", o.cfg.model.recompute},
                    {"sequence_parallel", o.cfg.model.sequence_parallel},
                    {"context_parallel", context_parallel_name(o.cfg.model.context_parallel)},
                    {"precision", o.precision},
                    {"matmul_precision", matmul_precision_name(o.cfg.matmul_precision)},
                    {"memory", memory_json(r)},
                    {"backend", backend->name()}});
}

struct GptSampleOptions {
  std::string model, prompt = "\n", prompts, backend = "auto", grid = "auto";
  int tokens = 500, top_k = 0, threads = 0;
  float temperature = 1.0f;
  std::uint64_t seed = 1337;
  bool no_kv_cache = false, profile = false;
};

// --prompts FILE: one prompt a line (UTF-8, the line's end not part of it).
std::vector<std::string> read_prompt_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot be read");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  if (lines.empty()) throw InputError(path, "holds no prompt (one a line)");
  return lines;
}

void run_gpt_sample(GptSampleOptions& o) {
  require_model_file(o.model, ModelFamily::Gpt);  // a GNN model file is named as one
  const GptModelFile m = read_gpt_model_h5(o.model);
  if (m.chars.empty()) throw InputError(o.model, "has no character vocabulary: sampling text needs a character-level model");
  const std::vector<std::string> texts = o.prompts.empty() ? std::vector<std::string>{o.prompt} : read_prompt_lines(o.prompts);
  std::vector<std::vector<std::int32_t>> prompts;
  for (std::size_t i = 0; i < texts.size(); ++i)
    prompts.push_back(encode_chars(m.chars, texts[i], o.prompts.empty() ? "--prompt" : fmt::format("{}: prompt {}", o.prompts, i + 1)));
  // Sizes from the file's attributes, before the forward pass.
  GptTrainConfig shape;  // what --grid auto plans: one step of the prompts' batch
  shape.model = m.config;
  shape.batch = static_cast<index_t>(prompts.size());
  const GridShape grid_shape = choose_gpt_grid(o.grid, shape, 1).shape;
  check_sample_memory(m.config, shape.batch, !o.no_kv_cache, grid_shape, o.model);
  auto grid = ProcessGrid::create(grid_shape, 1);
  RunBackend run = make_run_backend(o.backend, threads_per_rank(o.threads), o.profile, *grid);
  GptGenerateOptions g;
  g.tokens = o.tokens;
  g.temperature = o.temperature;
  g.top_k = o.top_k;
  g.seed = o.seed;
  g.kv_cache = !o.no_kv_cache;
  const GptGeneration out = generate_gpt(m.config, m.weights, prompts, g, run.get(), *grid);
  if (grid->rank() != 0) return;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    std::string text = texts[i];
    for (const std::int32_t t : out.tokens[i]) text += m.chars[static_cast<std::size_t>(t)];
    if (texts.size() > 1) fmt::print("--- prompt {} ---\n", i + 1);
    fmt::print("{}\n", text);
  }
  fmt::print(stderr, "plexus: {} tokens in {:.3f} s: {:.1f} tokens/s, first token after {:.3f} s ({} prompt{}, grid {}, {})\n",
             out.generated, out.seconds, out.tokens_per_second(), out.first_token_seconds, prompts.size(),
             prompts.size() == 1 ? "" : "s", grid->shape().str(),
             g.kv_cache ? fmt::format("KV cache {} bytes a rank", out.cache_bytes) : std::string("no KV cache"));
  if (run.profiler) print_profile(*run.profiler, out.seconds, 0.0);
}

}  // namespace

void add_gpt_command(CLI::App& app) {
  CLI::App* gpt = app.add_subcommand("gpt", "GPT-2-style transformers on the 3D-PMM core (train, sample)");
  gpt->require_subcommand(1);

  auto t = std::make_shared<GptTrainOptions>();
  CLI::App* train = gpt->add_subcommand("train", "Train a GPT (default: a character-level baby GPT on tiny Shakespeare)");
  GptTrainConfig& c = t->cfg;
  add_data_option(train, t->data, "UTF-8 text (character-level) or llm.c token file (.bin); default: tiny Shakespeare");
  train->add_option("--val-data", t->val_data, "Validation token file (.bin; default: the last 10 % of --data)");
  train->add_option("--vocab", t->vocab, "Vocabulary size of a token file");
  train->add_option("--config", t->config, "TOML file of option values (keys = long option names)");
  train->add_option("--layers", c.model.layers, "Transformer blocks")->capture_default_str();
  train->add_option("--heads", c.model.heads, "Attention heads")->capture_default_str();
  train->add_option("--embed", c.model.embed, "Embedding width (divisible by --heads)")->capture_default_str();
  train->add_option("--block", c.model.block, "Context length")->capture_default_str();
  train->add_flag("--untie", t->untie, "Give the LM head its own weight instead of the token embedding");
  train->add_flag("--recompute", t->cfg.model.recompute,
                  "Each block keeps only its input from forward to backward and runs its forward again there: less "
                  "activation memory, the same losses (docs/gpt.md)");
  add_sequence_parallel_option(train, t->sequence_parallel, /*both=*/false);
  add_context_parallel_option(train, t->cfg.model.context_parallel);
  train->add_option("--batch", c.batch, "Sequences per micro-batch")->capture_default_str();
  train->add_option("--iters", c.iters, "Optimizer steps (0: initialise, evaluate and save only)")->capture_default_str();
  train->add_option("--lr", c.lr, "Peak learning rate (AdamW)")->capture_default_str();
  train->add_option("--min-lr", c.min_lr, "Learning rate at the end of the cosine decay")->capture_default_str();
  train->add_option("--warmup", c.warmup, "Linear warmup steps")->capture_default_str();
  train->add_option("--weight-decay", c.weight_decay, "Decoupled weight decay on matrices and embeddings")
      ->capture_default_str();
  train->add_option("--beta2", c.beta2, "AdamW beta2")->capture_default_str();
  train->add_option("--dropout", c.dropout, "Dropout on embeddings, attention probabilities and residual branches")
      ->capture_default_str();
  train->add_option("--grad-clip", c.grad_clip, "Clip gradients to this global norm (0 = off)")->capture_default_str();
  train->add_option("--grad-accum", c.grad_accum, "Micro-batches per optimizer step")->capture_default_str();
  train->add_option("--eval-every", c.eval_every, "Evaluate on the validation split every N steps (0 = never)")
      ->capture_default_str();
  train->add_option("--eval-iters", c.eval_iters, "Validation batches per evaluation")->capture_default_str();
  train->add_option("--seed", c.seed, "Seed of weights, batches and dropout")->capture_default_str();
  train->add_option("--grid", t->grid,
                    "Tensor-parallel grid XxYxZ of one replica, or auto: the grid plexus plan gpt predicts fastest "
                    "for the ranks started divided by --dp")
      ->capture_default_str();
  train->add_option("--dp", t->dp, "Data-parallel replicas of the grid (ranks = dp·X·Y·Z)")->capture_default_str();
  train->add_option("--zero", c.zero_stage, "ZeRO stage over the replicas: 0 all-reduce, 1 optimizer state, "
                                            "2 + gradients, 3 + parameters sharded")
      ->capture_default_str();
  train->add_option("--bucket-mb", c.bucket_mb, "Largest gradient-reduction bucket (MiB)")->capture_default_str();
  add_precision_option(train, t->precision);
  add_matmul_precision_option(train, t->matmul_precision, "bf16 with --precision bf16, else fp32");
  train->add_option("--memory-per-rank", t->memory_per_rank,
                    "Refuse to allocate past this many bytes per rank (e.g. 512M, 2G)");
  train->add_option("--threads", t->threads, "CPU threads per rank (0 = the node's cores divided among its ranks)")
      ->capture_default_str();
  train->add_option("--backend", t->backend, "Kernel backend")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "reference"}))
      ->capture_default_str();
  train->add_option("--metrics", t->metrics, "Write per-step metrics as JSON Lines to FILE");
  train->add_option("--save", t->save, "Write the trained model (HDF5, GPT-2 tensor names) to FILE");
  add_checkpoint_options(train, t->checkpoints, "steps");
  train->add_flag("--quiet,-q", t->quiet, "Print only the final result");
  train->add_flag("--profile", t->profile,
                  "Time every kernel (waiting for the device after each) and print the breakdown; rank 0's");
  train->callback([t, train] {
    if (!t->config.empty()) apply_config_file(t->config, *train);
    t->cfg.model.sequence_parallel = t->sequence_parallel == "on";
    run_gpt_train(*t, *train);
  });

  auto s = std::make_shared<GptSampleOptions>();
  CLI::App* sample = gpt->add_subcommand("sample", "Generate text with a model saved by `plexus gpt train --save`");
  sample->add_option("--model", s->model, "Model file (HDF5)")->required();
  CLI::Option* prompt = sample->add_option("--prompt", s->prompt, "Text to continue")->capture_default_str();
  sample->add_option("--prompts", s->prompts, "File of prompts, one a line, generated for in one batch")
      ->excludes(prompt);
  sample->add_option("--tokens", s->tokens, "Characters to generate (after each prompt)")->capture_default_str();
  sample->add_option("--temperature", s->temperature, "Softmax temperature")->capture_default_str();
  sample->add_option("--top-k", s->top_k, "Sample among the k most likely (0 = all)")->capture_default_str();
  sample->add_option("--seed", s->seed, "Sampling seed")->capture_default_str();
  sample->add_option("--threads", s->threads, "CPU threads (per rank)")->capture_default_str();
  sample->add_option("--grid", s->grid,
                     "XxYxZ process grid (the prompts over Z, embedding over Y, heads and vocabulary over X), or auto: "
                     "the grid plan ranks first for the ranks started")
      ->capture_default_str();
  sample->add_flag("--profile", s->profile, "Time every kernel (rank 0's, model set-up included) and print a breakdown");
  sample->add_flag("--no-kv-cache", s->no_kv_cache,
                   "Run every new token over each prompt's whole window again instead of one row through a cache of "
                   "keys and values (the same tokens; for comparison)");
  sample->add_option("--backend", s->backend, "Kernel backend")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "reference"}))
      ->capture_default_str();
  sample->callback([s] { run_gpt_sample(*s); });
}

}  // namespace plexus::cli
