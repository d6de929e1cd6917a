#pragma once
// One pre-LayerNorm GPT-2 block on the 3D grid (models/gpt_layout.hpp):
//   mid = x   + drop(proj(attention(qkv(ln1(x)))))
//   out = mid + drop(fc2(gelu(fc(ln2(mid)))))
// qkv and fc are Linear3Ds Y → X, proj and fc2 X → Y; attention runs on this rank's whole
// sequences (Z) and whole heads (X), replicated over Y.
// Sequence parallelism (GptLayout::sequence_parallel) splits what is replicated by rows: x,
// ln1, ln2, mid and out over X (GptLayout::res_rows), the attention and its output over Y in
// whole sequences (att_rows), the GELU over Y (mlp_rows). Every linear then all-gathers its input's rows over its `out`
// axis and reduce-scatters its output's over its `in` axis (backward: dY gathered, dX
// scattered) — where the all-reduces were, for the same bytes:
//   ln1 ─AG_X→ qkv ─RS_Y→ attention ─AG_Y→ proj ─RS_X→ + ─ ln2 ─AG_X→ fc ─RS_Y→ GELU ─AG_Y→ fc2 ─RS_X→ +
// Context parallelism (GptLayout::context_parallel) splits the attention over Y by positions
// instead: every sequence of the Z rank, each Y rank the queries of a front and a back chunk of
// its positions (qkv's output and proj's input are those rows: Linear3D's row runs); the keys
// and values of every position are all-gathered over Y before the attention (in forward, and
// again in backward: only the rank's own rows are kept), and their gradients reduce-scattered:
//   qkv ─RS_Y→ (q | k v ─AG_Y→) attention ─AG_Y→ proj      backward: dK dV ─RS_Y→
// Decoding (GptLayout::decoding): a row per sequence, its newest token; the block keeps the keys
// and values of every token before it in a KV cache split as its attention is (this rank's
// sequences and heads, every position of the context), and attention_decode reads them.
// From forward to backward a training block keeps qkv's output, the attention's output and its
// log-sum-exps, mid, fc's output, the GELU and out: the projections' outputs are spent once
// added to the stream, and backward applies the LayerNorms again from their statistics
// (LayerNorm3D::apply_again) rather than keep their outputs. Backward frees each of them, and each
// gradient, after its last reader (the next forward allocates them again): between steps a block
// holds only `out`.
// With GptConfig::recompute the block keeps only its input x (and `out`, the next block's input)
// from forward to backward: every intermediate (the LayerNorms' and linears' outputs, the
// attention output and its log-sum-exps, mid, GELU) is freed after forward, and backward runs
// the forward again first — the same kernels, collectives and dropout masks (keyed by site and
// global index), so the same values bit for bit.
#include <cstdint>
#include <vector>

#include "models/gpt_layout.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "pmm/layernorm_3d.hpp"
#include "pmm/linear_3d.hpp"

namespace plexus {

// The dropout of one micro-batch: every site's mask is keyed by (seed, micro-batch, site) and
// global element indices, so every grid draws the same masks.
struct GptDropout {
  float p = 0.0f;  // 0: off (evaluation)
  std::uint64_t seed = 0;
  std::uint32_t micro_batch = 0;
  DropoutKey key(std::uint32_t site) const { return DropoutKey{seed, micro_batch, site}; }
};

class GptBlock {
 public:
  GptBlock(Backend& be, ProcessGrid& grid, const GptConfig& cfg, const GptLayout& layout, int index);
  // x [res_rows × embed]: returns out (owned by the block, valid until the next forward).
  const Matrix& forward(const Matrix& x, const GptDropout& drop);
  // d holds ∂L/∂out on entry and ∂L/∂x on return; parameter gradients are accumulated.
  void backward(const Matrix& x, Matrix& d, const GptDropout& drop);
  const Matrix& output() const { return out_; }

  // Decoding: x [sequences × embed], row b the token at position pos[b] of local sequence b.
  // Stores its key and value in the cache and returns out (valid until the next call).
  const Matrix& decode(const Matrix& x, const index_t* pos);
  // Decoding: the cache's positions 0..lengths[b]−1 of each local sequence b from the keys and
  // values `prefilled` (a block of the same model on the same grid, not decoding, whose forward
  // pass has just run on those tokens) computed: a prompt enters the cache in one pass.
  void load_cache(GptBlock& prefilled, const std::vector<index_t>& lengths);
  // This rank's cache: keys and values, bytes.
  std::size_t cache_bytes() const { return 2 * k_cache_.size() * sizeof(float); }

  LayerNorm3D ln1, ln2;
  Linear3D qkv, proj, fc, fc2;

 private:
  // forward without releasing the intermediates; with `pos`, a decoding step.
  void compute(const Matrix& x, const GptDropout& drop, const index_t* pos = nullptr);
  void allocate_intermediates();  // att_, mid_, gelu_, lse_
  // Recompute: frees every intermediate of forward (not out_).
  void release_intermediates();
  // The residual-branch dropout of `site` on m (in place), rows of this rank's sequences.
  void drop_residual(MatrixView m, const GptDropout& drop, std::uint32_t site);
  std::uint32_t site(int k) const { return static_cast<std::uint32_t>(1 + 3 * index_ + k); }

  // Context parallelism (GptLayout::context_parallel): keys and values all-gathered over Y,
  // and their gradients reduce-scattered back.
  Matrix gather_keys_values(const Matrix& q);
  void scatter_key_value_grads(Matrix& d_kv, Matrix& d_qkv);

  Backend& be_;
  ProcessGrid& grid_;
  const GptLayout& layout_;
  int index_;
  AttentionShape shape_;
  bool recompute_ = false;
  Matrix att_, mid_, gelu_, out_;
  Buffer<float> lse_;
  Buffer<float> k_cache_, v_cache_;  // decoding: [sequences·heads·block × head_dim] each
};

}  // namespace plexus
