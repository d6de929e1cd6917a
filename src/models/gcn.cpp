#include "models/gcn.hpp"

#include <algorithm>
#include <vector>
#include <stdexcept>

namespace plexus {

GcnModel::GcnModel(Backend& be, ProcessGrid& grid, GcnShards& shards, const GcnConfig& cfg)
    : be_(be), grid_(grid), cfg_(cfg), adj_ws_(be) {
  const int n_layers = shards.layers();
  // The widest dense operand each Â block multiplies: a layer's SpMMs (Â·H forward, Âᵀ·dAGG
  // backward) both take its input-feature block, in_cols wide. Sizes the blocks' SpMM plans.
  if (shards.shape_only && be.computes()) throw std::invalid_argument("GcnModel: shards of sizes only on a backend that computes");
  const std::size_t num_blocks = shards.shape_only ? shards.adj_blocks.size() : shards.adj.size();
  std::vector<index_t> adj_width(num_blocks, 0);
  for (int l = 0; l < n_layers; ++l) {
    const std::size_t k = static_cast<std::size_t>(shards.adj_of_layout[l % 6]);
    if (k < adj_width.size())
      adj_width[k] = std::max(adj_width[k],
                              layer_geometry(grid, l, shards.num_nodes, shards.dims[l], shards.dims[l + 1]).in_cols.size());
  }
  // Each distinct Â block once on the backend (layers of the same layout share it); the host
  // copy goes as soon as it is up. A sharded block keeps its part and is gathered per use.
  for (std::size_t k = 0; k < num_blocks; ++k) {
    // (Shards without block ranges, e.g. put together by hand, hold whole blocks.)
    const AdjBlockRange b = k < shards.adj_blocks.size() ? shards.adj_blocks[k] : AdjBlockRange{};
    Communicator* axis = b.sharded ? &grid.comm(b.axis) : nullptr;
    if (shards.shape_only)
      adj_.push_back(std::make_unique<DeviceAdj>(be, b, shards.adj_nnz.at(k), cfg.agg_chunks, axis, &adj_ws_, adj_width[k]));
    else
      adj_.push_back(std::make_unique<DeviceAdj>(be, b, std::move(shards.adj[k]), std::move(shards.adj_t[k]),
                                                 cfg.agg_chunks, axis, &adj_ws_, adj_width[k]));
  }
  for (int l = 0; l < n_layers; ++l) {
    const LayerGeometry geo = layer_geometry(grid, l, shards.num_nodes, shards.dims[l], shards.dims[l + 1]);
    LayerCommOptions comm;
    comm.scatter_output = cfg.scatter_logits && l + 1 == n_layers;
    comm.reuse_weight = cfg.reuse_gathers;
    comm.agg_chunks = cfg.agg_chunks;
    layers_.push_back(std::make_unique<GcnLayer3D>(be, grid, geo, *adj_[shards.adj_of_layout[l % 6]],
                                                   /*relu=*/l + 1 < n_layers, cfg.seed, /*constant_input=*/l == 0,
                                                   comm));
  }
  features_ = Matrix(be, shards.feat_rows.size(), shards.feat_cols.size());
  if (!shards.shape_only) features_.upload(shards.features);
  const LayerGeometry& g0 = layers_.front()->geometry();
  if (grid.dim(g0.roles.d) > 1) features_full_ = Matrix(be, g0.in_rows.size(), g0.in_cols.size());
}

DropoutSpec GcnModel::dropout_for(int epoch, int layer, bool training) const {
  if (!training || cfg_.dropout <= 0.0f) return {};
  return {cfg_.dropout, DropoutKey{cfg_.seed, static_cast<std::uint32_t>(epoch), static_cast<std::uint32_t>(layer)}};
}

const Matrix& GcnModel::forward(int epoch, bool training, const std::function<void()>& between_layers) {
  // Layer 0's input: the feature rows are stored split over d; all-gather them over d.
  // (With one rank on d the stored block is already the whole input.)
  const LayerGeometry& g0 = layers_.front()->geometry();
  const Matrix* h = &features_;
  if (grid_.dim(g0.roles.d) > 1) {
    // The features never change: with reuse_gathers they are gathered on the first pass only.
    if (!cfg_.reuse_gathers || !features_gathered_)
      grid_.comm(g0.roles.d).all_gather(features_.data(), features_full_.data(),
                                      block_counts(g0.in_rows.size(), grid_.dim(g0.roles.d), g0.in_cols.size()));
    features_gathered_ = true;
    h = &features_full_;
  }
  for (int l = 0; l < num_layers(); ++l) {
    if (l > 0 && between_layers) between_layers();
    h = &layers_[l]->forward(*h, dropout_for(epoch, l, training));
  }
  return *h;
}

void GcnModel::backward(Matrix& d_logits, int epoch, const std::function<void()>& between_layers) {
  Matrix grad = std::move(d_logits);
  for (int l = num_layers() - 1; l >= 0; --l) {
    if (l < num_layers() - 1 && between_layers) between_layers();
    grad = layers_[l]->backward(grad, dropout_for(epoch, l, true), l > 0);
  }
}

LayerGeometry GcnModel::loss_geometry() const {
  LayerGeometry g = layers_.back()->geometry();
  g.out_rows = layers_.back()->out_slice_rows();
  return g;
}

void GcnModel::weights_updated() {
  for (auto& layer : layers_) layer->weight_updated();
}

std::vector<ParamRef> GcnModel::parameters() {
  std::vector<ParamRef> p;
  for (int l = 0; l < num_layers(); ++l) {
    GcnLayer3D& layer = *layers_[l];
    // Kipf & Welling decay only the first layer's weights.
    p.push_back({layer.weight().data(), layer.weight().grad(), layer.weight().size(), l == 0});
    p.push_back({layer.bias().data(), layer.bias().grad(), layer.bias().size(), false});
  }
  return p;
}

}  // namespace plexus
