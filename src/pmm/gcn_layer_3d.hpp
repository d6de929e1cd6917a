#pragma once
// One GCN layer as a 3D parallel matrix multiply (Plexus, SC'25): OUT = act(Â·H·W + b).
// All of a layer's collectives are issued in gcn_layer_3d.cpp, each named with its axis.
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"

namespace plexus {

struct DropoutSpec {
  float p = 0.0f;  // 0 = off (evaluation)
  DropoutKey key{};
};

class GcnLayer3D {
 public:
  // `constant_input`: the input never changes (layer 0: the features), so the aggregation
  // without dropout, Â·H, is computed once and reused by every evaluation pass.
  GcnLayer3D(Backend& be, ProcessGrid& grid, LayerGeometry geo, const HostCsr& a, const HostCsr& a_t, bool relu,
             std::uint64_t seed, bool constant_input = false);

  // h_in: [in_rows × in_cols] (layer 0: already all-gathered over d). Returns the output
  // block [out_rows × out_cols], replicated over the i axis.
  const Matrix& forward(const Matrix& h_in, const DropoutSpec& dropout);
  // d_out: gradient of the output block (modified in place). Accumulates dW and db; returns
  // dH_in [in_rows × in_cols] unless `need_input_grad` is false (layer 0).
  Matrix backward(Matrix& d_out, const DropoutSpec& dropout, bool need_input_grad);

  const LayerGeometry& geometry() const { return geo_; }
  Matrix& weight() { return w_; }         // this rank's shard [w_rows × out_cols]
  Matrix& weight_grad() { return dw_; }
  Buffer<float>& bias() { return b_; }    // [out_cols], replicated over i and d
  Buffer<float>& bias_grad() { return db_; }

 private:
  // All-gather over d of w_ into w_full_; returns the whole block (w_ itself when d has one rank).
  const Matrix& gather_weight();

  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  bool relu_;
  CsrMatrix a_, a_t_;
  Matrix w_, dw_, w_full_, dw_full_;
  Buffer<float> b_, db_;
  Matrix h_drop_, agg_, out_;
  bool constant_input_ = false;
  Matrix agg_clean_;                 // cached Â·H without dropout (constant_input only)
  bool agg_clean_valid_ = false;
  const Matrix* last_agg_ = nullptr;  // the aggregation the last forward used (for backward)
};

}  // namespace plexus
