#pragma once
// GPT training: a GPT-2-style decoder on the same 3D parallel matrix multiply as the GCN
// (every linear layer is a Linear3D), tensor-parallel over any X×Y×Z grid. The CLI's
// `plexus gpt train` and `plexus gpt sample` call this.
//
// Layout on the grid (docs/gpt.md): whole sequences of the batch over Z, the hidden (embedding)
// features over Y, attention heads — and the MLP's 4·embed features and the vocabulary — over X.
// A fourth axis, D, holds data-parallel replicas of that grid (the global batch split between
// them), with ZeRO's stages of sharding over it (docs/data-parallel.md).
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

struct GptConfig {
  int layers = 4;
  int heads = 4;
  index_t embed = 128;
  index_t block = 64;  // context length
  index_t vocab = 65;
  bool tied = true;    // LM head = token embedding (GPT-2); false: its own weight
  // Not part of the model (model files and checkpoints do not record it): each block keeps only
  // its input from forward to backward and runs its forward again there (`--recompute`,
  // docs/gpt.md). The same numbers bit for bit, less activation memory.
  bool recompute = false;
  // Not part of the model either: sequence parallelism (on by default; `--sequence-parallel=off`
  // turns it off, docs/gpt.md). What the tensor-parallel linears leave replicated is split
  // instead: the residual stream's rows (LayerNorms, dropout, residual adds) over X, the MLP's
  // GELU's and the logits' rows over Y, and the attention's whole sequences over Y; the
  // linears' all-reduces become an all-gather before and a reduce-scatter after (the same
  // bytes). The same losses to rounding (the sums' order differs); less memory and work per
  // rank. On a grid of X = Y = 1 it splits nothing.
  bool sequence_parallel = true;
  // With sequence parallelism, how the attention splits over Y (`--context-parallel`,
  // docs/gpt.md): Off, in whole sequences; On, context parallelism: every sequence's positions,
  // each Y rank the queries of a front and a back chunk (which balances the causal triangle),
  // the keys and values all-gathered over Y and their gradients reduce-scattered back; Auto,
  // context parallelism where a Z rank has fewer sequences than Y ranks (whole sequences would
  // leave a Y rank without attention), on a backend with its kernels (the CPU's).
  enum class ContextParallel { Auto, On, Off };
  ContextParallel context_parallel = ContextParallel::Auto;
};
// Throws InputError naming the field for the first bad value ("GptConfig.heads").
void validate(const GptConfig& c);

// A token stream split into training and validation parts, with what decodes it.
struct TokenCorpus {
  std::vector<std::int32_t> train, val;
  index_t vocab = 0;
  std::vector<std::string> chars;  // character-level: the UTF-8 text of each token id (else empty)
};
// Character-level corpus of a UTF-8 text file: vocabulary = its distinct characters in code-point
// order (nanoGPT's prepare.py), first 90 % train, last 10 % validation.
TokenCorpus read_text_corpus(const std::string& path);
// llm.c's token file (256 int32 header: magic 20240520, version 1, token count; then uint16
// tokens). Checks every token < vocab.
std::vector<std::int32_t> read_token_file(const std::string& path, index_t vocab);
// Encodes text with a character vocabulary; throws InputError(where, ...) for unknown characters.
std::vector<std::int32_t> encode_chars(const std::vector<std::string>& chars, const std::string& text,
                                       const std::string& where);

struct GptTrainConfig {
  GptConfig model;
  index_t batch = 12;
  int iters = 2000;
  float lr = 1e-3f, min_lr = 1e-4f;
  int warmup = 100;
  float weight_decay = 0.1f;  // AdamW, on matrices and embeddings only
  float beta1 = 0.9f, beta2 = 0.99f;
  float dropout = 0.0f;
  float grad_clip = 1.0f;     // by the global norm over all shards; 0 = off
  int grad_accum = 1;
  int eval_every = 250;       // 0 = never
  int eval_iters = 20;
  std::uint64_t seed = 1337;
  int zero_stage = 0;         // ZeRO over the data-parallel axis: 0..3
  double bucket_mb = 25.0;    // largest gradient-reduction bucket, MiB
  // FP32, or BF16: bfloat16 parameters, gradients and data-parallel collectives with fp32
  // master weights and Adam state; GEMMs in bf16 where the backend has them (CUDA).
  Precision precision = Precision::FP32;
  // How GEMMs multiply (CUDA; MatmulPrecision in tensor.hpp). The CLI makes it BF16 with
  // --precision bf16 unless --matmul-precision says otherwise.
  MatmulPrecision matmul_precision = MatmulPrecision::FP32;
};
void validate(const GptTrainConfig& c);
// nanoGPT's schedule: linear warmup over `warmup` steps, cosine decay to min_lr at `iters`.
float gpt_learning_rate(const GptTrainConfig& c, int iter);

struct GptStepMetrics {
  int iter = 0;            // 1-based: the number of optimizer steps taken
  double loss = 0;         // mean training loss of the step's micro-batches
  double lr = 0, grad_norm = 0;
  double step_seconds = 0, tokens_per_second = 0;
  std::array<double, 4> comm_bytes{};  // this step's collectives per axis (x, y, z, d), summed over ranks
  double comm_seconds = 0;             // this rank's time inside collectives
  // Data-parallel gradient reduction (rank 0): from its first bucket's start to its last one's
  // end, and of that the time the backward pass waited for it (the rest overlapped compute).
  double dp_reduce_seconds = 0, dp_exposed_seconds = 0;
  bool evaluated = false;
  double val_loss = 0;     // when evaluated (after this step)
  // An evaluation was due after this step but a graceful stop abandoned it (a resumed run
  // makes it up: GptTrainer).
  bool evaluation_abandoned = false;
};

// Parameters in GPT-2's layout and names (wte [vocab × embed], wpe, h.<l>.attn.c_attn.weight
// [embed × 3·embed] with columns q | k | v, ...), whole, row-major.
struct GptTensor {
  index_t rows = 0, cols = 0;
  std::vector<float> data;
  bool operator==(const GptTensor&) const = default;
};
using GptWeights = std::map<std::string, GptTensor>;

// A saved model (`plexus gpt train --save`): HDF5, one dataset per tensor under its GPT-2 name
// (docs/gpt.md, "Model files"), the configuration as attributes and the character vocabulary.
struct GptModelFile {
  GptConfig config;
  std::vector<std::string> chars;  // character-level vocabulary (empty for token-file models)
  GptWeights weights;
};
// Written atomically (a temporary file renamed into place): never half-written.
void write_gpt_model_h5(const std::string& path, const GptModelFile& model);
// Throws InputError(path, ...) for a missing, malformed or inconsistent file.
GptModelFile read_gpt_model_h5(const std::string& path);

struct GptTrainResult {
  std::vector<GptStepMetrics> steps;
  // NaN when never evaluated (--eval-every 0, or a run stopped before its first evaluation
  // completed): test with std::isnan; 0 would read as a perfect loss.
  double initial_val_loss = std::numeric_limits<double>::quiet_NaN(), best_val_loss = std::numeric_limits<double>::quiet_NaN();
  double total_seconds = 0;
  std::size_t params = 0;                  // parameters of the whole model
  std::size_t weight_bytes = 0;            // this rank's parameter shards (float32)
  std::size_t max_weight_bytes = 0;        // the largest over ranks
  std::size_t total_weight_bytes = 0;      // summed over ranks
  std::size_t peak_tensor_bytes = 0, max_peak_tensor_bytes = 0;
  // Peak bytes per MemoryKind (parameters, gradients, optimizer, activations, workspace), the
  // largest over ranks; and Ψ, the parameters of the largest replica shard of a rank, and the
  // largest ZeRO block of it (Ψ/D rounded up).
  std::array<std::size_t, kMemoryKinds> max_kind_bytes{};
  std::size_t max_shard_params = 0, max_zero_block = 0;
  int iters_done = 0;                      // steps taken in all (a resumed run's included)
  bool stopped = false;                    // ended early (GptTrainer::run's stop, or its stop check)
};

// A training checkpoint (`plexus gpt train --checkpoint-dir`, docs/checkpoints.md): a model
// file whose tensors are the values the optimizer updates (fp32; under BF16 the master copy),
// plus their AdamW moments by GPT-2 name, the steps taken, the evaluations so far and the
// options of the run. Every tensor is whole (by global index): any grid, replica count or
// ZeRO stage resumes it.
struct GptCheckpoint {
  GptModelFile model;
  GptWeights adam_m, adam_v;
  std::int64_t iters_done = 0;
  double initial_val_loss = std::numeric_limits<double>::quiet_NaN(), best_val_loss = std::numeric_limits<double>::quiet_NaN();  // NaN: not evaluated
  GptTrainConfig options;  // of the run that wrote it (model, batch, schedule, seed, ...)
  std::string run_id;      // the run that wrote it (root attribute run_id; docs/checkpoints.md); "" for none
};
// Written atomically; read defensively (InputError(path, ...)). write_gpt_checkpoint_h5 takes
// the whole state (GptTrainer::save gathers it; rank 0 writes).
void write_gpt_checkpoint_h5(const std::string& path, const GptCheckpoint& c);
GptCheckpoint read_gpt_checkpoint_h5(const std::string& path);
// Throws InputError(path, ...) naming the first field of `now` that differs from the
// checkpoint's in a way that changes the run (the grid, replicas, ZeRO stage and bucket may
// change), or when the checkpoint has more steps than now.iters.
void check_resumable(const GptCheckpoint& c, const GptTrainConfig& now, const std::string& path);

// Text generation (docs/gpt.md, "Generation"): `tokens` new tokens after each prompt, drawn from
// softmax(logits / temperature) over the top_k most likely (0: all; top_k 1 is greedy). The
// draw of prompt i's token at position t is keyed by (seed, i, t): the same tokens on every grid,
// alone or in a batch, with the KV cache or without.
struct GptGenerateOptions {
  int tokens = 256;
  float temperature = 1.0f;
  int top_k = 0;
  std::uint64_t seed = 1337;
  // Keep each layer's keys and values (split as the attention is) and run one row per sequence
  // per new token; false: the whole window of every sequence again for every token (the path
  // without a cache, for comparison). Past the model's context (block) the window slides, and
  // every token is a whole window's pass either way.
  bool kv_cache = true;
};

struct GptGeneration {
  std::vector<std::vector<std::int32_t>> tokens;  // per prompt, the new tokens
  double seconds = 0;              // the whole generation (rank 0's clock), the model's set-up excluded
  double first_token_seconds = 0;  // until every prompt had its first new token
  std::int64_t generated = 0;      // new tokens over all prompts
  std::size_t cache_bytes = 0;     // the largest KV cache of a rank (0 without)
  double tokens_per_second() const { return seconds > 0 ? static_cast<double>(generated) / seconds : 0.0; }
};

// Generates for a batch of prompts (token ids, each its own length; an empty prompt starts from
// token 0) on `grid` (every rank calls it with the same arguments): the prompts' sequences split
// over Z, embedding features over Y, heads and vocabulary over X, as training splits them, with
// one data-parallel replica. Throws InputError naming the option ("generate_gpt(top_k)") for bad
// options or a token outside the vocabulary.
GptGeneration generate_gpt(const GptConfig& model, const GptWeights& weights,
                           const std::vector<std::vector<std::int32_t>>& prompts, const GptGenerateOptions& options,
                           Backend& backend, ProcessGrid& grid);

// One prompt on one rank (generate_gpt on a grid of one, with the KV cache).
std::vector<std::int32_t> sample_gpt(const GptConfig& model, const GptWeights& weights,
                                     const std::vector<std::int32_t>& prompt, int tokens, float temperature,
                                     int top_k, std::uint64_t seed, Backend& backend);

}  // namespace plexus
