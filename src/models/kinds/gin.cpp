// GIN (Xu et al. 2019; PyG's GINConv with an MLP of two Linears): its layer is
// pmm/gin_layer_3d.hpp.
#include "models/kinds/kinds.hpp"
#include "pmm/gin_layer_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

const KindSpec& gin_kind() {
  static const KindSpec k = [] {
    KindSpec s;
    s.info = {"gin",
              "GIN, a two-layer MLP per layer",
              {real_option("gin-eps", "epsilon of (1 + eps)·h_i, the node's own row", 0.0, -1e6, 1e6),
               flag_option("train-eps", "epsilon is a parameter of each layer, trained by Adam")}};
    s.order = LayerOrder::AggregateFirst;
    s.bf16 = true;
    // A fixed ε: one operator, 1 on the edges and 1 + ε on the self-loops. A trained one: the
    // neighbours' sum and S·H apart.
    s.blocks = [](const GnnSpec& m) {
      const bool trained = m.flag("train-eps");
      return BlockNeeds{NeighbourOperator{false, trained ? 0.0f : 1.0f + m.real("gin-eps")}, trained, false};
    };
    s.make_layer = [](const LayerContext& c) -> std::unique_ptr<GnnLayer3D> {
      const bool trained = c.cfg.model.flag("train-eps");
      return std::make_unique<GinLayer3D>(c.be, c.grid, c.geo, c.adj, trained ? c.self_loops : nullptr, !c.last(),
                                          c.cfg.model.real("gin-eps"), trained, c.cfg.seed, c.comm);
    };
    // The MLP's second Linear3D (row d, in o, out i): the rows of W2 it stores (the output
    // features over o, split further over d) and its output features over i.
    s.rank_key = [](const LayerGeometry& geo, int, const GnnSpec&, GridShape g, const std::array<int, 3>& coords,
                    std::vector<index_t>& key) {
      const auto part = [&](Axis a) { return coords[static_cast<int>(a)]; };
      const Range w2_in = block_range(geo.out_dim, g.dim(geo.roles.o), part(geo.roles.o));
      key.push_back(sub_range(w2_in, g.dim(geo.roles.d), part(geo.roles.d)).size());
      key.push_back(block_range(geo.out_dim, g.dim(geo.roles.i), part(geo.roles.i)).size());
    };
    return s;
  }();
  return k;
}

}  // namespace plexus
