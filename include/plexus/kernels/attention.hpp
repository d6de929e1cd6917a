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
#include "plexus/rng.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

struct AttentionShape {
  index_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  index_t batch0 = 0, head0 = 0, total_heads = 0;  // global indices, for the dropout keys
};

}  // namespace plexus
