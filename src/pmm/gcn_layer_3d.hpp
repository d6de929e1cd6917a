#pragma once
// One GCN layer as a 3D parallel matrix multiply (Plexus, SC'25): OUT = act(Â·H·W + b), the
// sparse aggregation Â·H followed by a Linear3D (pmm/linear_3d.hpp). The aggregation's
// collectives are issued in gcn_layer_3d.cpp, the linear's in linear_3d.cpp.
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/linear_3d.hpp"

namespace plexus {

// Communication options of one layer (docs/communication-variants.md).
struct LayerCommOptions {
  // Reduce-scatter OUT over i instead of all-reducing it: forward returns only this rank's
  // row slice (out_slice_rows()); backward takes the gradient of that slice and all-gathers
  // it over i. Used for the last layer, whose consumer (the loss) works on row slices.
  bool scatter_output = false;
  // Gather W over d only after weight_updated(), not in every forward and backward.
  bool reuse_weight = false;
  // Row chunks of the aggregation SpMMs, each chunk's all-reduce non-blocking (1 = off).
  int agg_chunks = 1;
};

class GcnLayer3D : public GnnLayer3D {
 public:
  // `constant_input`: the input never changes (layer 0: the features), so the aggregation
  // without dropout, Â·H, is computed once and reused by every evaluation pass.
  // `adj` (this layer's Â block) must outlive the layer; its chunking must match comm.agg_chunks.
  GcnLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj, bool relu, std::uint64_t seed,
             bool constant_input = false, LayerCommOptions comm = {});

  // h_in: [in_rows × in_cols] (layer 0: already all-gathered over d). Returns the output
  // block [out_rows × out_cols], replicated over the i axis — or, with scatter_output, its
  // row slice [out_slice_rows() × out_cols], this rank's block of out_rows split over i.
  const Matrix& forward(const Matrix& h_in, const DropoutSpec& dropout) override;
  // d_out: gradient of forward's result (modified in place). Accumulates dW and db; returns
  // dH_in [in_rows × in_cols] unless `need_input_grad` is false (layer 0).
  Matrix backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) override;
  // The optimizer changed this rank's W shard: the next use gathers it again (reuse_weight).
  void weight_updated() override { linear_.weight_updated(); }
  // Global rows of forward's result (out_rows, or its slice over i with scatter_output).
  Range out_slice_rows() const override;

  const LayerGeometry& geometry() const override { return geo_; }
  // "weight" [in_dim × out_dim], "bias" [1 × out_dim].
  std::vector<LayerParam> parameters(bool decay_weights) override;
  ParamSlot& weight() { return linear_.weight(); }  // this rank's shard [w_rows × out_cols]
  ParamSlot& bias() { return linear_.bias(); }      // [1 × out_cols], replicated over i and d

 private:
  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  bool relu_;
  LayerCommOptions comm_;
  DeviceAdj& adj_;
  // OUT = AGG·W + b: rows over d, input features over i, output features over o.
  Linear3D linear_;
  Matrix h_drop_, agg_;
  bool constant_input_ = false;
  Matrix agg_clean_;                 // cached Â·H without dropout (constant_input only)
  bool agg_clean_valid_ = false;
  const Matrix* last_agg_ = nullptr;  // the aggregation the last forward used (for backward)
};

}  // namespace plexus
