#pragma once
// Preparing a graph larger than one process's memory (`plexus prepare --memory-per-rank M
// --scratch DIR`, docs/balancing.md "Prepare in passes"): the prepare on P ranks
// (plexus/prepare_distributed.hpp) done by one process in K passes, the entries moving between
// passes through scratch files in DIR instead of between ranks. The result equals
// prepare_graph's (plexus/prepare.hpp), value for value, for balance none and permute.
//
// Each input pass reads a run of the input's rows (about 1/K of its bytes); each output pass
// holds a run of the output's rows (about 1/K of its entries) and writes it:
//   A. (symmetrize) each pass dedupes its rows and spills every entry u→v to the pass of row v;
//   B. each pass cleans its rows again (dedupe, merge the spilled transposes in) and records the
//      degrees and row lengths: every node's 1/sqrt(degree), then the orders P and P2;
//   C. each pass cleans its rows a third time, computes its rows of Â, and spills every entry
//      of the graph, Â1 and Â2 and every node row to the output pass holding its new row;
//   D. each output pass reads its entries and node rows back, sorts them into its rows, and
//      hands them to the sink, in row order.
// Memory: about 48 bytes per entry of a pass's share of Â, 4 bytes per feature of its rows, 40
// bytes per node of the whole graph (orders, degrees, row lengths) and three 12 MB rounds of
// spilled items (passes_for_budget). Scratch space: about 12 bytes per entry of the graph and of
// Â (twice with two orders), plus the node rows. Scratch files have no name (src/comm/
// scratch_file.hpp): nothing is left in DIR, however the process ends.
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/prepare.hpp"
#include "plexus/prepare_distributed.hpp"

namespace plexus {

// The input, read a run of rows at a time.
class GraphRowSource {
 public:
  virtual ~GraphRowSource() = default;
  // The whole graph's sizes, flags, class names and link split (a GraphSlice of no rows; has_*
  // below). A split is checked and renumbered as prepare_graph does, and written with the rows.
  virtual GraphSlice header() const = 0;
  virtual bool has_node_weights() const = 0;
  virtual bool has_node_ids() const = 0;
  // Row boundaries splitting the rows into `parts` runs of about equal bytes (parts + 1 of them).
  virtual std::vector<index_t> split(int parts) const = 0;
  // Rows [rows): with `node_data` false only the CSR (indptr from 0, indices, values), else
  // only the per-node data (features, labels, masks, node weights and ids). Values checked.
  virtual GraphSlice read(Range rows, bool node_data) const = 0;
};

// Where the output goes, a run of rows at a time.
class PreparedRowSink {
 public:
  virtual ~PreparedRowSink() = default;
  // Runs of rows in order, tiling [0, num_nodes): each piece's CsrSlices hold global offsets and
  // totals as a rank's do; the block counts are complete in the last piece only.
  virtual void write(const PreparedSlice& piece) = 0;
  // Called once, after the last piece, when every piece was written (a file sink commits it).
  virtual void finish() {}
};

struct PassOptions {
  int passes = 1;           // K
  std::string scratch_dir;  // where the spilled entries go (must exist)
  index_t round = index_t{1} << 20;  // items per spilled run (12 MB of entries)
};

// Throws InputError for options the passes do not do (metis; clean off) and bad pass options.
void prepare_graph_in_passes(const GraphRowSource& in, const PrepareOptions& opt, const PassOptions& passes,
                             PreparedRowSink& out);

// The fewest passes whose memory (above) fits `budget` bytes for a graph of these sizes
// (`stored_edges` as in the input; symmetrizing may double them); 1 when one pass fits. Throws
// InputError("passes_for_budget(budget)", ...) when even one row per pass would not fit (the 40 bytes
// per node alone exceed the budget).
int passes_for_budget(index_t num_nodes, index_t stored_edges, index_t num_features, bool symmetrize,
                      std::uint64_t budget, index_t edge_features = 0);

// The memory of a prepare in `passes` passes, by the model above, in bytes; `edge_features`: the
// width of the graph's edge feature rows (step E adds about 8·D_e + 64 bytes per entry of a pass).
double passes_memory_bytes(index_t num_nodes, index_t stored_edges, index_t num_features, bool symmetrize,
                           int passes, index_t edge_features = 0);

}  // namespace plexus
