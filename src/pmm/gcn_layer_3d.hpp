#pragma once
// One GCN layer as a 3D parallel matrix multiply (Plexus, SC'25): OUT = act(Â·H·W + b), in
// either order (LayerGeometry::transform_first): the sparse aggregation Â·H followed by a
// Linear3D (pmm/linear_3d.hpp), or the Linear3D H·W followed by the aggregation Â·(H·W) and
// the bias (PyG's GCNConv). The aggregation's collectives are issued in gcn_layer_3d.cpp, the
// linear's in linear_3d.cpp; gcn_layer_3d.cpp lists both orders'.
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/linear_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

class GcnLayer3D : public GnnLayer3D {
 public:
  // `constant_input`: the input never changes (layer 0: the features), so the aggregation
  // without dropout, Â·H, is computed once and reused by every evaluation pass (aggregating
  // first only: transforming first, H·W changes with every step).
  // `adj` (this layer's Â block) must outlive the layer; its chunking must match comm.agg_chunks.
  GcnLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj, bool relu, std::uint64_t seed,
             bool constant_input = false, LayerCommOptions comm = {});

  // The optimizer changed this rank's W shard: the next use gathers it again (reuse_weight).
  void weight_updated() override { linear_.weight_updated(); }
  // Global rows of forward's result (out_rows, or its slice over i with scatter_output).
  Range out_slice_rows() const override;

  const LayerGeometry& geometry() const override { return geo_; }
  // "weight" [in_dim × out_dim], "bias" [1 × out_dim].
  std::vector<LayerParam> parameters(bool decay_weights) override;
  bool reads_input_through_adj_only() const override { return !geo_.transform_first; }
  ParamSlot& weight() { return linear_.weight(); }  // this rank's shard [w_rows × out_cols]
  // [1 × out_cols], replicated over the two axes other than out_feat's (i and d aggregating
  // first, o and d transforming first).
  ParamSlot& bias() { return geo_.transform_first ? bias_ : linear_.bias(); }

 private:
  // Forward returns the output (with scatter_output: its row slice); backward takes its gradient
  // and returns dH_in unless `need_input_grad` is false (layer 0).
  ActivationView forward_pass(const DropoutSpec& dropout) override;
  Activation backward_pass(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad) override;
  ActivationView forward_aggregate_first(const DropoutSpec& dropout);
  ActivationView forward_transform_first(const DropoutSpec& dropout);
  Activation backward_aggregate_first(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad);
  Activation backward_transform_first(Activation& d_out, const DropoutSpec& dropout, bool need_input_grad);
  // Aggregating first: `into` = Â·dropout(H), summed over o.
  void aggregate(const DropoutSpec& dropout, LayerTensor& into);
  Nonlinearity nonlinearity() const { return relu_ ? Nonlinearity::Relu : Nonlinearity::None; }

  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  bool relu_;
  LayerCommOptions comm_;
  DeviceAdj& adj_;
  // Aggregating first, OUT = AGG·W + b: rows over d, input features over i, output features
  // over o. Transforming first, Y = H·W (no bias): rows over o, input features over d, output
  // features over i.
  Linear3D linear_;
  bool constant_input_ = false;
  // Aggregating first: AGG for backward, the cached Â·H without dropout (constant_input), and
  // the one the last forward used.
  LayerTensor agg_, agg_clean_;
  LayerTensor* last_agg_ = nullptr;
  // Transforming first: the bias (added after the aggregation) and Y = H·W, the aggregation's
  // operand only.
  ParamSlot bias_;
  LayerTensor y_;
  // OUT: aggregating first the linear's output; transforming first this layer's (with
  // scatter_output its row slice, partial_ the partial sums before the reduce-scatter, and
  // d_out_full_ the gathered gradient of the slice).
  Matrix partial_;
  LayerTensor out_, d_out_full_;
};

}  // namespace plexus
