// load_shards_h5: each rank reads only the hyperslabs its shards need, so no rank ever holds
// the whole graph (docs/format-v1.md, "Sharded reads").
//
// What a rank reads, with P ranks and its 3D blocks (shard_ranges):
//   1. rows [W) of the CSR, W = its 1/P of the rows: their degrees in A + I, all-gathered into
//      one vector of 1/sqrt(degree) (8 bytes per node: the one array every rank holds whole),
//      and its rows of the three masks, to count the split sizes;
//   2. for each Â block, the CSR rows of its row range, streamed in chunks of at most
//      edge_chunk() edges and normalised with the same arithmetic as gcn_normalize; a sharded
//      block keeps only its rows part_rows, and the columns part_cols for its transpose;
//   3. its feature block (a 2-D hyperslab), and the labels and masks of its output rows.
// Under MPI every read is collective (MPI-IO): ranks issue the same sequence of reads, the
// ones with nothing to read joining with an empty selection. Together the ranks read every
// element of the file, so every element is validated by some rank.
#include <mpi.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "io/format_v1/prepared.hpp"
#include "io/format_v1/shard_reader.hpp"
#include "io/hdf5/reader.hpp"
#include "plexus/error.hpp"
#include "plexus/graph.hpp"
#include "plexus/progress.hpp"
#include "plexus/shard.hpp"
#include "plexus/sparse.hpp"
#include "src/core/shard_layout.hpp"

namespace plexus {
namespace {

using h5::CsrDatasets;
using h5::Reader;
using Slab = Reader::Slab;
using h5::ShardReader;

// Rows of a prepared Â (sorted, in-range columns, stored values) cut to columns [cols),
// re-indexed from cols.begin. Throws std::invalid_argument on unsorted or out-of-range ids.
HostCsr cut_prepared_rows(index_t num_nodes, index_t rows, const std::vector<index_t>& ip,
                          const std::vector<index_t>& idx, const float* val, Range cols) {
  HostCsr b;
  b.rows = rows;
  b.cols = cols.size();
  b.indptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (index_t i = 0; i < rows; ++i) {
    for (index_t k = ip[i]; k < ip[i + 1]; ++k) {
      const index_t c = idx[k];
      if (c < 0 || c >= num_nodes) throw std::invalid_argument("column index " + std::to_string(c) + " out of range");
      if (k > ip[i] && c <= idx[k - 1]) throw std::invalid_argument("columns not strictly increasing within a row");
      if (c >= cols.begin && c < cols.end) {
        b.indices.push_back(static_cast<col_t>(c - cols.begin));
        b.values.push_back(val[k]);
      }
    }
    b.indptr[i + 1] = static_cast<index_t>(b.indices.size());
  }
  return b;
}

void reserve(HostCsr& a, index_t rows, std::size_t entries) {
  a.indptr.reserve(static_cast<std::size_t>(rows) + 1);
  a.indices.reserve(entries);
  a.values.reserve(entries);
}

// Appends the rows of `part` below those of `block`.
void append_rows(HostCsr& block, const HostCsr& part) {
  const index_t base = block.nnz();
  for (index_t i = 1; i <= part.rows; ++i) block.indptr.push_back(base + part.indptr[i]);
  block.indices.insert(block.indices.end(), part.indices.begin(), part.indices.end());
  block.values.insert(block.values.end(), part.values.begin(), part.values.end());
  block.rows += part.rows;
}

// An order-independent fingerprint of one node's record (its original id, label and split
// bits): summed over the nodes, equal sums mean equal multisets of records (up to a 2^-64
// chance), whatever order each copy stores them in.
std::uint64_t record_hash(index_t id, std::int32_t label, unsigned splits) {
  std::uint64_t z = static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ull ^
                    (static_cast<std::uint64_t>(static_cast<std::uint32_t>(label)) << 3 | splits);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;  // splitmix64's finaliser
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A node's row of Â and its entry count, hashed (summed over the nodes: a multiset of rows).
std::uint64_t row_hash(index_t id, index_t entries) {
  std::uint64_t z = static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z ^= static_cast<std::uint64_t>(entries) * 0xD6E8FEB86659FD93ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A prepared file with two orders stores the labels and masks twice (/labels and /masks in P2
// order, /prepared/labels_p and masks_p in P order), derived by plexus prepare from one source.
// Checks, from this rank's 1/P of each, that node_id_p and node_id_p2 are permutations and
// that both copies hold the same record for every original node: a file edited after
// plexus prepare (one copy of the split changed) is refused instead of trained on. And the
// same for Â: Â1 = P·Â·P2ᵀ and Â2 = P2·Â·Pᵀ hold node v's row of Â, in their own orders, so
// each node's row holds as many entries in both (directed or not): Â2 replaced by a copy of
// Â1 (or a node order edited) moves rows onto other nodes. From the indptrs alone (8 bytes a
// node, this rank's 1/P), not the entries.
void check_prepared_copies(const Reader& r, const ShardReader& in, const h5::Header& h, const h5::PreparedHeader& ph,
                           Range own) {
  const auto n = static_cast<hsize_t>(h.num_nodes), m = static_cast<hsize_t>(own.size());
  const Slab slab{{static_cast<hsize_t>(own.begin)}, {m}};
  // sums: identity ids, P ids, P2 ids, P records, P2 records, Â1 rows, Â2 rows
  std::array<std::uint64_t, 7> sums{};
  for (index_t k = own.begin; k < own.end; ++k) sums[0] += record_hash(k, 0, 0);
  const auto copy = [&](const char* ids_name, const Reader::Dataset& labels, const Reader::Dataset* const masks[3],
                        const h5::CsrDatasets& adj, std::uint64_t& id_sum, std::uint64_t& record_sum,
                        std::uint64_t& row_sum) {
    const Reader::Dataset d = r.open_dataset(ids_name, false, "int64", {n}, "[num_nodes]");
    const std::vector<index_t> ids = r.read_ints<index_t>(d, m, slab);
    const std::vector<index_t> ip = in.indptr(adj, own);
    const std::vector<std::int32_t> y = in.labels(labels, own);
    std::vector<unsigned> bits(ids.size(), 0);
    for (unsigned k = 0; k < 3; ++k) {
      const std::vector<std::uint8_t> mk = in.mask(*masks[k], own);
      for (std::size_t i = 0; i < mk.size(); ++i) bits[i] |= static_cast<unsigned>(mk[i]) << k;
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= h.num_nodes)
        r.fail(ids_name, "node id " + std::to_string(ids[i]) + " at position " +
                             std::to_string(own.begin + static_cast<index_t>(i)) + " out of range [0, num_nodes)");
      id_sum += record_hash(ids[i], 0, 0);
      record_sum += record_hash(ids[i], y[i], bits[i]);
      row_sum += row_hash(ids[i], ip[i + 1] - ip[i]);
    }
  };
  const Reader::Dataset* p_masks[3] = {&ph.train_p, &ph.val_p, &ph.test_p};
  const Reader::Dataset* p2_masks[3] = {&h.train, &h.val, &h.test};
  copy("/prepared/node_id_p", ph.labels_p, p_masks, ph.adj[0], sums[1], sums[3], sums[5]);
  copy("/prepared/node_id_p2", h.labels, p2_masks, ph.adj[1], sums[2], sums[4], sums[6]);
  in.sum_over_ranks(sums);
  if (sums[1] != sums[0]) r.fail("/prepared/node_id_p", "not a permutation of the node ids");
  if (sums[2] != sums[0]) r.fail("/prepared/node_id_p2", "not a permutation of the node ids");
  if (sums[3] != sums[4])
    r.fail("/prepared", "labels_p and masks_p disagree with /labels and /masks (the file was changed after "
                        "plexus prepare; prepare it again from its source)");
  if (sums[5] != sums[6])
    r.fail("/prepared", "a1 and a2 disagree: some node's row holds another number of entries in each (the file was "
                        "changed after plexus prepare; prepare it again from its source)");
}

}  // namespace

namespace {
GnnShards load(const Reader& r, Communicator& comm, const ProcessGrid& grid, int layers, index_t hidden,
               bool shard_adj, LayerOrder order, ShardsFor purpose);
}

GnnShards load_shards_h5(const std::string& path, ProcessGrid& grid, int layers, index_t hidden, bool shard_adj,
                         LayerOrder order, ShardsFor purpose) {
  h5::silence_errors();
  Communicator& world = grid.world();
  Reader r(path);
  try {
    r.open(world.mpi_comm());
    return load(r, world, grid, layers, hidden, shard_adj, order, purpose);
  } catch (...) {
    // Under MPI-IO, closing the file is collective: unwinding would wait for ranks that are
    // blocked in another collective. Leave it open; the caller ends the job.
    if (world.mpi_comm() != MPI_COMM_NULL) r.abandon();
    throw;
  }
}

namespace {

GnnShards load(const Reader& r, Communicator& comm, const ProcessGrid& grid, int layers, index_t hidden,
               bool shard_adj, LayerOrder order, ShardsFor purpose) {
  h5::Header h = h5::read_header(r);
  if (h.num_nodes > std::numeric_limits<col_t>::max())
    r.fail("attribute num_nodes", "more than 2^31-1 nodes are not supported yet");
  const h5::PreparedHeader ph = h5::read_prepared_header(r, h);
  ShardReader in(r, h, comm);
  const h5::CsrDatasets graph = h5::take_graph_csr(h);

  GnnShards s;
  s.num_nodes = h.num_nodes;
  s.num_edges = h.nnz;
  s.dims = gnn_dims(h.num_features, layers, hidden, h.num_classes);
  const ShardRanges sr = shard_ranges(grid, h.num_nodes, s.dims, ph.prepared && ph.two_orders, shard_adj,
                                      transform_first_layers(order, s.dims));

  // 1. Split sizes from this rank's 1/P of the masks; for a raw graph also the degrees of
  // its 1/P of the rows, then everyone's (a prepared graph stores Â normalised).
  const Range own = block_range(h.num_nodes, in.size(), in.rank());
  {  // what this rank will read, for the progress shown while it does
    const double per_edge = h.has_values ? 8.0 : 4.0;
    const auto edges_of = [&](Range rows) {
      return h.num_nodes > 0 ? static_cast<double>(h.nnz) * static_cast<double>(rows.size()) / h.num_nodes : 0.0;
    };
    if (!ph.prepared) in.expect(per_edge * edges_of(own));
    for (int l : sr.layouts) in.expect(per_edge * edges_of(sr.adj[sr.adj_of_layer[l]].rows));
    in.expect(4.0 * static_cast<double>(sr.feat_rows.size()) * static_cast<double>(sr.feat_cols.size()));
  }
  std::vector<double> inv_sqrt_deg;
  if (!ph.prepared) {
    const std::vector<index_t> ip = in.indptr(graph, own);
    std::vector<double> part;
    part.reserve(static_cast<std::size_t>(own.size()));
    in.stream_rows(graph, own, ip, [&](index_t row0, index_t rows, const auto& lip, const auto& idx, const float* val) {
      // Bad column ids throw from merge_rows (reported by stream_rows against the indices);
      // a non-positive degree is a problem of the values.
      const MergedRows m = merge_rows(h.num_nodes, row0, rows, lip.data(), idx.data(), val);
      std::vector<double> d;
      try {
        d = inv_sqrt_degrees(m);
      } catch (const std::invalid_argument& e) {
        r.fail(h5::kValues, e.what());
      }
      part.insert(part.end(), d.begin(), d.end());
    });
    inv_sqrt_deg = in.all_gather(part, h.num_nodes);
  }
  // The split sizes (the accuracies' denominators) and the labelled training nodes, counted in
  // the copy of the labels and masks that training reads (that of the last layer's output
  // order): counting another copy gave accuracies above 1 once the copies disagreed.
  const bool p_order = sr.label_order == 1;
  const Reader::Dataset& labels = p_order ? ph.labels_p : h.labels;
  const Reader::Dataset* masks[3] = {p_order ? &ph.train_p : &h.train, p_order ? &ph.val_p : &h.val,
                                     p_order ? &ph.test_p : &h.test};
  {
    const std::vector<std::int32_t> y = in.labels(labels, own);
    std::array<index_t, 4> counts{};  // train, val, test, labelled train
    for (int k = 0; k < 3; ++k) {
      const std::vector<std::uint8_t> m = in.mask(*masks[k], own);
      counts[k] = static_cast<index_t>(std::count(m.begin(), m.end(), 1));
      if (k == 0)
        for (std::size_t i = 0; i < m.size(); ++i) counts[3] += m[i] == 1 && y[i] >= 0;
    }
    in.sum_over_ranks(counts);
    if (counts[3] == 0 && purpose == ShardsFor::Training)
      r.fail(masks[0]->name, no_labelled_training_node(counts[0]));
    s.split_sizes = {counts[0], counts[1], counts[2]};
  }
  if (ph.prepared && ph.two_orders) check_prepared_copies(r, in, h, ph, own);

  // 2. The Â blocks: stream each block's rows and keep the columns of the block; a raw graph
  // is normalised on the way. Collective reads need the same sequence on every rank, so each
  // rank reads once per layout (sr.layouts: the distinct roles, × 2 parities with two orders,
  // the same list on every rank) even where its blocks coincide (coincidence depends on the
  // coordinates); the first read fills a slot.
  s.adj.resize(sr.adj.size());
  s.adj_t.resize(sr.adj.size());
  s.transform_first = sr.transform_first;
  s.adj_blocks = sr.adj;
  s.adj_of_layer = sr.adj_of_layer;
  s.layouts = sr.layouts;
  std::vector<bool> filled(sr.adj.size(), false);
  for (int l : sr.layouts) {
    const int slot = sr.adj_of_layer[l];
    const AdjBlockRange& b = sr.adj[slot];
    const CsrDatasets& c = ph.prepared ? ph.adj[b.which] : graph;
    // rows part_rows of the block; and, sharded, columns part_cols of all its rows (the
    // transpose of this rank's rows of Âᵀ).
    HostCsr part, col_part;
    part.cols = b.cols.size();
    col_part.cols = b.part_cols.size();
    const std::vector<index_t> ip = in.indptr(c, b.rows);
    // Room for every entry the rows could bring (their stored edges and a self-loop each), so
    // the arrays never grow by copying, which would hold old and new at once; pages never
    // written are never resident.
    const auto entries = [&](Range r) {
      return static_cast<std::size_t>(ip[r.end - b.rows.begin] - ip[r.begin - b.rows.begin] + r.size());
    };
    try {
      reserve(part, b.part_rows.size(), entries(b.part_rows));
      if (b.sharded) reserve(col_part, b.rows.size(), entries(b.rows));
    } catch (const std::exception&) {  // bad_alloc, length_error
      r.fail(c.indices.name, "cannot allocate " + std::to_string(entries(b.rows)) +
                                 " entries for this rank's block (file too large or corrupt)");
    }
    in.stream_rows(c, b.rows, ip, [&](index_t row0, index_t rows, const auto& lip, const auto& idx, const float* val) {
      const HostCsr cut =
          ph.prepared ? cut_prepared_rows(h.num_nodes, rows, lip, idx, val, b.cols)
                      : normalized_block(merge_rows(h.num_nodes, row0, rows, lip.data(), idx.data(), val),
                                         inv_sqrt_deg, b.cols.begin, b.cols.end);
      const Range mine{std::max(row0, b.part_rows.begin) - row0, std::min(row0 + rows, b.part_rows.end) - row0};
      if (mine.begin == 0 && mine.end == rows)
        append_rows(part, cut);
      else if (mine.size() > 0)
        append_rows(part, extract_block(cut, mine, Range{0, cut.cols}));
      if (b.sharded)
        append_rows(col_part, extract_block(cut, Range{0, rows}, Range{b.part_cols.begin - b.cols.begin,
                                                                       b.part_cols.end - b.cols.begin}));
    });
    if (!filled[slot]) {
      s.adj_t[slot] = csr_transpose(b.sharded ? col_part : part);
      s.adj[slot] = std::move(part);
    }
    filled[slot] = true;
  }
  inv_sqrt_deg = {};

  // 3. Features, labels, masks.
  s.feat_rows = sr.feat_rows;
  s.feat_cols = sr.feat_cols;
  s.features = in.float_block(h.features, h.num_features, s.feat_rows, s.feat_cols);
  for (std::size_t k = 0; k < s.features.size(); ++k)
    if (!std::isfinite(s.features[k])) {
      const auto w = static_cast<std::size_t>(s.feat_cols.size());
      r.fail(h5::kFeatures, std::string(std::isnan(s.features[k]) ? "NaN" : "Inf") + " at [" +
                                std::to_string(s.feat_rows.begin + static_cast<index_t>(k / w)) + ", " +
                                std::to_string(s.feat_cols.begin + static_cast<index_t>(k % w)) + "]");
    }
  s.label_rows = sr.label_rows;
  s.labels = in.labels(labels, s.label_rows);
  s.train = in.mask(*masks[0], s.label_rows);
  s.val = in.mask(*masks[1], s.label_rows);
  s.test = in.mask(*masks[2], s.label_rows);
  if (ph.prepared) {  // the rows are renumbered: keep each one's original id (for predictions)
    const char* ids_name = p_order ? "/prepared/node_id_p" : "/prepared/node_id_p2";
    const auto rows = static_cast<hsize_t>(s.label_rows.size());
    const Reader::Dataset d = r.open_dataset(ids_name, false, "int64", {static_cast<hsize_t>(h.num_nodes)}, "[num_nodes]");
    s.label_ids = r.read_ints<index_t>(d, rows, Slab{{static_cast<hsize_t>(s.label_rows.begin)}, {rows}});
    for (std::size_t i = 0; i < s.label_ids.size(); ++i)
      if (s.label_ids[i] < 0 || s.label_ids[i] >= h.num_nodes)
        r.fail(ids_name, "node id " + std::to_string(s.label_ids[i]) + " at position " +
                             std::to_string(s.label_rows.begin + static_cast<index_t>(i)) + " out of range [0, num_nodes)");
  }
  // The optional node weights of the label rows (stored like /labels: in a prepared file in
  // P2 order; a P-order copy is not written, so a file whose labels are read in P order refuses).
  if (r.exists(h5::kNodeWeights)) {
    if (p_order)
      r.fail(h5::kNodeWeights, "node weights in a prepared file with two orders are not read yet: train on the "
                               "plain file (plexus train --balance orders it in memory)");
    s.loss_weights = h5::read_node_weights(r, static_cast<hsize_t>(h.num_nodes), s.label_rows);
  }
  // 3. Where each block's self-loops lie (GnnShards::adj_self_col). With two orders a row's
  // node is found among the block's columns by original id: each rank reads the ids of its
  // blocks' rows and columns (collective reads: once per layout, as above).
  // The same ids are kept per block (GnnShards::adj_row_ids): a prepared graph's blocks are
  // renumbered even with one order (its P2 order, rows and columns alike).
  s.adj_self_col.resize(sr.adj.size());
  s.adj_row_ids.resize(sr.adj.size());
  s.adj_col_ids.resize(sr.adj.size());
  for (int l : sr.layouts) {
    const int slot = sr.adj_of_layer[l];
    const AdjBlockRange& b = sr.adj[slot];
    if (!ph.prepared) {
      s.adj_self_col[slot] = block_self_columns(b.rows, b.cols);
      continue;
    }
    // Â1 (which 0): rows in P order, columns in P2 order; Â2 the reverse.
    const bool two = ph.two_orders;
    const char* row_name = two && b.which == 0 ? "/prepared/node_id_p" : "/prepared/node_id_p2";
    const char* col_name = two && b.which == 1 ? "/prepared/node_id_p" : "/prepared/node_id_p2";
    const auto ids_of = [&](const char* name, Range range) {
      const auto n = static_cast<hsize_t>(range.size());
      const Reader::Dataset d = r.open_dataset(name, false, "int64", {static_cast<hsize_t>(h.num_nodes)}, "[num_nodes]");
      std::vector<index_t> ids = r.read_ints<index_t>(d, n, Slab{{static_cast<hsize_t>(range.begin)}, {n}});
      for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= h.num_nodes)
          r.fail(name, "node id " + std::to_string(ids[i]) + " at position " +
                           std::to_string(range.begin + static_cast<index_t>(i)) + " out of range [0, num_nodes)");
      return ids;
    };
    s.adj_row_ids[slot] = ids_of(row_name, b.rows);
    s.adj_col_ids[slot] = ids_of(col_name, b.cols);
    s.adj_self_col[slot] = two ? block_self_columns(b.rows, b.cols, s.adj_row_ids[slot].data(), s.adj_col_ids[slot].data())
                               : block_self_columns(b.rows, b.cols);
  }
  in.finished();
  return s;
}

}  // namespace
}  // namespace plexus
