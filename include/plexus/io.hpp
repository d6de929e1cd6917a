#pragma once
// Reading and writing graphs in Plexus's own HDF5 format (the core library). The converters
// from other formats and the generators are in plexus/convert.hpp (library plexus::tools).
// Every reader validates what it reads and throws InputError naming the file (and the HDF5
// dataset) on bad input.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plexus/graph.hpp"
#include "plexus/link_split.hpp"
#include "plexus/predictions.hpp"
#include "plexus/prepare_passes.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"

namespace plexus {

inline constexpr std::int32_t kFormatVersion = 1;

// A link model's recommendations (GnnModel::top_k_partners) as one HDF5 file (docs/predictions.md,
// "Partners"): root attributes format "plexus-top-k", version 1, num_nodes (the graph's), k and
// num_rows M (N, or the nodes listed); datasets node_id int64 [M] (your ids), partners int64
// [M × k] (your ids, -1: none), scores float32 [M × k] (0 beside -1). Rows in the graph's node
// order (every node: row u is node u); every rank writes the rows it reports (TopKPartners's
// first_row), collectively on the grid's world, atomically (io/files). Collective.
void write_top_k_h5(const TopKPartners& partners, index_t num_nodes, ProcessGrid& grid, const std::string& path);
// A link model's scores of given pairs (GnnModel::score_pairs) as one HDF5 file (docs/predictions.md,
// "Pair scores"): root attributes format "plexus-pair-scores", version 1, num_pairs; datasets u,
// v int64 [M] (your ids, as given) and score float32 [M] (logits). Every rank passes the same
// lists; collective, atomic.
void write_pair_scores_h5(const NodePairList& pairs, const std::vector<float>& scores, ProcessGrid& grid,
                          const std::string& path);

// Format v1 HDF5 (docs/format-v1.md).
GraphData read_graph_h5(const std::string& path);
// Only the sizes of a format v1 file (root attributes and the length of /graph/indices),
// without reading the data: what `plexus plan` needs. Bad files throw InputError(path, ...).
struct GraphInfo {
  index_t num_nodes = 0, num_features = 0, nnz = 0;
  std::int32_t num_classes = 0;
  bool directed = false;  // the root attribute `directed`
  bool link_split = false;  // whether it holds its own link split (/links: read_link_split_h5)
  index_t num_edge_features = 0;  // the width of /graph/edge_features (0: none)
};
GraphInfo read_graph_info_h5(const std::string& path);
// This rank's shards of a `layers`-layer GCN (hidden width `hidden`) over `grid`, reading
// only the hyperslabs they need, with MPI-IO collective reads when the grid has several
// ranks (every rank of the grid must call it). Validates everything it reads; the ranks
// together read, and so validate, the whole file. `shard_adj`: store Â sharded over each
// layer's i axis (TrainConfig::shard_adj), so that no rank holds more than its 1/P of it.
// `order`: the layers' orders the shards are cut for (transform_first_layers on the file's
// widths; layer_order_of(TrainConfig) for a training run). For training the file must hold a
// labelled node in its training mask (InputError naming /masks/train); for inference it need
// hold no label at all (every label -1, every mask 0: a graph to score).
enum class ShardsFor { Training, Inference };
GnnShards load_shards_h5(const std::string& path, ProcessGrid& grid, int layers, index_t hidden,
                         bool shard_adj = false, LayerOrder order = LayerOrder::AggregateFirst,
                         ShardsFor purpose = ShardsFor::Training);
// GCN model files (docs/gcn-model.md): the whole parameters and Adam moments of a GnnTrainer
// (ModelState, plexus/gnn_trainer.hpp), the widths `dims` = gnn_dims(...) of its model and the
// training options. GnnTrainer::save writes one (sharded, collectively); write_gnn_model_h5
// writes a whole state from one process, atomically. Reading checks the file against `dims`
// (InputError naming the file and what differs); read_gnn_model_info_h5 reads only what the
// file says of its model and run (to build the model that loads it).
struct ModelState;
struct GnnModelInfo;
struct TrainConfig;
void write_gnn_model_h5(const ModelState& state, const std::vector<index_t>& dims, const TrainConfig& options,
                        const std::string& path);
// The parameters a model of some kind holds (GnnTrainer's): their names and whole shapes.
struct ParameterShape {
  std::string name;  // "layer0/weight", ...
  index_t rows = 0, cols = 0;
};
ModelState read_gnn_model_h5(const std::string& path, const std::vector<index_t>& dims,
                             const std::vector<ParameterShape>& parameters);
GnnModelInfo read_gnn_model_info_h5(const std::string& path);
// A predictions file (docs/predictions.md): every node's class and logits, row k = node k, from
// each rank's Predictions (GnnTrainer::predict()) of a graph of `num_nodes` nodes. Collective
// over `grid` (its world()): the rows move to the rank whose block of the nodes holds them, and
// each rank writes its block through MPI-IO; nothing is gathered to one rank. Atomic; InputError(path, ...).
// `ids_from`: the graph file; where it stores original ids (/node_ids), the `/node_id` column
// holds them instead of 0..N-1 (row k is still node k). `attention` (GnnTrainer::attention(),
// GAT): each layer's coefficients are written too, under /attention/layer<l>, their rows
// sorted by (dst, src) — the same file whatever the grid. `embeddings` (GnnTrainer::
// embeddings()): hidden layer l's rows as /embeddings/layer<l>, row k = node k.
void write_predictions_h5(const Predictions& predictions, index_t num_nodes, std::int64_t epochs_done,
                          ProcessGrid& grid, const std::string& path, const std::string& ids_from = {},
                          const std::vector<EdgeAttention>& attention = {},
                          const std::vector<NodeRows>& embeddings = {});
// The same with the ids of the nodes from memory. Set the fields by name:
//   PredictionsFileOptions o;
//   o.node_ids = graph.node_ids;  // GraphData::node_ids of the graph predicted: /node_id holds them
//   write_predictions_h5(predictions, graph.num_nodes, epochs, grid, "out.h5", o);
struct PredictionsFileOptions {
  explicit PredictionsFileOptions() = default;  // no `{}` argument: it would also read as an ids_from
  // Every node's id (node k is node_ids[k]; num_nodes of them, distinct; every rank passes all of
  // them, e.g. GraphData::node_ids), written as /node_id. Empty: ids_from's, else 0..N-1. Not
  // both. InputError("PredictionsFileOptions.node_ids", ...) on every rank when any rank's list
  // has another length or an id twice.
  std::vector<std::int64_t> node_ids;
  std::string ids_from;  // the graph file whose /node_ids to write, as above
  std::vector<EdgeAttention> attention;
  std::vector<NodeRows> embeddings;
};
void write_predictions_h5(const Predictions& predictions, index_t num_nodes, std::int64_t epochs_done,
                          ProcessGrid& grid, const std::string& path, const PredictionsFileOptions& options);

// Atomic: writes `path.tmp.<pid>` then renames, so an interrupted write never leaves a file
// that later loads.
void write_graph_h5(const GraphData& g, const std::string& path);

// What a converted graph knows of its nodes and classes beyond format v1's arrays
// (docs/format-v1.md, "Original ids and class names"): /node_ids and /class_names.
struct NodeNames {
  std::vector<std::int64_t> ids;         // empty, or the original id of node k at row k
  std::vector<std::string> class_names;  // empty, or the name of class c at row c
};
// write_graph_h5 plus the names (each written only when non-empty and of the right length:
// N ids, num_classes names; InputError(path, ...) otherwise).
void write_graph_h5(const GraphData& g, const NodeNames& names, const std::string& path);
// The same with a link split (docs/format-v1.md, "Link splits": /links/{val,test}_{pos,neg},
// int64 [M, 2]): `g` then holds the training links only (random_link_split leaves it so).
// Checked first (validate_link_split).
void write_graph_h5(const GraphData& g, const NodeNames& names, const LinkSplit& held_out, const std::string& path);
// A file's link split (/links), checked against its graph's node count and shapes; nullopt when
// the file has none. (validate_link_split checks it against the graph's edges.)
std::optional<LinkSplit> read_link_split_h5(const std::string& path);
// The original ids of nodes [begin, begin + count) in the order a predictions file uses
// (node k of the graph as converted: a prepared file's order is undone), read from the
// file's /node_ids; empty when it has none. InputError(path, ...) on a malformed /node_ids.
std::vector<std::int64_t> read_original_node_ids_h5(const std::string& path, index_t begin, index_t count);
// The names a file stores, for copying them into a file made from it (`plexus prepare`): ids
// in the order of the file's own rows (row k = node k as read_graph_h5 reads it: the converted
// order of a plain file, the stored P2 order of a prepared one) and the class names. A member
// is empty when the file has no such dataset; InputError(path, ...) when one is malformed
// (/node_ids not int64-like [N], /class_names not num_classes strings).
NodeNames read_node_names_h5(const std::string& path);
// write_prepared_h5 (plexus/prepare.hpp) plus the names of the graph it was prepared from:
// `names.ids[k]` is the original id of node k of that graph (before P2), stored as /node_ids
// in the prepared file's P2 order (row k = names.ids[p.node_id_p2[k]]) like every per-node
// dataset; /class_names as is. Each written only when non-empty and of the right length.
struct PreparedGraph;
void write_prepared_h5(const PreparedGraph& p, const NodeNames& names, const std::string& path);

// The distributed prepare's input and output (plexus/prepare_distributed.hpp), collectively
// over `comm` (through MPI-IO on comm.mpi_comm() when it has several ranks). read_graph_slice_h5:
// this rank's rows of the file (the ranks' ranges split the rows so each holds about as many
// bytes of edges and node rows), every value checked as read_graph_h5 checks it, with the node ids
// and class names; a bad value throws InputError(path, ...) on the rank that read it (the CLI then
// ends every rank). On a communicator without MPI (a recording one: the dry run of the prepare)
// each rank's rows are read by this process alone.
// write_prepared_h5: the file write_prepared_h5 above writes, dataset for dataset, each rank
// writing its rows; atomic (io/hdf5/collective_write.hpp).
struct GraphSlice;
struct PreparedSlice;
GraphSlice read_graph_slice_h5(const std::string& path, Communicator& comm);
void write_prepared_h5(const PreparedSlice& p, const std::string& path, Communicator& comm);
// A plain format v1 file (write_graph_h5 with its names) from the ranks' slices: each rank writes
// its rows (`g.rows`, tiling [0, N) in rank order), collectively and atomically.
void write_graph_h5(const GraphSlice& g, const std::string& path, Communicator& comm);

// The prepare in passes' input and output (plexus/prepare_passes.hpp), serially.
// open_graph_rows_h5: a format v1 file's rows a run at a time, every value checked as
// read_graph_h5 checks it, with the class names. PreparedFileWriter: the file
// write_prepared_h5(PreparedSlice) writes, dataset for dataset, written a run of rows at a time;
// a temporary file beside `path` until finish() renames it over `path` (io/files/safe_files.hpp),
// removed when the writer is destroyed unfinished.
class GraphRowSource;
std::unique_ptr<GraphRowSource> open_graph_rows_h5(const std::string& path);
// GraphFileWriter: the file write_graph_h5(GraphSlice) writes, a run of rows at a time (the
// converters in passes, plexus/convert.hpp); `edges_before`/`edges_total` place the rows' entries
// in the whole CSR. With `node_ids` every run carries its rows' ids, stored as /node_ids.
class GraphFileWriter {
 public:
  GraphFileWriter(const std::string& path, bool node_ids);
  ~GraphFileWriter();
  void write(const GraphSlice& rows, index_t edges_before, index_t edges_total);
  void finish();

 private:
  struct State;
  std::unique_ptr<State> s_;
};
class PreparedFileWriter final : public PreparedRowSink {
 public:
  explicit PreparedFileWriter(const std::string& path);
  ~PreparedFileWriter() override;
  void write(const PreparedSlice& piece) override;
  void finish() override;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace plexus
