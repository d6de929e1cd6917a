#pragma once
// Preparing a graph on P ranks (`mpirun -np P plexus prepare`, docs/balancing.md "Prepare on
// many ranks"): every rank holds a slice of the input's rows and ends with a slice of every
// output dataset; no rank ever holds the whole graph. The result equals prepare_graph's
// (plexus/prepare.hpp), value for value, for balance none and permute. METIS needs the whole
// graph in one process: prepare_graph_distributed refuses it (prepare_graph does it).
//
// How (each step one collective over the ranks):
//   1. clean: every rank dedupes its rows; with symmetrize, each stored edge u→v is sent to
//      the rank holding row v and merged into it (A's own weight where both directions exist);
//   2. degrees: each rank's rows' weighted degrees in A + I, all-gathered (8 bytes per node);
//      the permute orders' weights (row nnz in Â) likewise, so every rank computes the same
//      orders P and P2 (16 bytes per node each, with their inverses);
//   3. every entry of the cleaned graph, of Â1 = P·Â·P2ᵀ and of Â2 = P2·Â·Pᵀ travels to the
//      rank writing its output row (output rows: block_range(N, P, rank)), in rounds of at most
//      exchange_round_entries() entries per rank; features, labels, masks, node weights and
//      node ids travel with their node likewise;
//   4. with edge features, each output entry asks the rank holding its input edge's row for
//      that edge's feature row (or its reverse's: partition/edge_rows.hpp), as prepare_graph
//      carries them;
//   5. a link split, whole on every rank, is checked against the input rows each rank holds,
//      renumbered with the graph and checked again against its cleaned output rows.
// Memory per rank: about 48 bytes per entry of its share of the edges (its cleaned rows, Â's
// rows, the output CSRs, one exchange in flight), 4 bytes per feature of its rows, and 16 bytes
// per node of the whole graph (the orders; 56 while they are drawn) — docs/balancing.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plexus/block_counts.hpp"
#include "plexus/comm.hpp"
#include "plexus/prepare.hpp"
#include "plexus/shard.hpp"

namespace plexus {

// One rank's rows of a graph: rows [rows) of the CSR (indptr from 0, global column ids) and
// the per-node data of those rows. The ranks' row ranges must tile [0, num_nodes) in rank
// order (empty ranges allowed). Sizes (num_*) and `directed` are the whole graph's.
struct GraphSlice {
  index_t num_nodes = 0;
  index_t num_features = 0;
  std::int32_t num_classes = 0;
  bool directed = false;
  bool weighted = false;  // values stored (every rank alike)
  Range rows;
  std::vector<index_t> indptr;  // rows.size() + 1, from 0
  std::vector<index_t> indices;
  std::vector<float> values;    // like indices, or empty when !weighted
  // Optional edge features: num_edge_features values per entry of `indices`, row-major (as
  // GraphData's); num_edge_features the whole graph's (every rank alike), 0 when none.
  index_t num_edge_features = 0;
  std::vector<float> edge_features;
  std::vector<float> features;  // rows.size() * num_features
  std::vector<std::int32_t> labels;
  std::vector<std::uint8_t> train_mask, val_mask, test_mask;
  std::vector<float> node_weights;   // rows.size() or empty (every rank alike)
  std::vector<std::int64_t> node_ids;  // the nodes' original ids: rows.size() or empty (alike)
  std::vector<std::string> class_names;  // passed through (every rank alike; may be empty)
  // The graph's link split (/links: held-out links and their negatives, the input's node ids),
  // whole on every rank alike; nullopt when it has none. Renumbered into PreparedSlice::links.
  std::optional<LinkSplit> links;
};

// Rows [rows) of a CSR whose indices are `Idx`: indptr holds the global offsets of rows
// rows.begin ..= rows.end (so indptr.front() is where this rank's entries start in the whole
// CSR), `total` the whole CSR's entry count.
template <class Idx>
struct CsrSlice {
  std::vector<index_t> indptr;
  std::vector<Idx> indices;
  std::vector<float> values;  // empty: unweighted
  index_t total = 0;
  index_t begin() const { return indptr.empty() ? 0 : indptr.front(); }
  index_t size() const { return static_cast<index_t>(indices.size()); }
};

// One rank's rows [rows) = block_range(N, P, rank) of every dataset of a prepared file (what
// PreparedGraph holds whole; names as there).
struct PreparedSlice {
  index_t num_nodes = 0;
  index_t num_features = 0;
  std::int32_t num_classes = 0;
  bool directed = false;
  Balance balance = Balance::kNone;
  std::uint64_t seed = 1;
  int metis_parts = 1;
  bool two_orders = false;
  bool weighted = false;  // the graph stores edge weights (/graph/values)
  Range rows;
  CsrSlice<index_t> graph;  // the cleaned graph in P2 order (rows and columns)
  index_t num_edge_features = 0;
  std::vector<float> edge_features;  // graph's entries' rows (num_edge_features each), as prepare_graph carries them
  CsrSlice<col_t> a1, a2;   // Â1 = P·Â·P2ᵀ, Â2 = P2·Â·Pᵀ (a2 empty with one order)
  // P2 order:
  std::vector<float> features;
  std::vector<std::int32_t> labels;
  std::vector<std::uint8_t> train_mask, val_mask, test_mask;
  std::vector<float> node_weights;     // has_node_weights: rows.size() values
  std::vector<std::int64_t> node_ids;  // has_node_ids: the original ids, rows.size() values
  bool has_node_weights = false, has_node_ids = false;  // the whole graph's (every rank alike)
  std::vector<std::string> class_names;
  // P order (two orders only):
  std::vector<std::int32_t> labels_p;
  std::vector<std::uint8_t> train_p, val_p, test_p;
  std::vector<index_t> node_id_p, node_id_p2;  // the original node at each position of P, P2
  AdjBlockCounts block_counts;                 // the whole graph's (the same on every rank)
  std::optional<LinkSplit> links;              // the split in P2 order, whole (the same on every rank)
  bool features_bf16 = false;                  // PrepareOptions::features_bf16
};

// What one rank of the distributed prepare moved and held, as a run measures it and as
// predict_distributed_prepare predicts it (docs/dry-run.md, "The distributed prepare").
struct PrepareRankCost {
  double bytes = 0;           // received from the other ranks, by the communicator's accounting
  std::uint64_t calls = 0;    // collectives
  // The peak of the prepare's large host arrays (its input slice, the rows it cleans, Â's rows,
  // the orders, the exchange rounds and what arrives, its output rows), as they are registered
  // with its array census: the same count on a run and on its dry run.
  std::uint64_t peak_array_bytes = 0;
};

// Collective over `comm` (every rank calls it with its slice and the same options): the ranks of
// an MPI job (make_mpi_communicator, or a ProcessGrid's world()), one process
// (make_self_communicator) or any other Communicator; what it moves is counted in comm.stats().
// Throws InputError on every rank when any rank's slice is invalid (the failing rank names the
// problem, the others name that rank), or when opt.balance is metis.
// `round`: entries each rank sends per exchange round (0: exchange_round_entries()). `cost`,
// when given: what this rank moved (the growth of comm.stats() over the call: exact when they
// start from zero) and held.
PreparedSlice prepare_graph_distributed(GraphSlice slice, const PrepareOptions& opt, Communicator& comm,
                                        index_t round = 0, PrepareRankCost* cost = nullptr);

// What each rank of prepare_graph_distributed on slices.size() ranks would move and hold, given
// every rank's input slice (in rank order): a dry run of the real prepare of every rank in this
// process, on one thread per rank, over communicators that move the data between the threads and
// count it as MPI does (src/comm/in_process_communicator.hpp). It needs the memory of all the
// ranks together and no MPI. Equal to what the ranks measure, exactly (tests/mpi_test_prepare.cpp).
std::vector<PrepareRankCost> predict_distributed_prepare(std::vector<GraphSlice> slices, const PrepareOptions& opt,
                                                         index_t round = 0);

// The options prepare_graph_distributed refuses on `ranks` ranks (metis, which needs the whole
// graph in one process: prepare_graph; clean off), as InputError: callers check before reading
// the input.
void check_distributed_prepare(const PrepareOptions& opt, int ranks);

// Entries one rank sends per exchange round (or one pass spills per run): 2^20 (12 MB of
// entries in flight), or with a memory budget (`--memory-per-rank`, bytes) a 64th of it in
// 12-byte entries when that is less (at least 256). The environment variable
// PLEXUS_PREPARE_ROUND overrides both (a positive integer: tests use a few entries, to exercise
// many rounds).
index_t exchange_round_entries(std::uint64_t budget = 0);

}  // namespace plexus
