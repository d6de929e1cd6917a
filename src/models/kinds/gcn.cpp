// The GCN (Kipf & Welling, ICLR'17): act(Â·H·W + b), Â = D^-1/2 (A + I) D^-1/2; its layer is
// pmm/gcn_layer_3d.hpp. No options of its own: the layer order is TrainConfig::layer_order.
#include "models/kinds/kinds.hpp"
#include "pmm/gcn_layer_3d.hpp"

namespace plexus {

const KindSpec& gcn_kind() {
  static const KindSpec k = [] {
    KindSpec s;
    s.info = {"gcn", "Kipf & Welling", {}};
    s.order = LayerOrder::Auto;  // either: TrainConfig::layer_order
    s.scatter_logits = true;
    s.bf16 = true;
    s.blocks = [](const GnnSpec&) { return BlockNeeds{}; };
    s.make_layer = [](const LayerContext& c) -> std::unique_ptr<GnnLayer3D> {
      // Layer 0's input (the features) never changes: its clean aggregation is cached.
      return std::make_unique<GcnLayer3D>(c.be, c.grid, c.geo, c.adj, !c.last(), c.cfg.seed,
                                          /*constant_input=*/c.geo.layer == 0, c.comm);
    };
    return s;
  }();
  return k;
}

}  // namespace plexus
