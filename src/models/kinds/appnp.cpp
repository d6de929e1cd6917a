// APPNP (Gasteiger et al. 2019; PyG's APPNP after an MLP, as its citation example): its layer is
// pmm/appnp_layer_3d.hpp.
#include "models/kinds/kinds.hpp"
#include "pmm/appnp_layer_3d.hpp"

namespace plexus {

const KindSpec& appnp_kind() {
  static const KindSpec k = [] {
    KindSpec s;
    s.info = {"appnp",
              "APPNP: an MLP, then K steps of personalized PageRank",
              {integer_option("steps", "propagation steps K after the last layer", 10, 0, 1000),
               real_option("alpha", "teleport probability of each step", 0.1, 0.0, 1.0)}};
    s.order = LayerOrder::TransformFirst;
    s.decay_every_layer = true;  // PyG's APPNP example decays every parameter
    s.blocks = [](const GnnSpec&) { return BlockNeeds{std::nullopt, /*self_loops=*/true, false}; };
    s.make_layer = [](const LayerContext& c) -> std::unique_ptr<GnnLayer3D> {
      const bool last = c.last();  // the MLP's hidden layers: node-wise Linears and a ReLU
      const AppnpOptions opt{last ? static_cast<int>(c.cfg.model.integer("steps")) : 0, c.cfg.model.real("alpha"), !last};
      return std::make_unique<AppnpLayer3D>(c.be, c.grid, c.geo, c.adj, *c.self_loops, opt, c.cfg.seed, c.comm);
    };
    return s;
  }();
  return k;
}

}  // namespace plexus
