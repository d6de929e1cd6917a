// GAT (Veličković et al. 2018; PyG's GATConv): its layer is pmm/gat_layer_3d.hpp.
#include "models/kinds/kinds.hpp"
#include "pmm/gat_layer_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {
GatOptions gat_options(const GnnSpec& m, bool last) {
  return {static_cast<int>(m.integer(last ? "out-heads" : "heads")), last, m.real("attn-dropout"),
          m.real("negative-slope"), /*elu=*/!last};
}
}  // namespace

const KindSpec& gat_kind() {
  static const KindSpec k = [] {
    KindSpec s;
    s.info = {"gat",
              "graph attention, PyG's GATConv",
              {integer_option("heads", "attention heads of each hidden layer, concatenated (--hidden must be a multiple)",
                              8, 1, 1024),
               integer_option("out-heads", "attention heads of the last layer, averaged", 1, 1, 1024),
               real_option("attn-dropout", "dropout on the attention coefficients while training", 0.0, 0.0, 1.0,
                           /*max_excluded=*/true),
               real_option("negative-slope", "slope of the LeakyReLU of the attention scores", 0.2, 0.0, 1000.0),
               flag_option("edge-features",
                           "the attention scores read the graph's edge features (PyG's GATConv with edge_dim)")}};
    s.info.edge_features_flag = "edge-features";
    s.info.options.back().default_when_absent = true;  // (GAT files before it: off)
    s.order = LayerOrder::TransformFirst;
    s.decay_every_layer = true;  // PyG's GAT example decays every parameter
    s.bf16 = true;
    s.info.attention = true;
    s.shard_adj = false;   // its Â blocks are held whole (per-edge values in the block's order)
    s.agg_chunks = false;
    s.hidden_multiple_of = "heads";
    s.blocks = [](const GnnSpec& m) {
      BlockNeeds b{std::nullopt, true, true};
      b.entry_features = m.flag("edge-features");
      return b;
    };
    s.make_layer = [](const LayerContext& c) -> std::unique_ptr<GnnLayer3D> {
      GatOptions o = gat_options(c.cfg.model, c.last());
      o.edge_width = c.edge_feature_width;
      return std::make_unique<GatLayer3D>(c.be, c.grid, c.geo, c.adj, c.transpose_map, *c.self_loops, o, c.cfg.seed,
                                          c.comm, c.entry_features);
    };
    // Z's columns over i (the last layer's: heads × the classes, averaged later).
    s.rank_key = [](const LayerGeometry& geo, int layers, const GnnSpec& m, GridShape g, const std::array<int, 3>& coords,
                    std::vector<index_t>& key) {
      const index_t width = GatLayer3D::z_width(geo, gat_options(m, geo.layer + 1 == layers));
      key.push_back(block_range(width, g.dim(geo.roles.i), coords[static_cast<int>(geo.roles.i)]).size());
    };
    return s;
  }();
  return k;
}

}  // namespace plexus
