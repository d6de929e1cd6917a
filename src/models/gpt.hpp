#pragma once
// The GPT model on the 3D grid: token + position embeddings (Embedding3D), blocks (GptBlock),
// final LayerNorm, LM head (a Linear3D Y → X over the vocabulary; tied: the token table is its
// weight) and the cross-entropy over the vocabulary sharded over X (CrossEntropy3D, the GCN's
// sharded loss). Every parameter shard is listed once in a registry that says where it sits in
// GPT-2's tensors, which drives initialisation, saving and loading. The model's ZeroOptimizer
// (optim/zero.hpp) stores the parameters and gradients, reduces the gradients over the
// data-parallel axis and takes the AdamW step; its units are the embeddings with the final
// LayerNorm and head (unit 0) and each block (unit 1 + b).
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/gpt_block.hpp"
#include "models/gpt_layout.hpp"
#include "optim/zero.hpp"
#include "plexus/gpt.hpp"
#include "pmm/cross_entropy_3d.hpp"
#include "pmm/embedding_3d.hpp"

namespace plexus {

// One parameter shard held by this rank and where its elements sit in the GPT-2 tensor.
struct GptParam {
  std::string name;
  index_t rows = 0, cols = 0;  // the whole tensor (vectors: 1 × n)
  float* value = nullptr;       // where the optimizer binds them (nullptr while not gathered)
  float* grad = nullptr;
  int unit = 0;                 // the ZeroOptimizer unit
  std::function<void(float*, float*)> bind_layer;  // points the layer at value and grad
  Range local_rows;            // global rows held here (contiguous)
  Range local_cols;            // local columns map to global ones through `column`
  index_t (*column)(index_t local_col, const GptParam& p) = nullptr;
  index_t head_dim = 0, embed = 0;  // for the qkv column map
  bool owner = true;           // replicated shards: only one replica counts (norm, saving)
  bool decay = false;          // weight decay: matrices and embeddings
  enum class Init { Normal, Residual, Zero, One } init = Init::Normal;
  std::size_t size() const { return static_cast<std::size_t>(local_rows.size() * local_cols.size()); }
};

class GptModel {
 public:
  GptModel(Backend& be, ProcessGrid& grid, const GptConfig& cfg, index_t batch, ZeroOptions zero = {},
           AdamParams adam = {});
  // GPT-2 initialisation drawn by global index (every grid starts from the same weights).
  void init_weights(std::uint64_t seed);
  void load_weights(const GptWeights& w);
  // The whole tensors, on every rank (owners' shards summed over the replica).
  GptWeights gather_weights();
  // The optimizer's state by GPT-2 name, whole, on every rank: the values Adam updates (BF16:
  // the fp32 master, not the rounded parameters), its moments m and v, and the steps taken
  // (each element from the one rank that keeps it, summed over all ranks). load_optimizer_state
  // is the reverse on any grid, replica count or ZeRO stage: the values through load_weights,
  // this rank's range of m and v, the step count. For checkpoints (docs/checkpoints.md).
  struct OptimizerTensors {
    GptWeights value, m, v;
    std::int64_t steps = 0;
  };
  OptimizerTensors gather_optimizer_state();
  void load_optimizer_state(const OptimizerTensors& s);

  // One micro-batch of this rank's rows (ids, targets: layout().rows each): forward and the
  // mean cross-entropy scaled by `loss_scale` per token; with `train`, backward accumulating
  // the gradients. Returns the loss sum over the whole batch (every rank gets it).
  double step(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& targets, float loss_scale,
              const GptDropout& drop, bool train);
  // Logits of the last step that did not train (a training step frees them once spent)
  // [rows × vocab shard], replicated over Y (sequence parallelism: this rank's rows over Y,
  // layout().mlp_rows).
  Matrix& logits() { return lm_head_->output(); }

  // Generation with a KV cache (models/gpt_generate.cpp). A model that decodes for `of`: one row
  // per sequence of a batch of `batch` sequences (-1: of's; `of` may hold none: its parameters
  // only), on of's grid, each block with its cache; its parameters are of's (bound, not copied:
  // `of` outlives it and keeps them whole, ZeRO stage 0–2, fp32).
  static std::unique_ptr<GptModel> decoder_of(GptModel& of, index_t batch = -1);
  // Decoding: ids[b] the token at position pos[b] of local sequence b (pos[b] < block, the cache
  // holding positions 0..pos[b]−1). Returns the logits [sequences × vocab shard], replicated over Y.
  Matrix& decode(const std::vector<std::int32_t>& ids, const std::vector<index_t>& pos);
  // Decoding: each local sequence b's positions 0..lengths[b]−1 into the caches from `prefilled`
  // (a whole-sequence model of the same batch and grid, its context at most the decoder's: the
  // one decoder_of was given, or one of a shorter context), whose forward pass (step) has just
  // run on those tokens.
  void load_cache(GptModel& prefilled, const std::vector<index_t>& lengths);
  // Decoding: this rank's KV caches, bytes.
  std::size_t cache_bytes() const;

  // Gradients, their norm and clipping, and the AdamW step (then call weights_updated()).
  ZeroOptimizer& optimizer() { return zero_opt(); }
  void zero_grads() { zero_opt().zero_grads(); }
  // Σ g² over the whole model (each element counted once), on every rank.
  double grad_squared_norm() { return zero_opt().grad_squared_norm(); }
  void weights_updated();
  std::size_t num_params() const;    // whole model
  std::size_t weight_bytes() const;  // this rank's shards
  const GptLayout& layout() const { return layout_; }
  const std::vector<GptParam>& params() const { return params_; }

 private:
  struct Decoding {};
  GptModel(GptModel& of, index_t batch, Decoding);
  // The layers (embeddings, blocks, final LayerNorm, head) and x0 of layout_.
  void build_layers();
  // The optimizer that stores the parameters (a decoder has none: a std::logic_error).
  ZeroOptimizer& zero_opt() const {
    if (!zero_) throw std::logic_error("GptModel: a decoder holds no parameters of its own");
    return *zero_;
  }
  void register_params();
  // The tensors of the registry for the optimizer, which binds them.
  std::vector<FlatTensor> flat_tensors();
  // Host values of every tensor of `unit` written to / read from this rank's shards.
  void write_unit(int unit, const std::function<float(const GptParam&, index_t row, index_t col)>& value);
  void add_linear(const std::string& name, Linear3D& lin, index_t in_dim, index_t out_dim, bool residual,
                  bool qkv_columns, int unit);
  void add_vector(std::string name, ParamSlot& slot, index_t n, Range cols, bool owner, GptParam::Init init,
                  int unit, bool qkv_columns = false);
  void add_table(std::string name, Linear3D& table, index_t rows, int unit);

  Backend& be_;
  ProcessGrid& grid_;
  GptConfig cfg_;
  index_t batch_ = 0;  // sequences of the whole batch
  GptLayout layout_;
  std::unique_ptr<Linear3D> lm_head_, wte_untied_, wpe_;
  std::unique_ptr<Embedding3D> tok_emb_, pos_emb_;
  std::vector<std::unique_ptr<GptBlock>> blocks_;
  std::unique_ptr<LayerNorm3D> ln_f_;
  Matrix x0_, d_x_;  // the residual stream's rows (GptLayout::res_rows)
  // Sequence parallelism over X: the embeddings of all rows before their reduce-scatter over X
  // (forward), then their gradient all-gathered over X (backward).
  Matrix emb_;
  std::vector<std::size_t> embedding_counts() const;  // the rows' slices over X, as counts
  bool scatters_embeddings() const { return layout_.sequence_parallel && grid_.dim(layout_.head) > 1; }
  std::unique_ptr<CrossEntropy3D> xent_;  // over the vocabulary, split over X
  Buffer<float> token_weights_;
  Buffer<std::int32_t> labels_;
  Matrix d_logits_;
  std::vector<std::int32_t> positions_;
  std::vector<GptParam> params_;
  std::unique_ptr<ZeroOptimizer> zero_;
};

// The models a generation runs (generate_gpt; the plan's dry run of it, plan/generation_plan.cpp):
//  - `full`, of the model's context T: the parameters the decoder binds, and the window passes of
//    T positions (without the cache every token; with it, once a sequence outgrows the context).
//    It holds no sequence (its parameters only) when no such pass will run;
//  - `prefill`, with the cache when no window pass of T positions will run (the prompts and the
//    tokens fit the context): the first pass over the longest prompt's W < T positions only (its
//    own copy of the parameters, wpe's first W rows), whose keys and values enter the caches;
//    freed once it has run;
//  - `decoder` (with the cache): GptModel::decoder_of(full).
// `weights` null: a dry run (nothing loaded).
struct GenerationModels {
  std::unique_ptr<GptModel> full, prefill, decoder;
  index_t prefill_window = 0;  // W: the first pass's positions (prefill's context, or T)
};
GenerationModels generation_models(Backend& be, ProcessGrid& grid, const GptConfig& model, index_t batch,
                                   index_t longest_prompt, int tokens, bool kv_cache, const GptWeights* weights);

}  // namespace plexus
