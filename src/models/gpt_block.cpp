#include "models/gpt_block.hpp"

#include <stdexcept>

namespace plexus {

GptBlock::GptBlock(Backend& be, ProcessGrid& grid, const GptConfig& cfg, const GptLayout& l, int index)
    : ln1(be, grid, l.seq, l.hid, l.res_rows.size(), l.embed, cfg.embed, /*external_params=*/true),
      ln2(be, grid, l.seq, l.hid, l.res_rows.size(), l.embed, cfg.embed, /*external_params=*/true),
      // Sequence parallelism: qkv's output and proj's input are the attention's, whole sequences.
      qkv(be, grid, Linear3DLayout{l.seq, l.hid, l.head, l.rows, l.embed, l.qkv_cols},
          gpt_linear_options(l, cfg.block, false, true)),
      // proj's input is the attention output: the same heads as qkv, head_dim columns each.
      proj(be, grid, Linear3DLayout{l.seq, l.head, l.hid, l.rows, l.att_cols, l.embed},
           gpt_linear_options(l, cfg.block, true, false)),
      fc(be, grid, Linear3DLayout{l.seq, l.hid, l.head, l.rows, l.embed, l.ff}, gpt_linear_options(l, cfg.block, false, false)),
      fc2(be, grid, fc.layout().transposed(l.embed), gpt_linear_options(l, cfg.block, false, false)),
      be_(be),
      grid_(grid),
      layout_(l),
      index_(index),
      recompute_(cfg.recompute),
      out_(be, l.res_rows.size(), l.embed.size()) {
  if (l.sequence_parallel && grid.dim(l.head) > 1) {  // the residual stream's rows split over X
    ln1.split_rows_over(l.head);
    ln2.split_rows_over(l.head);
  }
  // The attention's sequences: this rank's, or with sequence parallelism their slice over Y.
  shape_.batch = l.att_seqs;
  shape_.seq = cfg.block;
  shape_.heads = l.heads.size();
  shape_.head_dim = l.head_dim;
  shape_.batch0 = l.seqs.begin + l.att_seq0;
  shape_.head0 = l.heads.begin;
  shape_.total_heads = cfg.heads;
  if (l.decoding) {
    if (recompute_) throw std::logic_error("GptBlock: a decoding block keeps its activations (no recompute)");
    const auto cache = static_cast<std::size_t>(l.seqs.size() * l.heads.size() * cfg.block * l.head_dim);
    k_cache_ = Buffer<float>(be, cache);
    v_cache_ = Buffer<float>(be, cache);
  }
  // The intermediates are allocated by the first forward (compute), and the projections'
  // outputs live from their forward to the residual add: neither is held from construction to
  // the first forward, which would put them all in the first step's peak.
  if (!l.decoding) {
    proj.release_output();
    fc2.release_output();
  }
}

// Each written whole by its first kernel (attention_forward, copy, gelu_forward): not zero-filled.
void GptBlock::allocate_intermediates() {  // (those that backward or recompute released)
  const GptLayout& l = layout_;
  if (att_.backend() == nullptr) att_ = Matrix(be_, l.att_size(), l.att_cols.size(), uninitialized);
  if (mid_.backend() == nullptr) mid_ = Matrix(be_, l.res_rows.size(), l.embed.size(), uninitialized);
  if (gelu_.backend() == nullptr) gelu_ = Matrix(be_, l.mlp_rows.size(), l.ff.size(), uninitialized);
  if (!l.decoding && lse_.size() == 0)
    lse_ = Buffer<float>(be_, static_cast<std::size_t>(l.att_size() * l.heads.size()), uninitialized);
}

void GptBlock::drop_residual(MatrixView m, const GptDropout& drop, std::uint32_t s) {
  if (drop.p > 0.0f)
    be_.dropout(m, m, drop.p, drop.key(s), layout_.seqs.begin * shape_.seq + layout_.res_rows.begin, layout_.embed.begin);
}

// Context parallelism: the keys and values of every position of this Z rank's sequences,
// [rows × 2·hd·heads] (head h's key at 2·hd·h, its value next), from each Y rank's rows of qkv.
Matrix GptBlock::gather_keys_values(const Matrix& q) {
  const GptLayout& l = layout_;
  const index_t d = l.head_dim, H = l.heads.size(), width = 2 * d * H;
  MemoryScope scope(be_, MemoryKind::Workspace, "the attention's gathered keys and values");
  Matrix mine(be_, q.rows(), width, uninitialized), kv(be_, l.rows, width, uninitialized);
  for (index_t h = 0; h < H && q.rows() > 0; ++h)  // (a rank without positions has no data pointer)
    be_.copy(ConstMatrixView{q.data() + 3 * d * h + d, q.rows(), 2 * d, q.cols()},
             MatrixView{mine.data() + 2 * d * h, q.rows(), 2 * d, width});
  all_gather_slices(be_, grid_.comm(l.hid), l.att_slices, mine.data(), kv.view());
  return kv;
}

// The key and value gradients of every position, this rank's queries' contributions, summed
// over Y into the rows of this rank's positions: d_qkv's key and value columns.
void GptBlock::scatter_key_value_grads(Matrix& d_kv, Matrix& d_qkv) {
  const GptLayout& l = layout_;
  const index_t d = l.head_dim, H = l.heads.size(), width = 2 * d * H;
  MemoryScope scope(be_, MemoryKind::Workspace, "the attention's key and value gradients");
  Matrix mine(be_, d_qkv.rows(), width, uninitialized);
  reduce_scatter_slices(be_, grid_.comm(l.hid), l.att_slices, d_kv.view(), mine.data());
  d_kv = Matrix();
  for (index_t h = 0; h < H && d_qkv.rows() > 0; ++h)
    be_.copy(ConstMatrixView{mine.data() + 2 * d * h, mine.rows(), 2 * d, width},
             MatrixView{d_qkv.data() + 3 * d * h + d, d_qkv.rows(), 2 * d, d_qkv.cols()});
}

void GptBlock::release_intermediates() {
  for (Linear3D* lin : {&qkv, &proj, &fc, &fc2}) lin->release_output();
  ln1.release_output();
  ln2.release_output();
  att_ = Matrix();
  mid_ = Matrix();
  gelu_ = Matrix();
  lse_ = Buffer<float>();
}

const Matrix& GptBlock::forward(const Matrix& x, const GptDropout& drop) {
  compute(x, drop);
  if (recompute_) release_intermediates();  // (backward computes them again)
  return out_;
}

const Matrix& GptBlock::decode(const Matrix& x, const index_t* pos) {
  if (!layout_.decoding) throw std::logic_error("GptBlock::decode: a block built for whole sequences");
  compute(x, GptDropout{}, pos);
  return out_;
}

void GptBlock::load_cache(GptBlock& prefilled, const std::vector<index_t>& lengths) {
  const GptLayout& l = layout_;
  if (!l.decoding || prefilled.layout_.decoding || prefilled.layout_.sequence_parallel || prefilled.layout_.seqs != l.seqs ||
      prefilled.layout_.heads != l.heads ||
      static_cast<index_t>(lengths.size()) != l.seqs.size())
    throw std::logic_error("GptBlock::load_cache: not a decoding block and a whole-sequence block of its sequences");
  be_.attention_cache_load(prefilled.qkv.output().view(), shape_, lengths.data(), k_cache_.data(), v_cache_.data());
}

void GptBlock::compute(const Matrix& x, const GptDropout& drop, const index_t* pos) {
  allocate_intermediates();
  const Matrix& h1 = ln1.forward(x.view());
  Matrix& q = qkv.forward(h1.view());
  // The LayerNorms' outputs are not kept either: backward applies them again from the
  // statistics (LayerNorm3D::apply_again), a pass over [rows × embed/G_y] each.
  if (!layout_.decoding) ln1.release_output();
  if (layout_.decoding) {
    AttentionShape cache = shape_;  // seq: the cache's capacity, the context
    be_.attention_decode(q.view(), cache, pos, k_cache_.data(), v_cache_.data(), att_.view());
  } else if (layout_.context_parallel) {
    const Matrix kv = gather_keys_values(q);
    be_.attention_forward_runs(q.view(), kv.view(), shape_, layout_.att_positions, drop.p, drop.key(site(0)),
                               att_.view(), lse_.data());
  } else {
    be_.attention_forward(q.view(), shape_, drop.p, drop.key(site(0)), att_.view(), lse_.data());
  }
  Matrix& a = proj.forward(att_.view());
  drop_residual(a.view(), drop, site(1));
  be_.copy(x.view(), mid_.view());
  be_.axpby(mid_.size(), 1.0f, a.data(), 1.0f, mid_.data());
  // The branches' outputs are spent once added to the stream: backward reads neither (their
  // gradient is the stream's, their dropout masks are drawn again). A decoding block keeps them
  // (one row a sequence: not worth an allocation a token).
  if (!layout_.decoding) proj.release_output();

  const Matrix& h2 = ln2.forward(mid_.view());
  Matrix& f = fc.forward(h2.view());
  if (!layout_.decoding) ln2.release_output();
  be_.gelu_forward(f.view(), gelu_.view());
  Matrix& m = fc2.forward(gelu_.view());
  drop_residual(m.view(), drop, site(2));
  be_.copy(mid_.view(), out_.view());
  be_.axpby(out_.size(), 1.0f, m.data(), 1.0f, out_.data());
  if (!layout_.decoding) fc2.release_output();
}

void GptBlock::backward(const Matrix& x, Matrix& d, const GptDropout& drop) {
  if (recompute_) compute(x, drop);  // every intermediate as forward had it (out_ too, unchanged)
  // Each intermediate and each gradient is freed after its last reader (the next forward
  // allocates them again): the last block's backward, where every other block still holds its
  // intermediates, is the step's peak.
  Matrix branch(be_, d.rows(), d.cols(), uninitialized);  // (a copy of d)
  // MLP branch: d is ∂L/∂out = ∂L/∂mid through the residual, plus what the branch adds.
  be_.copy(d.view(), branch.view());
  drop_residual(branch.view(), drop, site(2));
  {
    Matrix d_h2;
    {
      Matrix d_gelu = fc2.backward(gelu_.view(), branch, true);
      gelu_ = Matrix();
      be_.gelu_backward(fc.output().view(), d_gelu.view(), d_gelu.view());
      fc.release_output();
      d_h2 = fc.backward(ln2.apply_again(mid_.view()).view(), d_gelu, true);
    }
    ln2.release_output();
    ln2.backward(mid_.view(), d_h2.view(), d.view());
    mid_ = Matrix();
  }

  // Attention branch.
  be_.copy(d.view(), branch.view());
  drop_residual(branch.view(), drop, site(1));
  Matrix d_qkv;
  {
    Matrix d_att = proj.backward(att_.view(), branch, true);
    branch = Matrix();
    d_qkv = Matrix(be_, layout_.att_size(), layout_.qkv_cols.size(), uninitialized);
    if (layout_.context_parallel) {
      Matrix d_kv;
      {
        const Matrix kv = gather_keys_values(qkv.output());  // (again: only the rows' own are kept)
        MemoryScope scope(be_, MemoryKind::Workspace, "the attention's key and value gradients");
        d_kv = Matrix(be_, kv.rows(), kv.cols(), uninitialized);
        be_.attention_backward_runs(qkv.output().view(), kv.view(), att_.view(), d_att.view(), lse_.data(), shape_,
                                    layout_.att_positions, drop.p, drop.key(site(0)), d_qkv.view(), d_kv.view());
      }
      scatter_key_value_grads(d_kv, d_qkv);
    } else {
      be_.attention_backward(qkv.output().view(), att_.view(), d_att.view(), lse_.data(), shape_, drop.p,
                             drop.key(site(0)), d_qkv.view());
    }
    qkv.release_output();
    att_ = Matrix();
    lse_ = Buffer<float>();
  }
  Matrix d_h1 = qkv.backward(ln1.apply_again(x.view()).view(), d_qkv, true);
  d_qkv = Matrix();
  ln1.release_output();
  ln1.backward(x.view(), d_h1.view(), d.view());
}

}  // namespace plexus
