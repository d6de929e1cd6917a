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
#include "pmm/bf16_tensors.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/linear_3d.hpp"

namespace plexus {

class GcnLayer3D : public GnnLayer3D {
 public:
  // `constant_input`: the input never changes (layer 0: the features), so the aggregation
  // without dropout, Â·H, is computed once and reused by every evaluation pass (aggregating
  // first only: transforming first, H·W changes with every step).
  // `adj` (this layer's Â block) must outlive the layer; its chunking must match comm.agg_chunks.
  GcnLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, DeviceAdj& adj, bool relu, std::uint64_t seed,
             bool constant_input = false, LayerCommOptions comm = {});

  // h_in: [in_rows × in_cols] (layer 0: already all-gathered over its replication axis).
  // Transforming first, the layer reads h_in again in backward: it must not change in between
  // (the model's features, or the previous layer's output). Returns the output block
  // [out_rows × out_cols], replicated over geo.out_repl() — or, with scatter_output, its row
  // slice [out_slice_rows() × out_cols], this rank's block of out_rows split over that axis.
  const Matrix& forward(const Matrix& h_in, const DropoutSpec& dropout) override;
  // The same for a bf16 input (comm.bf16 only; layer 0: the bf16 features, a later layer: the
  // previous one's forward16). Transforming first it is read again by rows in backward (dW =
  // Hᵀ·dY) and must not change in between. Aggregating first it is converted to an fp32
  // workspace for the SpMM (the layer aggregates first where its input is the narrower side),
  // AGG kept in bf16 for backward — with recompute too: computing it again would take two fp32
  // workspaces in backward, more than the bf16 copy saves. Returns the fp32 output (the last
  // layer's: comm.bf16_output false).
  const Matrix& forward(const Bf16Matrix& h_in, const DropoutSpec& dropout);
  // comm.bf16_output: the same with the output stored in bf16 (valid until the next forward).
  const Bf16Matrix& forward16(const Bf16Matrix& h_in, const DropoutSpec& dropout);
  // d_out: gradient of forward's result (modified in place). Accumulates dW and db; returns
  // dH_in [in_rows × in_cols] unless `need_input_grad` is false (layer 0).
  Matrix backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad) override;
  // comm.bf16 (backward() refuses it): the backward of the last layer (d_out: the logits'
  // gradient, fp32) and of a bf16_output layer (d_out: the next layer's dH in bf16, released
  // here, as are the output and AGG the last forward kept). Returns dH_in in bf16 (summed over
  // the layer's input-feature ranks in bf16, the input dropout's mask applied) unless
  // `need_input_grad` is false. Only row chunks and the SpMMs' operands are fp32.
  Bf16Matrix backward16(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad);
  Bf16Matrix backward16(Bf16Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad);
  // The optimizer changed this rank's W shard: the next use gathers it again (reuse_weight).
  void weight_updated() override { linear_.weight_updated(); }
  // Global rows of forward's result (out_rows, or its slice over i with scatter_output).
  Range out_slice_rows() const override;

  const LayerGeometry& geometry() const override { return geo_; }
  // "weight" [in_dim × out_dim], "bias" [1 × out_dim].
  std::vector<LayerParam> parameters(bool decay_weights) override;
  ParamSlot& weight() { return linear_.weight(); }  // this rank's shard [w_rows × out_cols]
  // [1 × out_cols], replicated over the two axes other than out_feat's (i and d aggregating
  // first, o and d transforming first).
  ParamSlot& bias() { return geo_.transform_first ? bias_ : linear_.bias(); }

 private:
  const Matrix& forward_aggregate_first(const Matrix& h_in, const DropoutSpec& dropout);
  const Matrix& forward_transform_first(const Matrix& h_in, const DropoutSpec& dropout);
  // Transforming first, OUT = act(Â·Y + b) for Y = H·W of the last forward.
  const Matrix& aggregate_output(const Matrix& y);
  Matrix backward_transform_first(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad);
  // Aggregating first: agg_ = Â·dropout(h_in), summed over o.
  void aggregate(const Matrix& h_in, const DropoutSpec& dropout);
  // comm.bf16: the forward of a bf16 input, its fp32 output returned (null with bf16_output:
  // out16_ holds it).
  const Matrix* forward_bf16(const Bf16Matrix& h_in, const DropoutSpec& dropout);
  // comm.bf16, aggregating first: into = bf16(Â·dropout(h_in)) summed over o, through fp32
  // workspaces for the input and the sum that live only in this call.
  void aggregate_bf16(const Bf16Matrix& h_in, const DropoutSpec& dropout, Bf16Matrix& into);
  // comm.bf16: the backward of a gradient in fp32 (d32) or bf16 (d16, released here).
  Bf16Matrix backward_bf16(Matrix* d32, Bf16Matrix* d16, const DropoutSpec& dropout, bool need_input_grad);

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
  Matrix h_drop_, agg_;
  bool constant_input_ = false;
  Matrix agg_clean_;                 // cached Â·H without dropout (constant_input only)
  bool agg_clean_valid_ = false;
  const Matrix* last_agg_ = nullptr;  // the aggregation the last forward used (for backward)
  const Matrix* last_h_in_ = nullptr;  // the last forward's input (recompute: backward starts from it)
  // Transforming first: the bias (added after the aggregation), the input the last forward
  // multiplied (h_in or h_drop_), OUT (with scatter_output: the partial sums before the
  // reduce-scatter, and the slice) and the gathered gradient of the slice.
  ParamSlot bias_;
  ConstMatrixView last_in_{};
  RowSource last_src_{};  // comm.bf16: the input (and its dropout) of the last forward, by rows
  Matrix out_, out_slice_, d_out_full_;
  // comm.bf16 aggregating first: AGG kept for backward (with recompute too), the cached Â·H
  // without dropout (constant_input) and the one the last forward used.
  Bf16Matrix agg16_, agg_clean16_;
  const Bf16Matrix* last_agg16_ = nullptr;
  Bf16Matrix out16_;  // comm.bf16_output: the output
};

}  // namespace plexus
