// The GPT model: forward, loss and backward of one micro-batch, top to bottom, and the
// parameter registry (where every shard sits in GPT-2's tensors).
#include "models/gpt.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

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

GptModel::GptModel(Backend& be, ProcessGrid& grid, const GptConfig& cfg, index_t batch)
    : be_(be), grid_(grid), cfg_(cfg), layout_(gpt_layout(grid, cfg, batch)) {
  validate(cfg);
  const GptLayout& l = layout_;
  Linear3DOptions head = gpt_linear_options();
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
  ln_f_ = std::make_unique<LayerNorm3D>(be, grid, l.seq, l.hid, l.rows, l.embed, cfg.embed);

  x0_ = Matrix(be, l.rows, l.embed.size());
  d_x_ = Matrix(be, l.rows, l.embed.size());
  const auto rows = static_cast<std::size_t>(l.rows);
  row_max_ = Buffer<float>(be, rows);
  row_sumexp_ = Buffer<float>(be, rows);
  token_weights_ = Buffer<float>(be, rows);
  labels_ = Buffer<std::int32_t>(be, rows);
  d_logits_ = Matrix(be, l.rows, l.vocab.size());
  positions_.resize(rows);
  for (std::size_t r = 0; r < rows; ++r) positions_[r] = static_cast<std::int32_t>(static_cast<index_t>(r) % cfg.block);
  register_params();
}

// ---- forward, loss, backward -----------------------------------------------------------------

double GptModel::step(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& targets,
                      float loss_scale, const GptDropout& drop, bool train) {
  const GptLayout& l = layout_;
  if (static_cast<index_t>(ids.size()) != l.rows || static_cast<index_t>(targets.size()) != l.rows)
    throw std::invalid_argument("GptModel::step: one id and one target per local row");
  const index_t row0 = l.seqs.begin * cfg_.block;

  // Embeddings: each X rank holds some vocabulary and position rows, so the sum is a partial
  // that one all-reduce over X completes.
  tok_emb_->forward(ids, x0_.view(), 0.0f);
  pos_emb_->forward(positions_, x0_.view(), 1.0f);
  grid_.comm(l.head).all_reduce(x0_.data(), x0_.size(), ReduceOp::Sum);
  if (drop.p > 0.0f) be_.dropout(x0_.view(), x0_.view(), drop.p, drop.key(0), row0, l.embed.begin);

  const Matrix* h = &x0_;
  for (auto& block : blocks_) h = &block->forward(*h, drop);
  const Matrix& hf = ln_f_->forward(h->view());
  Matrix& logits = lm_head_->forward(hf.view());

  // Cross-entropy over the vocabulary sharded over X: row maxima and exp-sums combined by
  // all-reduces, then each shard adds its own terms (plexus/backend.hpp, LossTerms).
  const float inf = std::numeric_limits<float>::infinity();
  const MatrixView max_row{row_max_.data(), 1, l.rows, l.rows};
  if (l.rows) be_.fill(max_row, -inf);
  be_.row_max(logits.view(), row_max_.data());
  grid_.comm(l.head).all_reduce(row_max_.data(), row_max_.size(), ReduceOp::Max);
  fill_zero(be_, row_sumexp_.data(), row_sumexp_.size());
  be_.row_sumexp(logits.view(), row_max_.data(), row_sumexp_.data());
  grid_.comm(l.head).all_reduce(row_sumexp_.data(), row_sumexp_.size(), ReduceOp::Sum);
  labels_.upload(targets.data());
  if (l.rows) be_.fill(MatrixView{token_weights_.data(), 1, l.rows, l.rows}, loss_scale);
  const LossTerms terms = be_.softmax_xent(logits.view(), row_max_.data(), row_sumexp_.data(), labels_.data(),
                                           token_weights_.data(), l.vocab.begin, d_logits_.view());
  double loss = terms.loss_sum;  // Y replicas hold the same rows: sum over X and Z only
  grid_.comm(l.head).all_reduce(&loss, 1, ReduceOp::Sum);
  grid_.comm(l.seq).all_reduce(&loss, 1, ReduceOp::Sum);
  if (!train) return loss;

  Matrix d_hf = lm_head_->backward(hf.view(), d_logits_, true);
  fill_zero(be_, d_x_.data(), d_x_.size());
  ln_f_->backward(h->view(), d_hf.view(), d_x_.view());
  for (std::size_t b = blocks_.size(); b-- > 0;) {
    const Matrix& input = b == 0 ? x0_ : blocks_[b - 1]->output();
    blocks_[b]->backward(input, d_x_, drop);
  }
  if (drop.p > 0.0f) be_.dropout(d_x_.view(), d_x_.view(), drop.p, drop.key(0), row0, l.embed.begin);
  tok_emb_->backward(d_x_.view());
  pos_emb_->backward(d_x_.view());
  return loss;
}

// ---- the parameter registry ----------------------------------------------------------------------

void GptModel::add_vector(const std::string& name, float* value, float* grad, index_t n, Range cols, bool owner,
                          GptParam::Init init, bool qkv_columns) {
  GptParam p;
  p.name = name;
  p.rows = 1;
  p.cols = n;
  p.value = value;
  p.grad = grad;
  p.local_rows = {0, 1};
  p.local_cols = cols;
  p.column = qkv_columns ? qkv_column : identity_column;
  p.head_dim = layout_.head_dim;
  p.embed = cfg_.embed;
  p.owner = owner;
  p.decay = false;
  p.init = init;
  params_.push_back(p);
}

void GptModel::add_linear(const std::string& name, Linear3D& lin, index_t in_dim, index_t out_dim, bool residual,
                          bool qkv_columns) {
  GptParam p;
  p.name = name + ".weight";
  p.rows = in_dim;  // GPT-2's Conv1D layout: [in × out]
  p.cols = out_dim;
  p.value = lin.weight().data();
  p.grad = lin.weight_grad().data();
  p.local_rows = lin.w_rows();
  p.local_cols = lin.layout().out_cols;
  p.column = qkv_columns ? qkv_column : identity_column;
  p.head_dim = layout_.head_dim;
  p.embed = cfg_.embed;
  p.owner = true;  // W shards are disjoint: in × out blocks split over the third axis
  p.decay = true;
  p.init = residual ? GptParam::Init::Residual : GptParam::Init::Normal;
  params_.push_back(p);
  const Linear3DLayout& ll = lin.layout();
  // The bias is replicated over the row axis and the input axis.
  add_vector(name + ".bias", lin.bias().data(), lin.bias_grad().data(), out_dim, ll.out_cols,
             grid_.coord(ll.row) == 0 && grid_.coord(ll.in) == 0, GptParam::Init::Zero, qkv_columns);
}

void GptModel::add_table(const std::string& name, Linear3D& table, index_t rows) {
  GptParam p;
  p.name = name;
  p.rows = rows;  // [vocab or positions × embed]: the stored Wᵀ
  p.cols = cfg_.embed;
  p.value = table.weight().data();
  p.grad = table.weight_grad().data();
  p.local_rows = table.w_rows();
  p.local_cols = table.layout().in_cols;
  p.column = identity_column;
  p.owner = true;
  p.decay = true;
  p.init = GptParam::Init::Normal;
  params_.push_back(p);
}

void GptModel::register_params() {
  const GptLayout& l = layout_;
  const index_t c = cfg_.embed;
  // LayerNorm parameters are replicated over X and Z.
  const bool ln_owner = grid_.coord(l.head) == 0 && grid_.coord(l.seq) == 0;
  const auto add_ln = [&](const std::string& name, LayerNorm3D& ln) {
    add_vector(name + ".weight", ln.gamma().data(), ln.gamma_grad().data(), c, l.embed, ln_owner, GptParam::Init::One);
    add_vector(name + ".bias", ln.beta().data(), ln.beta_grad().data(), c, l.embed, ln_owner, GptParam::Init::Zero);
  };
  add_table("wte", cfg_.tied ? *lm_head_ : *wte_untied_, cfg_.vocab);
  add_table("wpe", *wpe_, cfg_.block);
  for (int b = 0; b < cfg_.layers; ++b) {
    GptBlock& blk = *blocks_[static_cast<std::size_t>(b)];
    const std::string h = "h." + std::to_string(b) + ".";
    add_ln(h + "ln_1", blk.ln1);
    add_linear(h + "attn.c_attn", blk.qkv, c, 3 * c, false, true);
    add_linear(h + "attn.c_proj", blk.proj, c, c, true, false);
    add_ln(h + "ln_2", blk.ln2);
    add_linear(h + "mlp.c_fc", blk.fc, c, 4 * c, false, false);
    add_linear(h + "mlp.c_proj", blk.fc2, 4 * c, c, true, false);
  }
  add_ln("ln_f", *ln_f_);
  if (!cfg_.tied) add_table("lm_head.weight", *lm_head_, cfg_.vocab);
}

void GptModel::init_weights(std::uint64_t seed) {
  const float std_normal = 0.02f;
  const float std_residual = 0.02f / std::sqrt(2.0f * static_cast<float>(cfg_.layers));  // GPT-2
  for (const GptParam& p : params_) {
    std::vector<float> host(p.size());
    const DropoutKey key{seed ^ 0x9E3779B97F4A7C15ULL, name_hash(p.name), 0x1417u};
    for (index_t r = 0; r < p.local_rows.size(); ++r)
      for (index_t j = 0; j < p.local_cols.size(); ++j) {
        float v = 0.0f;
        switch (p.init) {
          case GptParam::Init::Normal: v = std_normal * normal_at(key, p.local_rows.begin + r, p.column(j, p)); break;
          case GptParam::Init::Residual:
            v = std_residual * normal_at(key, p.local_rows.begin + r, p.column(j, p));
            break;
          case GptParam::Init::Zero: v = 0.0f; break;
          case GptParam::Init::One: v = 1.0f; break;
        }
        host[static_cast<std::size_t>(r * p.local_cols.size() + j)] = v;
      }
    if (!host.empty()) be_.copy_from_host(p.value, host.data(), host.size() * sizeof(float));
  }
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
    std::vector<float> host(p.size());
    for (index_t r = 0; r < p.local_rows.size(); ++r)
      for (index_t j = 0; j < p.local_cols.size(); ++j)
        host[static_cast<std::size_t>(r * p.local_cols.size() + j)] =
            t.data[static_cast<std::size_t>((p.local_rows.begin + r) * p.cols + p.column(j, p))];
    if (!host.empty()) be_.copy_from_host(p.value, host.data(), host.size() * sizeof(float));
  }
  weights_updated();
}

GptWeights GptModel::gather_weights() {
  GptWeights out;
  for (const GptParam& p : params_) {
    GptTensor t{p.rows, p.cols, std::vector<float>(static_cast<std::size_t>(p.rows * p.cols), 0.0f)};
    if (p.owner && p.size()) {
      std::vector<float> host(p.size());
      be_.copy_to_host(host.data(), p.value, host.size() * sizeof(float));
      for (index_t r = 0; r < p.local_rows.size(); ++r)
        for (index_t j = 0; j < p.local_cols.size(); ++j)
          t.data[static_cast<std::size_t>((p.local_rows.begin + r) * p.cols + p.column(j, p))] =
              host[static_cast<std::size_t>(r * p.local_cols.size() + j)];
    }
    // Exactly one owner writes each element; the others add zeros.
    grid_.world().all_reduce(t.data.data(), t.data.size(), ReduceOp::Sum);
    out[p.name] = std::move(t);
  }
  return out;
}

std::vector<ParamRef> GptModel::parameters() {
  std::vector<ParamRef> refs;
  for (const GptParam& p : params_) refs.push_back({p.value, p.grad, p.size(), p.decay});
  return refs;
}

void GptModel::zero_grads() {
  for (const GptParam& p : params_) fill_zero(be_, p.grad, p.size());
}

double GptModel::grad_squared_norm() {
  // All norms in one call (one wait for a device), summed in parameter order as before.
  std::vector<NormPiece> pieces;
  for (const GptParam& p : params_)
    if (p.owner) pieces.push_back({static_cast<std::size_t>(p.size()), p.grad});
  std::vector<double> norms(pieces.size());
  be_.transformer().squared_norms(pieces.data(), pieces.size(), norms.data());
  double sum = 0.0;
  for (const double v : norms) sum += v;
  grid_.world().all_reduce(&sum, 1, ReduceOp::Sum);
  return sum;
}

void GptModel::scale_grads(float s) {
  for (const GptParam& p : params_)
    if (p.size()) be_.axpby(p.size(), s, p.grad, 0.0f, p.grad);
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
