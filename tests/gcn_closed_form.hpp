#pragma once
// The closed form of a GCN epoch's bytes summed over all ranks (docs/communication.md and
// docs/communication-variants.md), every comm variant and layer order: a test of the documentation's formulas
// against the dry run of the real layers (predict_epoch). Summed over ranks every term factorizes
// over the blocks, so it equals predict_epoch under MPI accounting for any sizes.
#include "plan/plan.hpp"
#include "plexus/process_grid.hpp"

#include <vector>

namespace plexus {

inline AxisBytes predict_epoch_closed_form(const ProblemSize& p, GridShape g, bool first_epoch) {
  AxisBytes b;
  const auto add = [&](Axis a, double v) { b.bytes[static_cast<int>(a)] += v; };
  const double N = static_cast<double>(p.num_nodes);
  const double nnz_hat = static_cast<double>(p.nnz + p.num_nodes);
  const int L = p.layers();
  const auto G = [&](Axis a) { return static_cast<double>(g.dim(a)); };
  const bool split = p.config.comm_variant != CommVariant::Baseline;  // rs-ag and rs-ag-reuse
  const bool reuse = p.config.comm_variant == CommVariant::RsAgReuse;
  const std::vector<index_t> dims = p.dims();
  const std::vector<bool> tf = p.transform_first();
  const std::vector<LayerRoles> roles = layer_roles(L, tf);
  // Features: all-gathered over the axis layer 0's input is replicated on (d aggregating
  // first, i transforming first) in both forward passes (reuse: once per run).
  const LayerRoles r0 = roles[0];
  const Axis f_axis = tf[0] ? r0.i : r0.d;
  const double feature_gathers = reuse ? (first_epoch ? 1 : 0) : 2;
  add(f_axis, feature_gathers * 4 * (G(f_axis) - 1) * N * static_cast<double>(dims[0]));
  // W gathers per layer: train forward, backward, eval forward (reuse: after each update only).
  const double w_gathers = reuse ? (first_epoch ? 2 : 1) : 3;
  for (int l = 0; l < L; ++l) {
    const auto [o, i, d] = roles[static_cast<std::size_t>(l)];
    const double D = static_cast<double>(dims[l]), Dn = static_cast<double>(dims[l + 1]);
    const bool last = l == L - 1;
    if (tf[static_cast<std::size_t>(l)]) {
      // Transform first: W [D/G_d × D'/G_i] gathered over o and dW reduce-scattered there;
      // Y = H·W all-reduced over d (train + eval); OUT = Â·Y all-reduced over o (train + eval;
      // rs-ag's last layer: reduce-scattered, and dlogits all-gathered); backward: db and
      // dY = Âᵀ·dOUT over d (layer 0 too: dW needs dY), dH over i (l > 0). Nothing cached.
      add(o, (w_gathers + 1) * 4 * (G(o) - 1) * D * Dn);
      add(d, 2 * 8 * (G(d) - 1) * N * Dn);
      if (split && last)
        add(o, 3 * 4 * (G(o) - 1) * N * Dn);
      else
        add(o, 2 * 8 * (G(o) - 1) * N * Dn);
      add(d, 8 * (G(d) - 1) * G(o) * Dn);  // db
      add(d, 8 * (G(d) - 1) * N * Dn);     // dY
      if (l > 0) add(i, 8 * (G(i) - 1) * N * D);  // dH
      if (p.config.shard_adj) add(i, 3 * 8 * (G(i) - 1) * nnz_hat);  // Â gathered for 2 forward SpMMs and 1 backward
      continue;
    }
    // AGG all-reduces: 2 per epoch (train + eval); layer 0 only where not cached.
    double agg = 2;
    if (l == 0) agg = (p.config.dropout > 0 ? 1 : 0) + (first_epoch ? 1 : 0);
    add(o, agg * 8 * (G(o) - 1) * N * D);
    // OUT, train + eval: all-reduces, or on the last layer split: two reduce-scatters and the
    // backward all-gather of dlogits, each 4 (G_i - 1) N D' over all ranks.
    if (split && last)
      add(i, 3 * 4 * (G(i) - 1) * N * Dn);
    else
      add(i, 2 * 8 * (G(i) - 1) * N * Dn);
    add(d, (w_gathers + 1) * 4 * (G(d) - 1) * D * Dn);  // W gathers, dW reduce-scatter
    add(d, 8 * (G(d) - 1) * G(i) * Dn);                  // db
    if (l > 0) add(o, 8 * (G(o) - 1) * N * D), add(d, 8 * (G(d) - 1) * N * D);  // dAGG, dH
    // Sharded Â: each use all-gathers every block over i, 8 bytes an entry from each of the
    // G_i − 1 other ranks; used by each aggregation and (l > 0) the backward SpMM.
    if (p.config.shard_adj) add(i, (agg + (l > 0 ? 1 : 0)) * 8 * (G(i) - 1) * nnz_hat);
  }
  // The loss on the last layer's output: rows over d, classes over c (o aggregating first, i
  // transforming first), replicated over r (i, resp. o).
  const LayerRoles rl = roles.back();
  const Axis d = rl.d, c = tf.back() ? rl.i : rl.o, r = tf.back() ? rl.o : rl.i;
  // 8 row vectors (3 masked losses, argmax ×2): every r-rank repeats its rows, or, split, the
  // r-ranks hold disjoint slices of them.
  add(c, 8 * 8 * (G(c) - 1) * (split ? 1 : G(r)) * N);
  add(c, 3 * 16 * (G(c) - 1) * G(r) * G(d));             // 3 loss scalars (double)
  add(d, 3 * 16 * (G(d) - 1) * G(r) * G(c));             // 3 loss scalars over rows
  add(d, 3 * 16 * (G(d) - 1) * G(r) * G(c));             // 3 correct counts
  const double C = static_cast<double>(p.num_classes);
  add(d, 9 * C * 16 * (G(d) - 1) * G(r) * G(c));         // per class: labelled, predicted, correct on 3 splits
  if (split) {
    add(r, 3 * 16 * (G(r) - 1) * G(c) * G(d));           // 3 loss scalars over the row slices
    add(r, 3 * 16 * (G(r) - 1) * G(c) * G(d));           // 3 correct counts over the row slices
    add(r, 9 * C * 16 * (G(r) - 1) * G(c) * G(d));       // per class, over the row slices
  }
  return b;
}

}  // namespace plexus
