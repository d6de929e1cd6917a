#pragma once
// Graphs from other formats and generated ones (library plexus::tools, which the `plexus`
// command links; the core library plexus::plexus does not need it). Every function returns a
// validated GraphData, which write_graph_h5 (plexus/io.hpp) stores or train_gnn trains on.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plexus/comm.hpp"
#include "plexus/graph.hpp"
#include "plexus/link_split.hpp"

namespace plexus {

// Planetoid raw files `DIR/ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index}` (cora, citeseer,
// pubmed). Features are row-normalized unless `normalize_features` is false (as in Kipf &
// Welling's preprocessing). Citeseer's isolated test nodes get zero features and label -1,
// as in the original GCN code.
GraphData read_planetoid(const std::string& dir, const std::string& name, bool normalize_features = true);

// Graph500 R-MAT generator (a=0.57, b=0.19, c=0.19, d=0.05): 2^scale nodes,
// edge_factor * 2^scale undirected edges (symmetrized, deduplicated, no self-loops),
// random features and labels, 60/20/20 random split. Deterministic for a given seed,
// whatever the thread count.
struct RmatOptions {
  int scale = 16;
  int edge_factor = 16;
  index_t features = 128;
  std::int32_t classes = 16;
  std::uint64_t seed = 1;
  double a = 0.57, b = 0.19, c = 0.19;
};
GraphData generate_rmat(const RmatOptions& opt);

// ---- converters from other formats ---------------------------------------------------------
// Text inputs may be plain or gzip-compressed (detected by the gzip magic bytes, not by the
// file name). Errors in a text file are InputError("<file>:<line>", ...).
// Every converter drops self-loops (GCN adds its own), deduplicates edges (the first
// occurrence in file order keeps its weight) and calls plexus::validate on its result.

// Node features for inputs that carry none (edge lists, MatrixMarket):
//  - kDegree: one column, log(1 + degree)  (degree = stored row length)
//  - kOnes:   one column of 1.0
//  - kRandom: `feature_width` columns uniform in [0, 1), counter-based on (seed, node): the
//             same for a given seed whatever the thread count.
enum class SyntheticFeatures { kDegree, kOnes, kRandom };

struct EdgeListOptions {
  // Store every edge in both directions (@directed = 0). Otherwise rows are out-neighbours
  // and the graph is written with @directed = 1.
  bool symmetrize = true;
  // 0: node ids may be sparse; the distinct ids that occur are relabelled 0..n-1 in
  // increasing id order (reproducible; ids that never occur in an edge are not nodes).
  // > 0: ids are taken as they are (minus `base`) and must lie in [0, num_nodes); nodes
  // without edges are kept.
  index_t num_nodes = 0;
  int base = 0;  // the id of the first node (0 or 1); with relabelling only checks ids >= base
  SyntheticFeatures features = SyntheticFeatures::kDegree;
  index_t feature_width = 16;  // kRandom only
  std::int32_t classes = 1;    // no labels in these formats: all labels -1, masks all 0
  std::uint64_t seed = 1;      // of kRandom features
  // The nodes, when a node file names them (NodeFile::ids): node k is the node of id
  // node_ids[k], isolated or not, and an edge endpoint that is none of them is an error naming
  // `node_ids_from` (the node file). num_nodes and base do not apply then.
  const std::vector<std::int64_t>* node_ids = nullptr;
  std::string node_ids_from;
  // Refuse node counts above this (a corrupt header or id must not make us allocate without
  // bound).
  index_t max_nodes = index_t{1} << 33;
  // When set (read_edge_list in one process only), every edge line ends with its split column —
  // train, val (or valid) or test — and the validation and test edges are listed here (node
  // indices of the graph read, in the file's order); the graph read holds every edge
  // (given_link_split, plexus/link_split.hpp, holds them out).
  NodePairList* held_out_val = nullptr;
  NodePairList* held_out_test = nullptr;
  // > 0 (read_edge_list in one process only): the last `edge_features` columns of every edge line
  // (before a split column) are the edge's features, finite floats (/graph/edge_features):
  // "u v [w] f1 .. fN". Both directions of a symmetrized edge take its line's; a repeated edge
  // keeps its first line's, as its weight.
  index_t edge_features = 0;
};

// SNAP-style edge list: one edge "u v" or "u v w" per line, fields separated by spaces, tabs
// or a comma; lines starting with '#' or '%' and blank lines are comments. Either all edge
// lines carry a weight (w, finite float -> /graph/values) or none does. With
// EdgeListOptions::held_out_val, "u v [w] split" (split: train, val, valid or test).
GraphData read_edge_list(const std::string& path, const EdgeListOptions& opt = {});
// The same, with `original_ids` set to the id in the file of every node (row k = node k)
// whenever that is not k (ids relabelled, --base 1 or a node file); empty otherwise.
GraphData read_edge_list(const std::string& path, const EdgeListOptions& opt, std::vector<std::int64_t>& original_ids);

// MatrixMarket "%%MatrixMarket matrix coordinate real|integer|pattern general|symmetric":
// a square N x N matrix, 1-based entries, exactly the announced number of entries.
// `symmetric` files store the lower triangle and are expanded; `general` ones are symmetrized
// when opt.symmetrize (else @directed = 1). real/integer values become edge weights.
// opt.num_nodes and opt.base are ignored (the size line gives N; ids are 1-based).
struct GraphSlice;  // plexus/prepare_distributed.hpp
// read_edge_list on the ranks of `comm` (collective; `mpirun -np P plexus convert edgelist`; any
// Communicator: make_mpi_communicator, a ProcessGrid's world(), one process's self communicator):
// each rank parses the lines that start in its 1/P of the file's bytes, so a plain (not gzip)
// regular file is needed, and gets back the rows the ids it owns after relabelling (a run of the
// sorted distinct ids, or block_range(--num-nodes, P, rank)) with their node ids. The rows of
// all ranks together equal read_edge_list's graph and original ids. No node file (opt.node_ids).
// A bad line throws InputError("<file>:<line>", ...) on the rank that read it.
GraphSlice read_edge_list_on_ranks(const std::string& path, const EdgeListOptions& opt, Communicator& comm);
// read_matrix_market likewise: rank 0 reads the header, every rank the entry lines starting in
// its 1/P of the bytes after it; rank k gets rows block_range(rows, P, k).
GraphSlice read_matrix_market_on_ranks(const std::string& path, const EdgeListOptions& opt, Communicator& comm);

// The same two converters in one process, in `passes` passes (`plexus convert edgelist|mtx
// --memory-per-rank M --scratch DIR`): pass k parses the lines starting in its 1/K of the bytes,
// and the edges and ids move between passes through scratch files in `scratch_dir` (they have no
// name: nothing is left there, src/comm/scratch_file.hpp). The rows reach `sink` a run at a time
// in row order — as the ranks would hold them: a run of the sorted distinct ids with their node
// ids, or block_range(rows, K, k) — with the entries of the rows before them and of the whole
// graph (edges_before, edges_total). Together the runs equal read_edge_list's (read_matrix_market's)
// graph and ids. Memory: a pass's share of the edges (about 32 bytes each, twice symmetrized, and
// 16 more as ids) and of the rows; no node file (opt.node_ids).
using GraphRowsSink = std::function<void(GraphSlice&& rows, index_t edges_before, index_t edges_total)>;
void read_edge_list_in_passes(const std::string& path, const EdgeListOptions& opt, int passes,
                              const std::string& scratch_dir, const GraphRowsSink& sink);
void read_matrix_market_in_passes(const std::string& path, const EdgeListOptions& opt, int passes,
                                  const std::string& scratch_dir, const GraphRowsSink& sink);
// The memory of converting a text graph of `lines` lines in `passes` passes, in bytes: about
// (96·L + (4·W + 40)·N) / K + 36 MB, with W the feature width and N = num_nodes, or 2·L when the
// ids are relabelled (at most two new nodes a line); symmetrizing counts in the 96 (each edge
// travels twice). convert_passes_for_budget: the fewest passes that fit `budget`, or
// InputError("convert_passes_for_budget(budget)", ...) when none does.
double convert_memory_bytes(std::uint64_t lines, index_t num_nodes, index_t feature_width, bool symmetrize, int passes);
// The lines of a plain text graph (at least one), as convert_memory_bytes counts them;
// InputError(path, ...) for a gzip file, which cannot be split into passes.
std::uint64_t text_graph_lines(const std::string& path);
int convert_passes_for_budget(std::uint64_t lines, index_t num_nodes, index_t feature_width, bool symmetrize,
                              std::uint64_t budget);

GraphData read_matrix_market(const std::string& path, const EdgeListOptions& opt = {});

// OGB node-property-prediction raw layout, DIR = the dataset directory (e.g. ogbn_arxiv/):
//   raw/edge.csv.gz          "src,dst" per row (0-based)
//   raw/num-node-list.csv.gz optional, one row: N
//   raw/node-feat.csv.gz     optional, N rows of F floats (absent -> degree feature)
//   raw/node-label.csv.gz    optional, N rows of one label ("nan" or empty -> -1)
//   split/<split>/{train,valid,test}.csv.gz  node ids, one per row
// N is num-node-list, else the number of feature rows, else the number of label rows, else
// max id + 1. num_classes = max label + 1. An empty `split` picks the only directory under
// split/ (none -> all masks 0).
struct OgbOptions {
  bool symmetrize = true;  // ogbn-arxiv is directed; GCN setups symmetrize it
  std::string split;
  index_t max_nodes = index_t{1} << 33;
};
GraphData read_ogb(const std::string& dir, const OgbOptions& opt = {});

// OGB link-property-prediction layout (ogbl-collab, -ppa, -ddi, -citation2, -vessel): raw/ as
// above (raw/edge.csv.gz holds the training links only, each undirected link once; no labels),
// and split/<split>/{train,valid,test}.pt, torch.save dicts of numpy arrays read without Python
// (io/convert/torch_file.hpp):
//   train.pt  "edge" [E, 2]                                   or "source_node", "target_node" [E]
//   valid.pt  "edge" [M, 2] and "edge_neg" [K, 2]              or "source_node", "target_node"
//   test.pt                                                       [M] and "target_node_neg" [M, K]
// (other keys, as collab's "weight" and "year", are ignored). Every training link must be an
// edge of raw/edge.csv.gz (either direction when symmetrized), every node in range. The split is
// OGB's as published (LinkSplit::as_published: a held-out link may also be a training link, as
// ogbl-collab's repeat collaborations are, and a negative a link); the graph is read as
// read_ogb reads it. citation2's target_node_neg becomes the pairs (source_i, neg_ij), row-major
// (LinkSplit::negatives_per_link = K), each held-out link ranked against its own for the MRR.
struct OgbLinkData {
  GraphData graph;
  LinkSplit held_out;
};
OgbLinkData read_ogb_links(const std::string& dir, const OgbOptions& opt = {});
// Whether the split read_ogb and read_ogb_links would take is a link split (holds a .pt file).
bool ogb_has_link_split(const std::string& dir, const OgbOptions& opt = {});

// ---- a graph built in memory from your arrays ---------------------------------------------
// Edges between nodes named by your own 64-bit ids (account numbers, ...), and optionally what
// you know of each node, to a validated GraphData whose node k is nodes.ids[k] (kept in
// GraphData::node_ids, and so in predictions). Self-loops are dropped and duplicate edges merged
// (the first one keeps its weight), as every converter does: Â adds each node's own loop.
struct EdgeArrays {
  std::vector<std::int64_t> src, dst;  // one entry per edge
  std::vector<float> weights;          // one per edge, or empty (unweighted)
};
struct NodeArrays {
  // Every node, isolated ones too, in the order of the rows below; empty: the ids that occur
  // in the edges, ascending (then features, labels and split must be empty too).
  std::vector<std::int64_t> ids;
  index_t num_features = 0;            // 0: one feature, log(1 + degree)
  std::vector<float> features;         // ids.size() × num_features, row-major
  std::vector<std::int32_t> labels;    // one per node (-1: unlabelled), or empty: none labelled
  std::int32_t num_classes = 0;        // 0: the largest label + 1 (at least 1)
  std::vector<std::uint8_t> split;     // one per node: 0 none, 1 train, 2 validation, 3 test; or empty
};
struct GraphBuildOptions {
  bool symmetrize = true;  // store every edge both ways (an undirected graph); else directed
};
// InputError("EdgeArrays.<field>" or "NodeArrays.<field>", ...) naming the first problem: sizes
// that disagree, an edge endpoint that is not one of nodes.ids, an id given twice, a non-finite
// weight or feature, a label outside [-1, num_classes), a split value above 3.
GraphData build_graph(const EdgeArrays& edges, const NodeArrays& nodes = {}, const GraphBuildOptions& options = {});

// ---- your own node data: node files, .npy features, stratified splits ---------------------
// A node file (`plexus convert edgelist --nodes`, docs/converters.md): CSV or TSV with a header
// line (tab-separated when the header holds a tab, else comma-separated; fields may be quoted
// "like, this" with "" for a quote), one node per line. Column roles by name: the id (a
// non-negative integer), the label (integers used as given, -1 or empty = unlabelled; or
// arbitrary class names, numbered in sorted byte order), the split (train, val/valid/
// validation, test, any case; empty = no split) and float features (every other column, in
// file order, or exactly `feature_columns`). Errors are InputError("<file>:<line>", ...).
struct NodeFileOptions {
  std::string id_column = "id", label_column = "label", split_column = "split";
  // A missing label or split column is an error when the option named it, else "none".
  bool label_column_required = false, split_column_required = false;
  bool pick_features = false;                // use exactly `feature_columns`
  std::vector<std::string> feature_columns;  // (may be empty: no feature columns)
  // The features come from elsewhere (--features x.npy): feature columns are refused.
  std::string features_from;
  index_t max_nodes = index_t{1} << 33;
};

enum class SplitOf : std::uint8_t { kNone = 0, kTrain, kVal, kTest };

struct NodeFile {
  std::string path;
  std::vector<std::int64_t> ids;         // row k (file order) = node k
  bool has_labels = false;               // a label column
  std::vector<std::int32_t> labels;      // per node, -1 = unlabelled (when has_labels)
  std::int32_t num_classes = 0;          // max label + 1, or the number of class names
  std::vector<std::string> class_names;  // class c's name, when the labels were names
  bool has_split = false;                // a split column
  std::vector<SplitOf> split;            // per node (when has_split)
  std::vector<std::string> feature_names;
  std::vector<float> features;           // ids.size() x feature_names.size(), row-major
};
NodeFile read_node_file(const std::string& path, const NodeFileOptions& opt = {});

// Gives `g` (node k = row k of the node file) the file's labels, split masks and, when it has
// feature columns, its features. `classes`: --classes, 0 = the labels decide; it must not be
// below max label + 1.
void apply_node_file(GraphData& g, const NodeFile& nodes, std::int32_t classes);

// A 2-D float32 or float64 NumPy .npy array (format versions 1-3, C order, little-endian),
// as float32. InputError(path, ...) on a corrupt header, another dtype, Fortran order, a
// truncated body or a non-finite value.
struct NpyMatrix {
  index_t rows = 0, cols = 0;
  std::vector<float> values;  // rows x cols, row-major
};
NpyMatrix read_npy_matrix(const std::string& path);
// The matrix as the features of `g` (row k = node k); its row count must be g.num_nodes.
// `rows_are` says what a row is, for the error message (e.g. "the lines of nodes.csv").
void set_features(GraphData& g, NpyMatrix&& m, const std::string& path, const std::string& rows_are);

// `--split TRAIN,VAL,TEST`: three fractions in [0, 1], train > 0, summing to at most 1
// (nodes left over are in no split). InputError("SplitFractions", ...) otherwise.
struct SplitFractions {
  double train = 0, val = 0, test = 0;
};
SplitFractions parse_split_fractions(const std::string& text);
// A random split of the labelled nodes of `g`, stratified by label: class c's n_c nodes in a
// Philox order of (seed, node) are cut at round(n_c * train) and round(n_c * (train + val)),
// and at round(n_c * (train + val + test)); the same for a given seed on every platform.
void stratified_split(GraphData& g, const SplitFractions& fractions, std::uint64_t seed);

// ---- link prediction: a random split of the edges: plexus/link_split.hpp (included above) ------
// A list of node pairs from text (plexus predict --pairs): one pair of ids a line ("u v", "u,v" or
// tab-separated), lines blank or starting with '#' or '%' skipped; plain or gzip, or "-" for
// standard input. InputError("<file>:<line>", ...) for a line that is not two integers,
// InputError(path, ...) for a file without a pair.
NodePairList read_node_pairs_text(const std::string& path);
// A list of node ids from text (plexus predict --top-k K --nodes FILE): one id a line, read as
// read_node_pairs_text reads pairs; InputError for a line that is not one integer, a file
// without an id.
std::vector<std::int64_t> read_node_list_text(const std::string& path);

// ---- stochastic block model ------------------------------------------------------------------
// Planted communities (each node uniform over `communities`, by default one per class; a node's
// class is its community mod `classes`), O(edges) generation: node u emits k_u ~
// uniform{0..avg_degree} edge stubs; each stub goes to a node of u's own community with
// probability `homophily`, otherwise to a uniform other community, and then to a uniform node of
// that community. More communities than classes give a graph whose locality is finer than its
// labels (communities of a few thousand nodes that a partitioner can keep whole). Symmetrized, deduplicated, no self-loops: mean degree ~ avg_degree. Features are
// feature_signal * centroid[class] + N(0, 1) noise, centroids with entries +-1. Split: each
// node is train with probability train_fraction, else val with val_fraction, else test.
// Everything is counter-based on (seed, node): deterministic whatever the thread count.
struct SbmOptions {
  index_t nodes = 10000;
  std::int32_t classes = 8;
  std::int32_t communities = 0;  // 0: one per class; else at least `classes`
  double avg_degree = 10;
  double homophily = 0.8;
  index_t features = 32;
  double feature_signal = 0.3;
  double train_fraction = 0.6, val_fraction = 0.2;
  std::uint64_t seed = 1;
};
GraphData generate_sbm(const SbmOptions& opt);

// ---- road-like graph ---------------------------------------------------------------------------
// A lattice W = ceil(sqrt(nodes)) wide with each right and lower link kept with probability
// avg_degree / 4 (mean degree ~ avg_degree, at most 4), numbered row by row, so that neighbours
// are near in the node order (road networks, meshes). Labels: `classes` districts, rectangles of
// the map; features and split as the SBM's. Deterministic in (options, seed).
struct RoadOptions {
  index_t nodes = 10000;
  std::int32_t classes = 8;
  double avg_degree = 2.6;
  index_t features = 32;
  double feature_signal = 0.3;
  double train_fraction = 0.6, val_fraction = 0.2;
  std::uint64_t seed = 1;
};
GraphData generate_road(const RoadOptions& opt);

}  // namespace plexus
