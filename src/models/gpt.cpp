// The GPT model: forward, loss and backward of one micro-batch, top to bottom, and the
// parameter registry (where every shard sits in GPT-2's tensors).
#include "models/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/shard_layout.hpp"
#include "plexus/error.hpp"
#include "plexus/rng.hpp"

namespace plexus {

namespace {

Linear3DOptions table_options() {  // an embedding table: Wᵀ storage, no bias
  Linear3DOptions o = gpt_linear_options();
  o.bias = false;
  o.store_transposed = true;
  return o;
}

index_t identity_column(index_t local, const GptParam& p) { return p.local_cols.begin + local; }
index_t qkv_column(index_t local, const GptParam& p) {
  return qkv_gpt2_column(p.local_cols.begin + local, p.embed, p.head_dim);
}

std::uint32_t name_hash(const std::string& s) {  // FNV-1a: the init stream of a parameter
  std::uint32_t h = 2166136261u;
  for (const unsigned char ch : s) h = (h ^ ch) * 16777619u;
  return h;
}

// N(0, 1) for element (row, col) of a parameter: Box-Muller on two Philox words.
float normal_at(const DropoutKey& key, index_t row, index_t col) {
  const Philox4x32 w = counter_block(key, static_cast<std::uint64_t>(row), static_cast<std::uint32_t>(col));
  const double u1 = (static_cast<double>(w.v[0] >> 8) + 0.5) / 16777216.0;
  const double u2 = static_cast<double>(w.v[1] >> 8) / 16777216.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

void fill_zero(Backend& be, float* p, std::size_t n) {
  if (n) be.fill(MatrixView{p, 1, static_cast<index_t>(n), static_cast<index_t>(n)}, 0.0f);
}

}  // namespace

GptModel::GptModel(Backend& be, ProcessGrid& grid, const GptConfig& cfg, index_t batch, ZeroOptions zero,
                   AdamParams adam)
    : be_(be), grid_(grid), cfg_(gpt_config_on(cfg, be)), batch_(batch), layout_(gpt_layout(grid, cfg_, batch)) {
  validate(cfg);
  if (be.device() == Device::CUDA) grid.use_device_copies(be);  // a one-rank grid's copies reach the GPU
  build_layers();
  const GptLayout& l = layout_;
  d_x_ = Matrix(be, l.res_rows.size(), l.embed.size());
  const auto rows = static_cast<std::size_t>(l.rows);
  const index_t loss_rows = l.mlp_rows.size();  // the logits' rows (sequence parallelism: a slice over Y)
  xent_ = std::make_unique<CrossEntropy3D>(be, grid, l.head, loss_rows);
  token_weights_ = Buffer<float>(be, static_cast<std::size_t>(loss_rows));
  labels_ = Buffer<std::int32_t>(be, static_cast<std::size_t>(loss_rows));
  d_logits_ = Matrix(be, loss_rows, l.vocab.size());
  if (be.computes()) {  // a plan's dry run draws no batches
    positions_.resize(rows);
    for (std::size_t r = 0; r < rows; ++r) positions_[r] = static_cast<std::int32_t>(static_cast<index_t>(r) % cfg.block);
  }
  register_params();
  zero_ = std::make_unique<ZeroOptimizer>(be, grid, flat_tensors(), zero, adam);
}

GptModel::GptModel(GptModel& of, index_t batch, Decoding)
    : be_(of.be_), grid_(of.grid_), cfg_(of.cfg_), batch_(batch), layout_(gpt_layout(of.grid_, of.cfg_, batch, true)) {
  if (of.layout_.decoding || !of.zero_ || of.zero_->stage() == 3)
    throw std::logic_error("GptModel::decoder_of: a whole-sequence model whose parameters stay whole (ZeRO 0-2)");
  cfg_.recompute = false;  // a decoding block keeps its few rows' activations
  cfg_.sequence_parallel = false;
  build_layers();
  register_params();
  for (std::size_t k = 0; k < params_.size(); ++k) {
    GptParam& p = params_[k];
    const GptParam& src = of.params_[k];
    if (src.name != p.name || src.size() != p.size() || (p.size() && src.value == nullptr))
      throw std::logic_error("GptModel::decoder_of: the parameter " + p.name + " is not held by the model decoded for");
    p.value = src.value;
    p.bind_layer(p.value, nullptr);  // (no gradients: decoding runs forward only)
  }
  weights_updated();
}

std::unique_ptr<GptModel> GptModel::decoder_of(GptModel& of, index_t batch) {
  return std::unique_ptr<GptModel>(new GptModel(of, batch < 0 ? of.batch_ : batch, Decoding{}));
}

void GptModel::build_layers() {
  Backend& be = be_;
  ProcessGrid& grid = grid_;
  const GptConfig& cfg = cfg_;
  const GptLayout& l = layout_;
  Linear3DOptions head = gpt_linear_options();
  // Sequence parallelism: ln_f's rows come over X, and the logits (and so the softmax over the
  // vocabulary, and their gradient) go over Y, in rows as the GELU's (GptLayout::mlp_rows).
  head.gather_input = head.scatter_output = l.sequence_parallel;
  head.bias = false;
  head.store_transposed = true;  // the head's Wᵀ [vocab × embed] is the token table when tied
  lm_head_ = std::make_unique<Linear3D>(be, grid, Linear3DLayout{l.seq, l.hid, l.head, l.rows, l.embed, l.vocab}, head);
  Linear3D* wte = lm_head_.get();
  if (!cfg.tied) {
    wte_untied_ =
        std::make_unique<Linear3D>(be, grid, Linear3DLayout{l.seq, l.hid, l.head, 0, l.embed, l.vocab}, table_options());
    wte = wte_untied_.get();
  }
  wpe_ = std::make_unique<Linear3D>(be, grid, Linear3DLayout{l.seq, l.hid, l.head, 0, l.embed, l.pos}, table_options());
  tok_emb_ = std::make_unique<Embedding3D>(be, *wte);
  pos_emb_ = std::make_unique<Embedding3D>(be, *wpe_);
  for (int b = 0; b < cfg.layers; ++b) blocks_.push_back(std::make_unique<GptBlock>(be, grid, cfg, l, b));
  ln_f_ = std::make_unique<LayerNorm3D>(be, grid, l.seq, l.hid, l.res_rows.size(), l.embed, cfg.embed, /*external_params=*/true);
  if (scatters_embeddings()) ln_f_->split_rows_over(l.head);

  x0_ = Matrix(be, l.res_rows.size(), l.embed.size());
  if (scatters_embeddings()) emb_ = Matrix(be, l.rows, l.embed.size());
}

// ---- decoding ----------------------------------------------------------------------------------

Matrix& GptModel::decode(const std::vector<std::int32_t>& ids, const std::vector<index_t>& pos) {
  const GptLayout& l = layout_;
  if (!l.decoding) throw std::logic_error("GptModel::decode: a model built for whole sequences");
  if (static_cast<index_t>(ids.size()) != l.rows || static_cast<index_t>(pos.size()) != l.rows)
    throw std::invalid_argument("GptModel::decode: one id and one position per local sequence");
  positions_.resize(pos.size());
  for (std::size_t b = 0; b < pos.size(); ++b) {
    if (pos[b] < 0 || pos[b] >= cfg_.block) throw std::invalid_argument("GptModel::decode: a position outside the context");
    positions_[b] = static_cast<std::int32_t>(pos[b]);
  }
  // The forward pass of step() on one row per sequence, each block's attention through its cache.
  tok_emb_->forward(ids, x0_.view(), 0.0f);
  pos_emb_->forward(positions_, x0_.view(), 1.0f);
  grid_.comm(l.head).all_reduce(x0_.data(), x0_.size(), ReduceOp::Sum);
  const Matrix* h = &x0_;
  for (auto& b : blocks_) h = &b->decode(*h, pos.data());
  const Matrix& hf = ln_f_->forward(h->view());
  return lm_head_->forward(hf.view());
}

void GptModel::load_cache(GptModel& prefilled, const std::vector<index_t>& lengths) {
  if (!layout_.decoding || prefilled.layout_.decoding || prefilled.blocks_.size() != blocks_.size() ||
      prefilled.cfg_.block > cfg_.block)
    throw std::logic_error("GptModel::load_cache: a decoder and a whole-sequence model of a context at most its own");
  for (std::size_t b = 0; b < blocks_.size(); ++b) blocks_[b]->load_cache(*prefilled.blocks_[b], lengths);
}

std::size_t GptModel::cache_bytes() const {
  std::size_t n = 0;
  for (const auto& b : blocks_) n += b->cache_bytes();
  return n;
}

// ---- forward, loss, backward -----------------------------------------------------------------

double GptModel::step(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& targets,
                      float loss_scale, const GptDropout& drop, bool train) {
  const GptLayout& l = layout_;
  // (A plan's dry run, on a backend that does not compute, passes no ids.)
  if (be_.computes() && (static_cast<index_t>(ids.size()) != l.rows || static_cast<index_t>(targets.size()) != l.rows))
    throw std::invalid_argument("GptModel::step: one id and one target per local row");
  const index_t row0 = l.seqs.begin * cfg_.block + l.res_rows.begin;  // of the residual stream's rows

  // Units of parameters (ZeRO-3 gathers each just before use, prefetching the next, and frees
  // it after; the other stages keep them): 0 = embeddings, final LayerNorm and head, 1 + b = block b.
  ZeroOptimizer& zero = zero_opt();
  const int blocks = static_cast<int>(blocks_.size());
  struct AbortGuard {  // an exception mid-pass leaves no unit gathered and no reduction in flight
    ZeroOptimizer& zero;
    bool done = false;
    ~AbortGuard() {
      if (!done) zero.abort_pass();
    }
  } guard{zero};
  zero.acquire(0, 1);

  // Embeddings: each X rank holds some vocabulary and position rows, so the sum is a partial
  // that one all-reduce over X completes (sequence parallelism: a reduce-scatter, each X rank
  // its sequences).
  if (scatters_embeddings()) {
    tok_emb_->forward(ids, emb_.view(), 0.0f);
    pos_emb_->forward(positions_, emb_.view(), 1.0f);
    grid_.comm(l.head).reduce_scatter(emb_.data(), x0_.data(), embedding_counts());
  } else {
    tok_emb_->forward(ids, x0_.view(), 0.0f);
    pos_emb_->forward(positions_, x0_.view(), 1.0f);
    grid_.comm(l.head).all_reduce(x0_.data(), x0_.size(), ReduceOp::Sum);
  }
  if (drop.p > 0.0f) be_.dropout(x0_.view(), x0_.view(), drop.p, drop.key(0), row0, l.embed.begin);

  const Matrix* h = &x0_;
  for (int b = 0; b < blocks; ++b) {
    zero.acquire(1 + b, b + 1 < blocks ? 2 + b : -1);
    h = &blocks_[static_cast<std::size_t>(b)]->forward(*h, drop);
    zero.release(1 + b);
  }
  const Matrix& hf = ln_f_->forward(h->view());
  Matrix& logits = lm_head_->forward(hf.view());

  // Cross-entropy over the vocabulary sharded over X: row maxima and exp-sums combined by
  // all-reduces, then each shard adds its own terms (plexus/backend.hpp, LossTerms).
  const index_t loss_rows = l.mlp_rows.size();
  if (be_.computes()) labels_.upload(targets.data() + l.mlp_rows.begin);
  if (loss_rows) be_.fill(MatrixView{token_weights_.data(), 1, loss_rows, loss_rows}, loss_scale);
  double loss = xent_->loss_and_grad(logits.view(), labels_.data(), token_weights_.data(), l.vocab.begin,
                                     d_logits_.view());  // summed over X
  if (train) lm_head_->release_output();  // (spent: backward reads their gradient)
  zero.release(0);
  if (!train) guard.done = true;
  // Sum over Z, over Y where sequence parallelism splits the rows (Y replicas hold the same
  // rows otherwise), and over the replicas.
  grid_.host_comm(l.seq).all_reduce(&loss, 1, ReduceOp::Sum);
  if (l.sequence_parallel) grid_.host_comm(l.hid).all_reduce(&loss, 1, ReduceOp::Sum);
  grid_.host_comm(Axis::D).all_reduce(&loss, 1, ReduceOp::Sum);
  if (!train) return loss;

  zero.acquire(0, blocks);
  zero.begin_backward(0);
  {
    Matrix d_hf = lm_head_->backward(hf.view(), d_logits_, true);
    ln_f_->release_output();  // (hf: the head was its one reader; the next forward allocates it)
    fill_zero(be_, d_x_.data(), d_x_.size());
    ln_f_->backward(h->view(), d_hf.view(), d_x_.view());
  }
  for (int b = blocks; b-- > 0;) {
    const Matrix& input = b == 0 ? x0_ : blocks_[static_cast<std::size_t>(b) - 1]->output();
    zero.acquire(1 + b, b);  // prefetch: the block below (unit 0 is held already)
    zero.begin_backward(1 + b);
    blocks_[static_cast<std::size_t>(b)]->backward(input, d_x_, drop);
    zero.end_backward(1 + b);
    zero.release(1 + b);
  }
  if (drop.p > 0.0f) be_.dropout(d_x_.view(), d_x_.view(), drop.p, drop.key(0), row0, l.embed.begin);
  Matrix* d_emb = &d_x_;
  if (scatters_embeddings()) {  // every row's gradient, for this rank's vocabulary and positions
    grid_.comm(l.head).all_gather(d_x_.data(), emb_.data(), embedding_counts());
    d_emb = &emb_;
  }
  tok_emb_->backward(d_emb->view());
  pos_emb_->backward(d_emb->view());
  zero.end_backward(0);
  zero.release(0);
  zero.finish_backward();
  guard.done = true;
  return loss;
}

std::vector<std::size_t> GptModel::embedding_counts() const {
  return block_counts(layout_.rows, grid_.dim(layout_.head), layout_.embed.size());
}

// ---- the parameter registry ----------------------------------------------------------------------

void GptModel::add_vector(std::string name, ParamSlot& slot, index_t n, Range cols, bool owner,
                          GptParam::Init init, int unit, bool qkv_columns) {
  GptParam p;
  p.name = std::move(name);  // (by value: a plan builds these names once per dry run)
  p.rows = 1;
  p.cols = n;
  p.local_rows = {0, 1};
  p.local_cols = cols;
  p.column = qkv_columns ? qkv_column : identity_column;
  p.head_dim = layout_.head_dim;
  p.embed = cfg_.embed;
  p.owner = owner;
  p.decay = false;
  p.init = init;
  p.unit = unit;
  p.bind_layer = [&slot](float* v, float* g) { slot.bind(v, g); };
  params_.push_back(std::move(p));
}

void GptModel::add_linear(const std::string& name, Linear3D& lin, index_t in_dim, index_t out_dim, bool residual,
                          bool qkv_columns, int unit) {
  GptParam p;
  p.name = name + ".weight";
  p.rows = in_dim;  // GPT-2's Conv1D layout: [in × out]
  p.cols = out_dim;
  p.local_rows = lin.w_rows();
  p.local_cols = lin.layout().out_cols;
  p.column = qkv_columns ? qkv_column : identity_column;
  p.head_dim = layout_.head_dim;
  p.embed = cfg_.embed;
  p.owner = true;  // W shards are disjoint: in × out blocks split over the third axis
  p.decay = true;
  p.init = residual ? GptParam::Init::Residual : GptParam::Init::Normal;
  p.unit = unit;
  p.bind_layer = [&lin](float* v, float* g) { lin.weight().bind(v, g); };
  params_.push_back(std::move(p));
  const Linear3DLayout& ll = lin.layout();
  // The bias is replicated over the row axis and the input axis.
  add_vector(name + ".bias", lin.bias(), out_dim, ll.out_cols, grid_.coord(ll.row) == 0 && grid_.coord(ll.in) == 0,
             GptParam::Init::Zero, unit, qkv_columns);
}

void GptModel::add_table(std::string name, Linear3D& table, index_t rows, int unit) {
  GptParam p;
  p.name = std::move(name);
  p.rows = rows;  // [vocab or positions × embed]: the stored Wᵀ
  p.cols = cfg_.embed;
  p.local_rows = table.w_rows();
  p.local_cols = table.layout().in_cols;
  p.column = identity_column;
  p.owner = true;
  p.decay = true;
  p.init = GptParam::Init::Normal;
  p.unit = unit;
  p.bind_layer = [&table](float* v, float* g) { table.weight().bind(v, g); };
  params_.push_back(std::move(p));
}

void GptModel::register_params() {
  const GptLayout& l = layout_;
  const index_t c = cfg_.embed;
  // LayerNorm parameters are replicated over X and Z.
  const bool ln_owner = grid_.coord(l.head) == 0 && grid_.coord(l.seq) == 0;
  const auto add_ln = [&](const std::string& name, LayerNorm3D& ln, int unit) {
    add_vector(name + ".weight", ln.gamma(), c, l.embed, ln_owner, GptParam::Init::One, unit);
    add_vector(name + ".bias", ln.beta(), c, l.embed, ln_owner, GptParam::Init::Zero, unit);
  };
  // (12 tensors a block and at most 5 more: reserved, as a plan builds a model per dry run.)
  params_.reserve(12 * static_cast<std::size_t>(cfg_.layers) + 5);
  // Unit 0: what the first and last steps of the pass use; then one unit per block.
  add_table("wte", cfg_.tied ? *lm_head_ : *wte_untied_, cfg_.vocab, 0);
  add_table("wpe", *wpe_, cfg_.block, 0);
  add_ln("ln_f", *ln_f_, 0);
  if (!cfg_.tied) add_table("lm_head.weight", *lm_head_, cfg_.vocab, 0);
  for (int b = 0; b < cfg_.layers; ++b) {
    GptBlock& blk = *blocks_[static_cast<std::size_t>(b)];
    const std::string h = "h." + std::to_string(b) + ".";
    add_ln(h + "ln_1", blk.ln1, 1 + b);
    add_linear(h + "attn.c_attn", blk.qkv, c, 3 * c, false, true, 1 + b);
    add_linear(h + "attn.c_proj", blk.proj, c, c, true, false, 1 + b);
    add_ln(h + "ln_2", blk.ln2, 1 + b);
    add_linear(h + "mlp.c_fc", blk.fc, c, 4 * c, false, false, 1 + b);
    add_linear(h + "mlp.c_proj", blk.fc2, 4 * c, c, true, false, 1 + b);
  }
}

std::vector<FlatTensor> GptModel::flat_tensors() {
  std::vector<FlatTensor> t;
  t.reserve(params_.size());
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const GptParam& p = params_[k];
    t.push_back({p.size(), p.unit, p.decay, p.owner, [this, k](float* v, float* g) {
                   GptParam& q = params_[k];
                   q.value = v;
                   q.grad = g;
                   q.bind_layer(v, g);
                 }});
  }
  return t;
}

void GptModel::write_unit(int unit, const std::function<float(const GptParam&, index_t, index_t)>& value) {
  if (!be_.computes()) return;  // a plan's dry run: the unit's storage is there, no values to draw
  for (const GptParam& p : params_) {
    if (p.unit != unit || !p.size()) continue;
    std::vector<float> host(p.size());
    for (index_t r = 0; r < p.local_rows.size(); ++r)
      for (index_t j = 0; j < p.local_cols.size(); ++j)
        host[static_cast<std::size_t>(r * p.local_cols.size() + j)] = value(p, p.local_rows.begin + r, p.column(j, p));
    be_.copy_from_host(p.value, host.data(), host.size() * sizeof(float));
  }
}

void GptModel::init_weights(std::uint64_t seed) {
  const float std_normal = 0.02f;
  const float std_residual = 0.02f / std::sqrt(2.0f * static_cast<float>(cfg_.layers));  // GPT-2
  const auto init = [&](const GptParam& p, index_t row, index_t col) {
    const DropoutKey key{seed ^ 0x9E3779B97F4A7C15ULL, name_hash(p.name), 0x1417u};
    switch (p.init) {
      case GptParam::Init::Normal: return std_normal * normal_at(key, row, col);
      case GptParam::Init::Residual: return std_residual * normal_at(key, row, col);
      case GptParam::Init::Zero: return 0.0f;
      case GptParam::Init::One: return 1.0f;
    }
    return 0.0f;
  };
  zero_opt().for_each_unit([&](int unit) { write_unit(unit, init); }, /*store=*/true);
  weights_updated();
}

void GptModel::load_weights(const GptWeights& w) {
  for (const GptParam& p : params_) {
    const auto it = w.find(p.name);
    if (it == w.end()) throw InputError("model", "has no tensor '" + p.name + "'");
    const GptTensor& t = it->second;
    if (t.rows * t.cols != p.rows * p.cols || static_cast<index_t>(t.data.size()) != p.rows * p.cols)
      throw InputError("model", "tensor '" + p.name + "' has " + std::to_string(t.data.size()) + " values, expected " +
                                    std::to_string(p.rows * p.cols));
  }
  zero_opt().for_each_unit(
      [&](int unit) {
        write_unit(unit, [&](const GptParam& p, index_t row, index_t col) {
          return w.at(p.name).data[static_cast<std::size_t>(row * p.cols + col)];
        });
      },
      /*store=*/true);
  weights_updated();
}

GptWeights GptModel::gather_weights() {
  GptWeights out;
  for (const GptParam& p : params_)
    out[p.name] = GptTensor{p.rows, p.cols, std::vector<float>(static_cast<std::size_t>(p.rows * p.cols), 0.0f)};
  zero_opt().for_each_unit(
      [&](int unit) {
        for (const GptParam& p : params_) {
          if (p.unit != unit || !p.owner || !p.size()) continue;
          std::vector<float> host(p.size());
          be_.copy_to_host(host.data(), p.value, host.size() * sizeof(float));
          GptTensor& t = out[p.name];
          for (index_t r = 0; r < p.local_rows.size(); ++r)
            for (index_t j = 0; j < p.local_cols.size(); ++j)
              t.data[static_cast<std::size_t>((p.local_rows.begin + r) * p.cols + p.column(j, p))] =
                  host[static_cast<std::size_t>(r * p.local_cols.size() + j)];
        }
      },
      /*store=*/false);
  // Exactly one owner in the replica writes each element; the others add zeros.
  for (auto& [name, t] : out) grid_.replica().all_reduce(t.data.data(), t.data.size(), ReduceOp::Sum);
  return out;
}

namespace {
// f(index in the whole tensor, index in the range) for each element of params[k] that lies in
// the flat range [r.begin, r.end) of this rank's flat space; `offset`: the flat offset of params[k].
template <class F>
void for_each_in_range(const GptParam& p, std::size_t offset, std::size_t begin, std::size_t end, F&& f) {
  const std::size_t lo = std::max(begin, offset), hi = std::min(end, offset + p.size());
  const auto cols = static_cast<std::size_t>(p.local_cols.size());
  for (std::size_t flat = lo; flat < hi; ++flat) {
    const std::size_t e = flat - offset;
    const index_t row = p.local_rows.begin + static_cast<index_t>(e / cols);
    const index_t col = p.column(static_cast<index_t>(e % cols), p);
    f(static_cast<std::size_t>(row * p.cols + col), flat - begin);
  }
}
}  // namespace

GptModel::OptimizerTensors GptModel::gather_optimizer_state() {
  const ZeroOptimizer::RangeState r = zero_opt().range_state();
  OptimizerTensors out;
  out.steps = r.steps;
  for (GptWeights* w : {&out.value, &out.m, &out.v})
    for (const GptParam& p : params_)
      (*w)[p.name] = GptTensor{p.rows, p.cols, std::vector<float>(static_cast<std::size_t>(p.rows * p.cols), 0.0f)};
  // Stage 0 keeps the whole range on every replica: the first one counts.
  const bool counts = zero_opt().stage() > 0 || grid_.coord(Axis::D) == 0;
  for (std::size_t k = 0; k < params_.size() && counts; ++k) {
    const GptParam& p = params_[k];
    if (!p.owner) continue;
    float* value = out.value[p.name].data.data();
    float* m = out.m[p.name].data.data();
    float* v = out.v[p.name].data.data();
    for_each_in_range(p, zero_opt().tensor_offset(k), r.begin, r.end, [&](std::size_t whole, std::size_t at) {
      value[whole] = r.value[at];
      m[whole] = r.m[at];
      v[whole] = r.v[at];
    });
  }
  for (GptWeights* w : {&out.value, &out.m, &out.v})
    for (auto& [name, t] : *w) grid_.world().all_reduce(t.data.data(), t.data.size(), ReduceOp::Sum);
  return out;
}

void GptModel::load_optimizer_state(const OptimizerTensors& s) {
  load_weights(s.value);  // checks every tensor's presence and size
  for (const GptWeights* w : {&s.m, &s.v})
    for (const GptParam& p : params_) {
      const auto it = w->find(p.name);
      if (it == w->end() || it->second.data.size() != static_cast<std::size_t>(p.rows * p.cols))
        throw InputError("optimizer state", "has no tensor '" + p.name + "' of " + std::to_string(p.rows * p.cols) +
                                                " values");
    }
  const ZeroOptimizer::RangeState r = zero_opt().range_state();
  std::vector<float> m(r.end - r.begin, 0.0f), v(r.end - r.begin, 0.0f);
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const GptParam& p = params_[k];
    const float* sm = s.m.at(p.name).data.data();
    const float* sv = s.v.at(p.name).data.data();
    for_each_in_range(p, zero_opt().tensor_offset(k), r.begin, r.end, [&](std::size_t whole, std::size_t at) {
      m[at] = sm[whole];
      v[at] = sv[whole];
    });
  }
  zero_opt().set_moments(m, v, s.steps);
}

void GptModel::weights_updated() {
  lm_head_->weight_updated();
  if (wte_untied_) wte_untied_->weight_updated();
  wpe_->weight_updated();
  for (auto& b : blocks_) {
    b->qkv.weight_updated();
    b->proj.weight_updated();
    b->fc.weight_updated();
    b->fc2.weight_updated();
  }
}

std::size_t GptModel::num_params() const {
  std::size_t n = 0;
  for (const GptParam& p : params_) n += static_cast<std::size_t>(p.rows * p.cols);
  return n;
}

std::size_t GptModel::weight_bytes() const {
  std::size_t n = 0;
  for (const GptParam& p : params_) n += p.size() * sizeof(float);
  return n;
}

}  // namespace plexus
