#pragma once
// What a GNN layer is told for one pass (DropoutSpec) and once, when it is built
// (LayerCommOptions): shared by the layers (pmm/gnn_layer_3d.hpp) and by the machinery that holds
// their tensors (pmm/layer_tensors.hpp).
#include "plexus/comm.hpp"
#include "plexus/rng.hpp"

namespace plexus {

struct DropoutSpec {
  float p = 0.0f;  // 0 = off (evaluation)
  DropoutKey key{};
  // A training pass (key set even where p is 0: GAT's attention dropout draws from it too).
  bool training = false;
};

// How one layer communicates (docs/communication-variants.md) and holds its tensors
// (pmm/layer_tensors.hpp).
struct LayerCommOptions {
  // Reduce-scatter OUT over the axis it is replicated on (LayerGeometry::out_repl: i when
  // aggregating first, o when transforming first) instead of all-reducing it: forward returns
  // only this rank's row slice (out_slice_rows()); backward takes the gradient of that slice
  // and all-gathers it over that axis. Used for the last layer, whose consumer (the loss)
  // works on row slices.
  bool scatter_output = false;
  // Gather W over d only after weight_updated(), not in every forward and backward.
  bool reuse_weight = false;
  // Row chunks of the aggregation SpMMs, each chunk's all-reduce non-blocking (1 = off).
  int agg_chunks = 1;
  // --precision bf16 (docs/precision.md): the layer takes its input in bf16 (layer 0: the
  // features), keeps what backward reads in bf16 (TensorRole in pmm/layer_tensors.hpp), returns
  // the gradient of its input in bf16, and its activation-sized all-reduces travel as bf16
  // summed in fp32 (all_reduce_in_bf16); it computes in fp32 (row chunks of bf16 tensors, or
  // whole fp32 copies that live for one product). Parameter-sized collectives and the
  // reduce-scatter and all-gather of scatter_output stay fp32.
  bool bf16 = false;
  // With bf16, every layer but the last: the output (the next layer's input) is stored in bf16,
  // computed in fp32 and rounded once stored, and its gradient comes in bf16.
  bool bf16_output = false;
  // --wire int8|int4 (an fp32 layer; docs/communication.md, "Low-bit wire"): its activation-sized
  // sums quantised per row (RowSparseSum::sum), where bf16 would send bf16. Parameter-sized
  // collectives, the attention's scores and scatter_output's reduce-scatter and all-gather stay
  // fp32.
  Wire wire = Wire::Fp32;
  // How the activation-sized sums travel: Bf16 with bf16, else `wire`.
  Wire sum_wire() const { return bf16 ? Wire::Bf16 : wire; }
  // Keep only the input (and the output) from forward to backward and compute the
  // intermediates again there (TrainConfig::recompute; TensorRole::Recomputed). Recomputing
  // repeats their collectives.
  bool recompute = false;
  // Built for inference (NetworkUse::Inference): no parameter gradients, no backward buffers,
  // nothing kept for backward (the intermediates freed after forward, as recompute frees them);
  // backward is a std::logic_error.
  bool inference = false;
};

}  // namespace plexus
