// GraphSAGE (Hamilton et al. 2017; PyG's SAGEConv with its root weight): its layer is
// pmm/sage_layer_3d.hpp.
#include "models/kinds/kinds.hpp"
#include "pmm/sage_layer_3d.hpp"

namespace plexus {

const KindSpec& sage_kind() {
  static const KindSpec k = [] {
    KindSpec s;
    s.info = {"sage",
              "GraphSAGE",
              {choice_option("aggregator", "how the neighbours' rows are combined", {"mean", "sum"}),
               flag_option("normalize", "L2-normalise every layer's output rows")}};
    s.order = LayerOrder::AggregateFirst;
    s.bf16 = true;
    // N = D⁻¹A (mean) or A (sum) on Â's pattern, and S for the node's own row.
    s.blocks = [](const GnnSpec& m) {
      return BlockNeeds{NeighbourOperator{m.choice("aggregator") == "mean", 0.0f}, true, false};
    };
    s.make_layer = [](const LayerContext& c) -> std::unique_ptr<GnnLayer3D> {
      return std::make_unique<SageLayer3D>(c.be, c.grid, c.geo, c.adj, *c.self_loops, !c.last(),
                                           c.cfg.model.flag("normalize"), c.cfg.seed, c.comm);
    };
    return s;
  }();
  return k;
}

}  // namespace plexus
