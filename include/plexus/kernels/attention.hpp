#pragma once
// Kernel family: fused causal multi-head self-attention (flash-attention style: the forward
// pass keeps one log-sum-exp per query row instead of the T×T probabilities, and the backward
// pass recomputes them). No implementation materialises the T×T scores of every head at once.
//
// Layout. A rank holds `batch` whole sequences of length `seq` and `heads` heads of width
// `head_dim`. Row r = b·seq + t of a matrix is token t of sequence b.
//   qkv [batch·seq × ≥ 3·heads·head_dim]: head h's query at columns [3·hd·h, 3·hd·h + hd), its
//       key at the next hd columns, its value at the next hd (heads stay whole on one rank).
//   y   [batch·seq × ≥ heads·head_dim]:   head h's output at columns [hd·h, hd·(h+1)).
//   lse [batch·heads·seq] floats:         (b·heads + h)·seq + t, log Σ_{s≤t} exp(q_t·k_s·scale).
// scale = 1/√head_dim. Query t attends to keys s ≤ t of its own sequence.
//
// Dropout on the attention probabilities (p > 0): P[t][s] is kept with probability 1 − p and
// scaled by 1/(1 − p); keep = dropout_keep(key, ((batch0 + b)·total_heads + head0 + h)·seq + t, s, p)
// (plexus/rng.hpp): global sequence and head indices, so every grid draws the same masks.
//
// Decoding with a KV cache (attention_decode). A cache holds, for each of `batch` sequences and
// `heads` heads, the keys and values of up to `seq` positions (its capacity), batch·heads·seq·
// head_dim floats each:
//   k_cache: keys transposed, position t of head h of sequence b at (b·heads + h)·head_dim·seq +
//            c·seq + t (c < head_dim): a query's scores read every key row-contiguously;
//   v_cache: values as rows, at ((b·heads + h)·seq + t)·head_dim + c.
// attention_cache_load fills positions 0..len[b]−1 of each sequence from the qkv of its forward
// pass (batch·r rows, as attention_forward takes them for sequences of r ≤ seq positions: a
// prefill may be shorter than the cache's capacity; len[b] ≤ r): a prompt enters the cache in
// one pass.
// A decoding step takes one new token per sequence: qkv [batch × ≥ 3·heads·head_dim], row b that
// of sequence b's token at position pos[b] (host array, 0 ≤ pos[b] < seq). Its key and value are
// written into the cache at pos[b], and y [batch × ≥ heads·head_dim] gets its attention over the
// cache's positions 0..pos[b]: what attention_forward gives row pos[b] of the whole sequence
// (the CPU backend: the same bits; no dropout, which is training's).
//
// Context parallelism (attention_forward_runs, attention_backward_runs): a rank computes the
// queries of only some positions of each sequence, `runs` (QueryRuns: at most two ascending,
// disjoint position ranges — a front and a back chunk, which balances the causal triangle
// between ranks), against the keys and values of the sequence's earlier positions, held in a
// separate matrix (gathered from the ranks that computed them):
//   q   [batch·nq × ≥ 3·heads·head_dim], nq = runs.size(): row b·nq + i holds the i-th of
//       sequence b's positions in the runs, head h's query at columns [3·hd·h, 3·hd·h + hd)
//       (a qkv matrix's rows; its key and value columns are not read);
//   kv  [batch·seq × ≥ 2·heads·head_dim]: row b·seq + t, head h's key at columns
//       [2·hd·h, 2·hd·h + hd), its value at the next hd (rows at or past runs.last() are not read);
//   y   [batch·nq × ≥ heads·head_dim] and lse [batch·heads·nq] at (b·heads + h)·nq + i;
//   dq  [batch·nq × ≥ 3·heads·head_dim]: only the query columns are written;
//   dkv [batch·seq × ≥ 2·heads·head_dim]: every key and value column written, the
//       contributions of this call's queries (0 for a position none of them reads): summed over
//       the calls whose runs tile a sequence, they are its dK and dV.
// A query row gets what attention_forward gives row t of the whole sequence (the CPU backend:
// the same bits), its dropout masks drawn by absolute position t.
#include "plexus/rng.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

struct AttentionShape {
  index_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  index_t batch0 = 0, head0 = 0, total_heads = 0;  // global indices, for the dropout keys
};

// A sequence's positions whose queries a context-parallel call computes (see above).
struct QueryRuns {
  index_t begin[2] = {0, 0}, end[2] = {0, 0};
  static QueryRuns whole(index_t seq) { return {{0, 0}, {seq, 0}}; }
  index_t size() const { return (end[0] - begin[0]) + (end[1] - begin[1]); }
  // One past the last position: the keys the queries read.
  index_t last() const { return end[1] > begin[1] ? end[1] : end[0]; }
  // Keys the runs' queries read, Σ (t + 1) over their positions: the causal work.
  index_t causal_keys() const {
    return ((end[0] * end[0] - begin[0] * begin[0]) + (end[1] * end[1] - begin[1] * begin[1]) + size()) / 2;
  }
  // Index among the runs' positions of position t (in a run).
  index_t index_of(index_t t) const { return t < end[0] ? t - begin[0] : (end[0] - begin[0]) + t - begin[1]; }
};

}  // namespace plexus
