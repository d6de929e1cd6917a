// GINE (Hu et al. 2020, "Strategies for pre-training GNNs"; PyG's GINEConv with an MLP of two
// Linears): GIN whose messages add each edge's features, relu(h_j + e_ij·W_e + b_e). Its layer is
// GIN's (pmm/gin_layer_3d.hpp) given the block's edges (pmm/edge_messages_3d.hpp).
#include "models/kinds/kinds.hpp"
#include "pmm/gin_layer_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

const KindSpec& gine_kind() {
  static const KindSpec k = [] {
    KindSpec s = gin_kind();  // GIN's options, order and rank key
    s.info.name = "gine";
    s.info.title = "GINE, GIN with edge features in its messages (PyG's GINEConv)";
    s.info.edge_features = true;
    s.bf16 = false;       // the edge messages are fp32
    s.shard_adj = false;  // per-entry features in the block's order
    s.agg_chunks = false;
    // The messages run over the block's edges (DeviceEdgeFeatures), the node itself over S: Â's
    // values are not read.
    s.blocks = [](const GnnSpec&) { return BlockNeeds{std::nullopt, true, false, true}; };
    s.make_layer = [](const LayerContext& c) -> std::unique_ptr<GnnLayer3D> {
      return std::make_unique<GinLayer3D>(c.be, c.grid, c.geo, c.adj, c.self_loops, !c.last(), c.cfg.model.real("gin-eps"),
                                          c.cfg.model.flag("train-eps"), c.cfg.seed, c.comm, c.edges);
    };
    return s;
  }();
  return k;
}

}  // namespace plexus
