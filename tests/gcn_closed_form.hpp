#pragma once
// The closed form of a GCN epoch's bytes summed over all ranks (docs/communication.md and
// docs/communication-variants.md), every comm variant: a test of the documentation's formulas
// against the dry run of the real layers (predict_epoch). Summed over ranks every term factorizes
// over the blocks, so it equals predict_epoch under MPI accounting for any sizes.
#include "plexus/comm_model.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

inline AxisBytes predict_epoch_closed_form(const ProblemSize& p, GridShape g, bool first_epoch) {
  AxisBytes b;
  const auto add = [&](Axis a, double v) { b.bytes[static_cast<int>(a)] += v; };
  const double N = static_cast<double>(p.num_nodes);
  const double nnz_hat = static_cast<double>(p.nnz + p.num_nodes);
  const int L = p.layers();
  const auto G = [&](Axis a) { return static_cast<double>(g.dim(a)); };
  const bool split = p.comm_variant != CommVariant::Baseline;  // rs-ag and rs-ag-reuse
  const bool reuse = p.comm_variant == CommVariant::RsAgReuse;
  // Features: all-gathered over layer 0's d in both forward passes (reuse: once per run).
  const LayerRoles r0 = roles_for_layer(0);
  const double feature_gathers = reuse ? (first_epoch ? 1 : 0) : 2;
  add(r0.d, feature_gathers * 4 * (G(r0.d) - 1) * N * static_cast<double>(p.dims[0]));
  // W gathers per layer: train forward, backward, eval forward (reuse: after each update only).
  const double w_gathers = reuse ? (first_epoch ? 2 : 1) : 3;
  for (int l = 0; l < L; ++l) {
    const auto [o, i, d] = roles_for_layer(l);
    const double D = static_cast<double>(p.dims[l]), Dn = static_cast<double>(p.dims[l + 1]);
    // AGG all-reduces: 2 per epoch (train + eval); layer 0 only where not cached.
    double agg = 2;
    if (l == 0) agg = (p.dropout ? 1 : 0) + (first_epoch ? 1 : 0);
    add(o, agg * 8 * (G(o) - 1) * N * D);
    // OUT, train + eval: all-reduces, or on the last layer split: two reduce-scatters and the
    // backward all-gather of dlogits, each 4 (G_i - 1) N D' over all ranks.
    if (split && l == L - 1)
      add(i, 3 * 4 * (G(i) - 1) * N * Dn);
    else
      add(i, 2 * 8 * (G(i) - 1) * N * Dn);
    add(d, (w_gathers + 1) * 4 * (G(d) - 1) * D * Dn);  // W gathers, dW reduce-scatter
    add(d, 8 * (G(d) - 1) * G(i) * Dn);                  // db
    if (l > 0) add(o, 8 * (G(o) - 1) * N * D), add(d, 8 * (G(d) - 1) * N * D);  // dAGG, dH
    // Sharded Â: each use all-gathers every block over i, 8 bytes an entry from each of the
    // G_i − 1 other ranks; used by each aggregation and (l > 0) the backward SpMM.
    if (p.shard_adj) add(i, (agg + (l > 0 ? 1 : 0)) * 8 * (G(i) - 1) * nnz_hat);
  }
  const auto [o, i, d] = roles_for_layer(L - 1);
  // 8 row vectors (3 masked losses, argmax ×2): every i-rank repeats its rows, or, split, the
  // i-ranks hold disjoint slices of them.
  add(o, 8 * 8 * (G(o) - 1) * (split ? 1 : G(i)) * N);
  add(o, 3 * 16 * (G(o) - 1) * G(i) * G(d));             // 3 loss scalars (double)
  add(d, 3 * 16 * (G(d) - 1) * G(i) * G(o));             // 3 loss scalars over rows
  add(d, 3 * 16 * (G(d) - 1) * G(i) * G(o));             // 3 correct counts
  if (split) {
    add(i, 3 * 16 * (G(i) - 1) * G(o) * G(d));           // 3 loss scalars over the row slices
    add(i, 3 * 16 * (G(i) - 1) * G(o) * G(d));           // 3 correct counts over the row slices
  }
  return b;
}

}  // namespace plexus
