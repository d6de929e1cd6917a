#pragma once
// A GNN kind, declared once: its options (plexus/gnn_spec.hpp: every other part of the engine
// derives its flags, checks, file attributes and report columns from them), what its layers
// need of each Â block, its layer order, its layer factory and what makes two of its ranks
// cost differently in a plan's dry run. One file per kind in this folder (gcn.cpp, sage.cpp,
// ...) and one line in kinds.cpp's table: docs/architecture.md, "How to add a layer".
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "plexus/gnn_spec.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/edge_messages_3d.hpp"
#include "pmm/gnn_layer_3d.hpp"
#include "pmm/neighbour_operators.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

// What a kind's layers multiply by, besides Â itself: the model prepares it per Â block.
struct BlockNeeds {
  // Â's values replaced by an operator on its pattern (pmm/neighbour_operators.hpp); none: Â.
  std::optional<NeighbourOperator> values;
  bool self_loops = false;     // the block's self-loop selector S (and Sᵀ)
  bool transpose_map = false;  // the map of the block's entries to its transpose's (per-edge values)
  bool edge_features = false;  // the block's edges and their features (GINE: DeviceEdgeFeatures)
  bool entry_features = false;  // every entry's feature row, [width × nnz] (GAT with edge features)
};

// What one layer of the model is built from (GnnNetwork builds every layer through its kind).
struct LayerContext {
  Backend& be;
  ProcessGrid& grid;
  const LayerGeometry& geo;
  int layers = 1;                           // in the model; this one is geo.layer
  DeviceAdj& adj;                           // its Â block (values per BlockNeeds::values)
  DeviceAdj* self_loops = nullptr;          // its S, where BlockNeeds::self_loops
  const index_t* transpose_map = nullptr;   // where BlockNeeds::transpose_map
  DeviceEdgeFeatures* edges = nullptr;      // where BlockNeeds::edge_features
  const float* entry_features = nullptr;    // where BlockNeeds::entry_features: [edge_feature_width × nnz]
  index_t edge_feature_width = 0;
  const TrainConfig& cfg;                   // cfg.model: the kind's options
  LayerCommOptions comm;
  bool last() const { return geo.layer + 1 == layers; }
};

struct KindSpec {
  GnnKindInfo info;
  // The order its layers take: Auto where either (the GCN: TrainConfig::layer_order decides),
  // else the only one (SAGE and GIN aggregate first, GAT transforms first).
  LayerOrder order = LayerOrder::Auto;
  bool decay_every_layer = false;  // weight decay on every layer's weights (PyG's GAT example), not the first's only
  bool scatter_logits = false;     // rs-ag's reduce-scatter of the last layer's output (CommVariant)
  bool bf16 = false;               // --precision bf16
  bool shard_adj = true;           // --shard-adj (sharded Â blocks)
  bool agg_chunks = true;          // --agg-chunks > 1
  // The Integer option --hidden must be a multiple of (GAT: "heads", the hidden width being the
  // heads' features concatenated); empty: any width.
  std::string hidden_multiple_of;
  BlockNeeds (*blocks)(const GnnSpec&) = nullptr;
  std::unique_ptr<GnnLayer3D> (*make_layer)(const LayerContext&) = nullptr;
  // Checks across options and the rest of the configuration (the options' own ranges are
  // GnnSpec's); throws InputError naming the option. Optional.
  void (*check)(const TrainConfig&) = nullptr;
  // What, beyond the ranges every layer holds (src/plan/gnn_plan.cpp), decides the costs of
  // the rank at `coords` in layer `geo` of `layers` (options in `model`): sizes appended to
  // `key`. Ranks of equal keys share one dry run, so a range a layer holds and the key misses
  // makes a plan wrong (DistinctRuns tests run every rank alone against the shared runs).
  // Optional.
  void (*rank_key)(const LayerGeometry& geo, int layers, const GnnSpec& model, GridShape grid,
                   const std::array<int, 3>& coords, std::vector<index_t>& key) = nullptr;
};

// The kind named `name` (std::invalid_argument if there is none: GnnSpec checked the name).
const KindSpec& kind_spec(const std::string& name);
inline const KindSpec& kind_spec(const GnnSpec& spec) { return kind_spec(spec.kind()); }
// Every kind, in the order of the table (kinds.cpp).
const std::vector<const KindSpec*>& kind_specs();

// Declarations shared by the kinds' files: an option of each type.
GnnOptionInfo flag_option(std::string name, std::string help);
GnnOptionInfo integer_option(std::string name, std::string help, std::int64_t default_value, std::int64_t min,
                             std::int64_t max);
// [min, max], or [min, max) with max_excluded.
GnnOptionInfo real_option(std::string name, std::string help, double default_value, double min, double max,
                          bool max_excluded = false);
GnnOptionInfo choice_option(std::string name, std::string help, std::vector<std::string> choices);

}  // namespace plexus
