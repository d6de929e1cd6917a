#pragma once
// Where one causal-attention call's operands live (plexus/kernels/attention.hpp). The
// whole-sequence form (one qkv matrix, every position's query) and the context-parallel form
// (the queries of some positions, the keys and values in a separate matrix) are one
// computation over this description: each backend writes its attention once.
#include "plexus/kernels/attention.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

struct AttentionIo {
  ConstMatrixView q, kv;     // queries; keys and values (the same qkv matrix for whole sequences)
  index_t kv_width = 0;      // columns of one head in kv: 3·head_dim (qkv) or 2·head_dim (kv)
  index_t k_col = 0, v_col = 0;  // a head's key and value columns within its kv_width
  index_t seq = 0, head_dim = 0;
  QueryRuns runs;

  static AttentionIo whole(ConstMatrixView qkv, const AttentionShape& s) {
    return {qkv, qkv, 3 * s.head_dim, s.head_dim, 2 * s.head_dim, s.seq, s.head_dim, QueryRuns::whole(s.seq)};
  }
  static AttentionIo split(ConstMatrixView q, ConstMatrixView kv, const AttentionShape& s, const QueryRuns& r) {
    return {q, kv, 2 * s.head_dim, 0, s.head_dim, s.seq, s.head_dim, r};
  }
  index_t queries() const { return runs.size(); }  // query rows a sequence
  // Row of sequence b's position t among the query rows (of q, y, dy, dq; and lse's index
  // within its (sequence, head) pair).
  index_t q_row(index_t b, index_t t) const { return b * runs.size() + runs.index_of(t); }
  index_t kv_row(index_t b, index_t t) const { return b * seq + t; }
  index_t q_col(index_t h) const { return 3 * head_dim * h; }
  index_t key_col(index_t h) const { return kv_width * h + k_col; }
  index_t value_col(index_t h) const { return kv_width * h + v_col; }
};

}  // namespace plexus
