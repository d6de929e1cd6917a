// The file I/O of the prepares that hold a graph in slices (plexus/io.hpp): on P ranks,
// read_graph_slice_h5 reads this rank's rows of a format v1 file and write_prepared_h5(PreparedSlice)
// writes a prepared file with every rank writing its rows, both collectively (through MPI-IO on
// several ranks); in
// passes, open_graph_rows_h5 reads a file's rows a run at a time and PreparedFileWriter writes
// the same prepared file a run of rows at a time.
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

#include "io/files/safe_files.hpp"
#include "io/format_v1/prepared.hpp"
#include "io/format_v1/shard_reader.hpp"
#include "io/hdf5/collective_write.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare_distributed.hpp"
#include "plexus/prepare_passes.hpp"
#include "plexus/progress.hpp"
#include "src/comm/rank_exchange.hpp"

namespace plexus {

namespace {

using h5::Reader;
using Slab = Reader::Slab;

constexpr const char* kNodeIds = "/node_ids";
constexpr const char* kClassNames = "/class_names";

// Row boundaries splitting the rows into `parts` runs of about equal bytes: 12 per stored edge
// (index and value) and the node row's own (features, label, masks, weight, id).
std::vector<index_t> split_rows(const std::vector<index_t>& indptr, index_t num_features, int parts) {
  const auto n = static_cast<index_t>(indptr.size()) - 1;
  const double per_node = 4.0 * static_cast<double>(num_features) + 20.0;
  const auto cost = [&](index_t u) { return 12.0 * static_cast<double>(indptr[u]) + per_node * static_cast<double>(u); };
  const double total = cost(n);
  std::vector<index_t> starts(static_cast<std::size_t>(parts) + 1, n);
  starts[0] = 0;
  index_t u = 0;
  for (int k = 1; k < parts; ++k) {
    const double target = total * k / parts;
    while (u < n && cost(u) < target) ++u;
    starts[static_cast<std::size_t>(k)] = u;
  }
  return starts;
}

GraphSlice slice_of(const Reader& r, const h5::Header& h) {
  if (h.num_nodes > std::numeric_limits<col_t>::max())
    r.fail("attribute num_nodes", "more than 2^31-1 nodes are not supported yet");
  GraphSlice s;
  s.num_edge_features = h.num_edge_features;
  s.num_nodes = h.num_nodes;
  s.num_features = h.num_features;
  s.num_classes = h.num_classes;
  s.directed = h.directed;
  s.weighted = h.has_values;
  return s;
}

// The CSR of rows [s.rows) (s.indptr holding their global offsets, made local here), with its
// entries' edge feature rows where the file has them.
void read_edges(GraphSlice& s, const Reader& r, const h5::Header& h, const h5::CsrDatasets& graph, h5::ShardReader& in) {
  const index_t e0 = s.indptr.front();
  if (h.num_edge_features > 0) {
    const index_t d = h.num_edge_features;
    s.edge_features = in.float_block(h.edge_features, d, Range{e0, s.indptr.back()}, Range{0, d});
    for (std::size_t k = 0; k < s.edge_features.size(); ++k)
      if (!std::isfinite(s.edge_features[k]))
        r.fail(h5::kEdgeFeatures, "non-finite value at edge " + std::to_string(e0 + static_cast<index_t>(k) / d));
  }
  s.indices.reserve(static_cast<std::size_t>(s.indptr.back() - e0));
  if (h.has_values) s.values.reserve(static_cast<std::size_t>(s.indptr.back() - e0));
  in.stream_rows(graph, s.rows, s.indptr, [&](index_t, index_t, const auto&, const auto& idx, const float* val) {
    for (const index_t c : idx)
      if (c < 0 || c >= h.num_nodes) throw std::invalid_argument("column index " + std::to_string(c) + " out of range [0, num_nodes)");
    s.indices.insert(s.indices.end(), idx.begin(), idx.end());
    if (val != nullptr) s.values.insert(s.values.end(), val, val + idx.size());
  });
  for (index_t& x : s.indptr) x -= e0;
}

// The per-node data of rows [s.rows).
void read_nodes(GraphSlice& s, const Reader& r, const h5::Header& h, h5::ShardReader& in) {
  s.features = in.float_block(h.features, h.num_features, s.rows, Range{0, h.num_features});
  for (std::size_t k = 0; k < s.features.size(); ++k)
    if (!std::isfinite(s.features[k]))
      r.fail(h5::kFeatures, "non-finite value at node " +
                                std::to_string(s.rows.begin + static_cast<index_t>(k) / std::max<index_t>(1, h.num_features)));
  s.labels = in.labels(h.labels, s.rows);
  s.train_mask = in.mask(h.train, s.rows);
  s.val_mask = in.mask(h.val, s.rows);
  s.test_mask = in.mask(h.test, s.rows);
  const auto n = static_cast<hsize_t>(h.num_nodes);
  if (r.exists(h5::kNodeWeights)) s.node_weights = h5::read_node_weights(r, n, s.rows);
  if (r.exists(kNodeIds)) {
    const Reader::Dataset ids = r.open_dataset(kNodeIds, false, "int64", {n}, "[num_nodes]");
    const auto count = static_cast<hsize_t>(s.rows.size());
    s.node_ids = r.read_ints<std::int64_t>(ids, count, Slab{{static_cast<hsize_t>(s.rows.begin)}, {count}});
  }
}

GraphSlice read_slice(const Reader& r, Communicator& comm) {
  h5::Header h = h5::read_header(r);
  GraphSlice s = slice_of(r, h);
  h5::ShardReader in(r, h, comm);
  const h5::CsrDatasets graph = h5::take_graph_csr(h);
  // The whole indptr (8 bytes per node, like the orders every rank holds), to split the rows.
  {
    const std::vector<index_t> ip = in.indptr(graph, Range{0, h.num_nodes});
    const std::vector<index_t> starts = split_rows(ip, h.num_features, in.size());
    s.rows = Range{starts[static_cast<std::size_t>(in.rank())], starts[static_cast<std::size_t>(in.rank()) + 1]};
    s.indptr.assign(ip.begin() + s.rows.begin, ip.begin() + s.rows.end + 1);
  }
  in.expect(static_cast<double>(s.indptr.back() - s.indptr.front()) * ((h.has_values ? 8.0 : 4.0) + 4.0 * h.num_edge_features) +
            4.0 * static_cast<double>(s.rows.size() * h.num_features));
  read_edges(s, r, h, graph, in);
  read_nodes(s, r, h, in);
  in.finished();
  return s;
}

// A format v1 file's rows a run at a time, serially (the prepare in passes' input). Each call
// opens the file anew: a pass holds nothing of the file between its reads.
class H5RowSource final : public GraphRowSource {
 public:
  // The file is opened (and checked in a child process, io/hdf5/probe.hpp) once, here, and
  // kept open for every pass: a pass costs its rows, not an open and a check of the file.
  explicit H5RowSource(std::string path) : path_(std::move(path)) {
    h5::silence_errors();
    std::vector<std::string> names = h5::read_class_names_h5(path_);
    r_ = std::make_unique<Reader>(path_);
    Reader& r = *r_;
    r.open();
    const h5::Header h = h5::read_header(r);
    head_ = slice_of(r, h);
    head_.class_names = std::move(names);
    head_.links = read_link_split_h5(path_);
    weights_ = r.exists(h5::kNodeWeights);
    ids_ = r.exists(kNodeIds);
  }
  GraphSlice header() const override { return head_; }
  bool has_node_weights() const override { return weights_; }
  bool has_node_ids() const override { return ids_; }

  std::vector<index_t> split(int parts) const override {
    const Quiet quiet;
    const Reader& r = *r_;
    h5::Header h = h5::read_header(r);
    h5::ShardReader in(r, h, *one_);
    const h5::CsrDatasets graph = h5::take_graph_csr(h);
    return split_rows(in.indptr(graph, Range{0, h.num_nodes}), h.num_features, parts);
  }

  GraphSlice read(Range rows, bool node_data) const override {
    const Quiet quiet;
    const Reader& r = *r_;
    h5::Header h = h5::read_header(r);
    GraphSlice s = slice_of(r, h);
    s.rows = rows;
    h5::ShardReader in(r, h, *one_);
    if (node_data) {
      read_nodes(s, r, h, in);
    } else {
      const h5::CsrDatasets graph = h5::take_graph_csr(h);
      s.indptr = in.indptr(graph, rows);
      read_edges(s, r, h, graph, in);
    }
    return s;
  }

 private:
  // The passes report their own progress: the reads inside one report none.
  struct Quiet {
    ProgressReporter saved = set_progress_reporter({});
    ~Quiet() { set_progress_reporter(std::move(saved)); }
  };
  std::string path_;
  std::unique_ptr<Reader> r_;  // open for the source's life
  GraphSlice head_;
  bool weights_ = false, ids_ = false;
  std::unique_ptr<Communicator> one_ = make_self_communicator();  // the reads are this process's alone
};

}  // namespace

GraphSlice read_graph_slice_h5(const std::string& path, Communicator& comm) {
  h5::silence_errors();
  // The class names first, serially (variable-length strings; a few per graph).
  std::vector<std::string> class_names = h5::read_class_names_h5(path);
  Reader r(path);
  try {
    r.open(comm.mpi_comm());
    GraphSlice s = read_slice(r, comm);
    s.class_names = std::move(class_names);
    return s;
  } catch (...) {
    if (comm.mpi_comm() != MPI_COMM_NULL) r.abandon();  // closing is collective: the caller ends the job (as load_shards_h5)
    throw;
  }
}

namespace {

// Rows [rows) of an n × n CSR as datasets of `group`: indptr (global offsets: each rank its
// rows', the last rank also the end), indices [begin, begin + count) of `total`, and values.
template <class Idx>
void write_csr_rows(h5::Writer& w, const std::string& group, hid_t index_type, index_t n, Range rows, bool last,
                    const index_t* indptr, const Idx* indices, const float* values, bool with_values, index_t total,
                    bool metadata = true) {
  const auto r0 = static_cast<hsize_t>(rows.begin), count_rows = static_cast<hsize_t>(rows.size());
  if (metadata) w.group(group.c_str());
  w.block_dataset<index_t, 1>((group + "/indptr").c_str(), H5T_STD_I64LE, {static_cast<hsize_t>(n) + 1}, {r0},
                              {count_rows + (last ? 1 : 0)}, indptr, true);
  const auto begin = static_cast<hsize_t>(indptr[0]), count = static_cast<hsize_t>(indptr[rows.size()] - indptr[0]);
  w.block_dataset<Idx, 1>((group + "/indices").c_str(), index_type, {static_cast<hsize_t>(total)}, {begin}, {count},
                          indices, true);
  if (with_values)
    w.block_dataset<float, 1>((group + "/values").c_str(), H5T_IEEE_F32LE, {static_cast<hsize_t>(total)}, {begin},
                              {count}, values, true);
}

// The format v1 part of a file, this rank's rows of it: the root attributes but `format` (a
// string: the serial tail's), /graph, /features, /labels, /masks, /node_weights and /node_ids.
struct V1Rows {
  index_t num_nodes = 0, num_features = 0;
  std::int32_t num_classes = 0;
  bool directed = false, weighted = false;
  Range rows;
  const index_t* indptr = nullptr;  // global offsets
  const index_t* indices = nullptr;
  const float* values = nullptr;
  index_t edges = 0;  // of the whole graph
  index_t edge_feature_width = 0;         // 0: no /graph/edge_features
  const float* edge_features = nullptr;  // this rank's entries' rows
  const float* features = nullptr;
  const std::int32_t* labels = nullptr;
  const std::uint8_t *train = nullptr, *val = nullptr, *test = nullptr;
  const float* node_weights = nullptr;    // null: none in the file
  const std::int64_t* node_ids = nullptr;  // null: none in the file
  bool features_bf16 = false;              // /features stored in bfloat16
};

// `metadata`: also the attributes and groups (every call of a collective write; the first of a
// write in pieces).
void write_v1_rows(h5::Writer& w, const V1Rows& v, bool last, bool metadata = true) {
  using namespace h5;
  const auto n = static_cast<hsize_t>(v.num_nodes), f = static_cast<hsize_t>(v.num_features);
  const auto r0 = static_cast<hsize_t>(v.rows.begin), rows = static_cast<hsize_t>(v.rows.size());
  if (metadata) {
    w.scalar_attr<std::int32_t>("format_version", H5T_STD_I32LE, kFormatVersion);
    w.scalar_attr<std::int64_t>("num_nodes", H5T_STD_I64LE, v.num_nodes);
    w.scalar_attr<std::int64_t>("num_features", H5T_STD_I64LE, v.num_features);
    w.scalar_attr<std::int32_t>("num_classes", H5T_STD_I32LE, v.num_classes);
    w.scalar_attr<std::uint8_t>("directed", H5T_STD_U8LE, v.directed ? 1 : 0);
  }
  write_csr_rows(w, "/graph", H5T_STD_I64LE, v.num_nodes, v.rows, last, v.indptr, v.indices, v.values, v.weighted,
                 v.edges, metadata);
  if (v.edge_feature_width > 0) {  // the entries' rows, where the entries are
    const auto d = static_cast<hsize_t>(v.edge_feature_width);
    const auto e0 = static_cast<hsize_t>(v.indptr[0]), count = static_cast<hsize_t>(v.indptr[v.rows.size()] - v.indptr[0]);
    w.block_dataset<float, 2>(kEdgeFeatures, H5T_IEEE_F32LE, {static_cast<hsize_t>(v.edges), d}, {e0, 0}, {count, d},
                              v.edge_features, true);
  }
  if (v.features_bf16) {  // rounded to nearest even, as the one-process writer does
    std::vector<bf16> rounded(static_cast<std::size_t>(rows * f));
    for (std::size_t k = 0; k < rounded.size(); ++k) rounded[k] = float_to_bf16(v.features[k]);
    w.block_dataset<bf16, 2>(kFeatures, bf16_type(), {n, f}, {r0, 0}, {rows, f}, rounded.data(), true);
  } else {
    w.block_dataset<float, 2>(kFeatures, H5T_IEEE_F32LE, {n, f}, {r0, 0}, {rows, f}, v.features, true);
  }
  w.block_dataset<std::int32_t, 1>(kLabels, H5T_STD_I32LE, {n}, {r0}, {rows}, v.labels, true);
  if (metadata) w.group("/masks");
  w.block_dataset<std::uint8_t, 1>(kTrain, H5T_STD_U8LE, {n}, {r0}, {rows}, v.train, true);
  w.block_dataset<std::uint8_t, 1>(kVal, H5T_STD_U8LE, {n}, {r0}, {rows}, v.val, true);
  w.block_dataset<std::uint8_t, 1>(kTest, H5T_STD_U8LE, {n}, {r0}, {rows}, v.test, true);
  if (v.node_weights != nullptr)
    w.block_dataset<float, 1>(kNodeWeights, H5T_IEEE_F32LE, {n}, {r0}, {rows}, v.node_weights, true);
}

void write_node_ids(h5::Writer& w, const V1Rows& v) {
  const auto n = static_cast<hsize_t>(v.num_nodes);
  if (v.node_ids != nullptr)
    w.block_dataset<std::int64_t, 1>(kNodeIds, H5T_STD_I64LE, {n}, {static_cast<hsize_t>(v.rows.begin)},
                                     {static_cast<hsize_t>(v.rows.size())}, v.node_ids, true);
}

// Some ranks hold no rows: a null pointer would read as "no such dataset" there.
template <class T>
const T* data_or_empty(const std::vector<T>& v, bool present) {
  static const T none{};
  return !present ? nullptr : v.empty() ? &none : v.data();
}

// A plain graph's rows (a GraphSlice) as V1Rows: `indptr` holds their global offsets, `edges`
// the whole graph's entries; node weights and ids written when the graph has them.
V1Rows v1_rows_of(const GraphSlice& g, const std::vector<index_t>& indptr, index_t edges, bool has_weights,
                  bool has_ids) {
  V1Rows v;
  v.num_nodes = g.num_nodes;
  v.num_features = g.num_features;
  v.num_classes = g.num_classes;
  v.directed = g.directed;
  v.weighted = g.weighted;
  v.rows = g.rows;
  v.indptr = indptr.data();
  v.indices = g.indices.data();
  v.values = g.values.data();
  v.edges = edges;
  v.edge_feature_width = g.num_edge_features;
  v.edge_features = data_or_empty(g.edge_features, g.num_edge_features > 0);
  v.features = g.features.data();
  v.labels = g.labels.data();
  v.train = g.train_mask.data();
  v.val = g.val_mask.data();
  v.test = g.test_mask.data();
  v.node_weights = data_or_empty(g.node_weights, has_weights);
  v.node_ids = data_or_empty(g.node_ids, has_ids);
  return v;
}

}  // namespace

namespace {

// What one call of write_prepared_rows writes beside its rows. A collective write makes one call
// per rank: every rank the metadata (collective under MPI-IO) and the block counts' datasets,
// rank 0 their values. A write in pieces makes one call per run of rows: the first the
// metadata, the last the block counts.
struct RowsCall {
  bool metadata = true;         // attributes, groups, hard links
  bool last_rows = false;       // these rows end the graph: they write the indptrs' final entries
  bool counts = true;           // the block counts' datasets are made in this call
  bool counts_values = false;   // ... and this call writes their values
};

// Rows [p.rows) of every dataset of a prepared file but the variable-length strings.
void write_prepared_rows(h5::Writer& w, const PreparedSlice& p, const RowsCall& call) {
  using namespace h5;
  const auto n = static_cast<hsize_t>(p.num_nodes);
  const auto r0 = static_cast<hsize_t>(p.rows.begin), rows = static_cast<hsize_t>(p.rows.size());
  const bool last = call.last_rows;
  V1Rows v;
  v.num_nodes = p.num_nodes;
  v.num_features = p.num_features;
  v.num_classes = p.num_classes;
  v.directed = p.directed;
  v.weighted = p.weighted;
  v.rows = p.rows;
  v.indptr = p.graph.indptr.data();
  v.indices = p.graph.indices.data();
  v.values = p.graph.values.data();
  v.edges = p.graph.total;
  v.edge_feature_width = p.num_edge_features;
  v.edge_features = data_or_empty(p.edge_features, p.num_edge_features > 0);
  v.features = p.features.data();
  v.labels = p.labels.data();
  v.train = p.train_mask.data();
  v.val = p.val_mask.data();
  v.test = p.test_mask.data();
  v.node_weights = data_or_empty(p.node_weights, p.has_node_weights);
  v.node_ids = data_or_empty(p.node_ids, p.has_node_ids);
  v.features_bf16 = p.features_bf16;
  write_v1_rows(w, v, last, call.metadata);
  // Per-node datasets: these rows.
  const auto node_rows = [&](const char* name, hid_t type, const auto& d) {
    w.block_dataset<std::remove_cvref_t<decltype(d[0])>, 1>(name, type, {n}, {r0}, {rows}, d.data(), true);
  };
  const auto csr = [&](const CsrSlice<col_t>& a, const std::string& group) {
    write_csr_rows(w, group, H5T_STD_I32LE, p.num_nodes, p.rows, last, a.indptr.data(), a.indices.data(),
                   a.values.data(), true, a.total, call.metadata);
  };
  if (call.metadata) {
    w.group(kPrepared);
    w.scalar_attr<std::uint64_t>("seed", H5T_STD_U64LE, p.seed, kPrepared);
    w.scalar_attr<std::int32_t>("metis_parts", H5T_STD_I32LE, p.metis_parts, kPrepared);
    w.scalar_attr<std::uint8_t>("two_orders", H5T_STD_U8LE, p.two_orders ? 1 : 0, kPrepared);
  }
  csr(p.a1, "/prepared/a1");
  node_rows("/prepared/node_id_p2", H5T_STD_I64LE, p.node_id_p2);
  if (p.two_orders) {
    csr(p.a2, "/prepared/a2");
    node_rows("/prepared/node_id_p", H5T_STD_I64LE, p.node_id_p);
    node_rows("/prepared/labels_p", H5T_STD_I32LE, p.labels_p);
    if (call.metadata) w.group("/prepared/masks_p");
    node_rows("/prepared/masks_p/train", H5T_STD_U8LE, p.train_p);
    node_rows("/prepared/masks_p/val", H5T_STD_U8LE, p.val_p);
    node_rows("/prepared/masks_p/test", H5T_STD_U8LE, p.test_p);
  } else if (call.metadata) {  // P == P2: one copy under both names
    w.hard_link("/prepared/a1", "/prepared/a2");
    w.hard_link("/prepared/node_id_p2", "/prepared/node_id_p");
    w.hard_link(kLabels, "/prepared/labels_p");
    w.hard_link("/masks", "/prepared/masks_p");
  }
  if (call.counts) {
    const AdjBlockCounts& b = p.block_counts;
    const auto cuts = static_cast<hsize_t>(b.cuts.size()), tiles = cuts - 1;
    const bool values = call.counts_values;
    w.group("/prepared/block_counts");
    w.block_dataset<index_t, 1>("/prepared/block_counts/cuts", H5T_STD_I64LE, {cuts}, {0}, {cuts}, b.cuts.data(), values);
    w.block_dataset<index_t, 2>("/prepared/block_counts/a1", H5T_STD_I64LE, {tiles, tiles}, {0, 0}, {tiles, tiles},
                                b.tiles[0].data(), values);
    if (p.two_orders)
      w.block_dataset<index_t, 2>("/prepared/block_counts/a2", H5T_STD_I64LE, {tiles, tiles}, {0, 0}, {tiles, tiles},
                                  b.tiles[1].data(), values);
    else
      w.hard_link("/prepared/block_counts/a1", "/prepared/block_counts/a2");
    const auto slots = static_cast<hsize_t>(kHeldSlots);
    w.block_dataset<index_t, 2>("/prepared/block_counts/held_a1", H5T_STD_I64LE, {tiles, slots}, {0, 0}, {tiles, slots},
                                b.held[0].data(), values);
    if (p.two_orders)
      w.block_dataset<index_t, 2>("/prepared/block_counts/held_a2", H5T_STD_I64LE, {tiles, slots}, {0, 0},
                                  {tiles, slots}, b.held[1].data(), values);
    else
      w.hard_link("/prepared/block_counts/held_a1", "/prepared/block_counts/held_a2");
  }
  write_node_ids(w, v);
}

// The variable-length strings (serially: MPI-IO cannot write them), stored as one process
// stores them.
void write_prepared_names(h5::Writer& w, const PreparedSlice& p) {
  w.string_attr("format", h5::kFormatName);
  w.string_attr("normalization", "gcn", h5::kPrepared);
  w.string_attr("balance", balance_name(p.balance), h5::kPrepared);
  if (!p.class_names.empty()) w.string_dataset(kClassNames, p.class_names);
  if (p.links) h5::write_link_split(w, *p.links);  // (whole on every rank: rank 0 writes it, serially)
}

void check_class_names(const PreparedSlice& p, const std::string& path) {
  if (!p.class_names.empty() && p.class_names.size() != static_cast<std::size_t>(p.num_classes))
    throw InputError(path, "cannot write: " + std::to_string(p.class_names.size()) + " class names for " +
                               std::to_string(p.num_classes) + " classes");
}

}  // namespace

std::unique_ptr<GraphRowSource> open_graph_rows_h5(const std::string& path) {
  return std::make_unique<H5RowSource>(path);
}

void write_prepared_h5(const PreparedSlice& p, const std::string& path, Communicator& comm) {
  check_class_names(p, path);
  RowsCall call;
  call.last_rows = comm.rank() == comm.size() - 1;
  call.counts_values = comm.rank() == 0;
  // Rank 0 adds the strings once the collective file is closed, before it is committed.
  h5::write_collectively(
      path, comm, [&](h5::Writer& w) { write_prepared_rows(w, p, call); },
      [&](h5::Writer& w) { write_prepared_names(w, p); });
}

struct PreparedFileWriter::State {
  std::string path;
  io::AtomicFile file;
  h5::Writer w;
  index_t next_row = 0;
  bool started = false, finished = false;
  explicit State(const std::string& out)
      : path(out), file(io::check_output(out, io::OutputNeeds::Seekable)), w(out) {}
};

PreparedFileWriter::PreparedFileWriter(const std::string& path) {
  h5::silence_errors();
  s_ = std::make_unique<State>(path);
  s_->w.create(s_->file.temp_path());
  s_->w.write_in_pieces();
}

PreparedFileWriter::~PreparedFileWriter() = default;  // unfinished: the temporary file is removed

void PreparedFileWriter::write(const PreparedSlice& piece) {
  if (s_->finished || piece.rows.begin != s_->next_row || piece.rows.end > piece.num_nodes)
    throw std::logic_error("PreparedFileWriter: pieces must tile the rows in order");
  const bool first = !s_->started, last = piece.rows.end == piece.num_nodes;
  if (first) check_class_names(piece, s_->path);
  RowsCall call;
  call.metadata = first;
  call.last_rows = last;
  call.counts = last;
  call.counts_values = last;
  write_prepared_rows(s_->w, piece, call);
  if (first) write_prepared_names(s_->w, piece);
  s_->next_row = piece.rows.end;
  s_->started = true;
  if (last) s_->finished = true;
}

void PreparedFileWriter::finish() {
  if (!s_->finished) throw std::logic_error("PreparedFileWriter: finished before its last rows");
  s_->w.close();
  s_->file.commit();
}

void write_graph_h5(const GraphSlice& g, const std::string& path, Communicator& comm) {
  const comm::Ranks ranks(comm);
  // The rows' offsets in the whole CSR, and the flags every rank must agree on.
  const auto local = static_cast<index_t>(g.indices.size());
  const index_t base = ranks.exscan(local), edges = ranks.sum(local);
  const bool has_weights = ranks.max(g.node_weights.empty() ? 0 : 1) == 1;
  const bool has_ids = ranks.max(g.node_ids.empty() ? 0 : 1) == 1;
  std::vector<index_t> indptr(g.indptr.size());
  for (std::size_t i = 0; i < indptr.size(); ++i) indptr[i] = base + g.indptr[i];
  const V1Rows v = v1_rows_of(g, indptr, edges, has_weights, has_ids);
  h5::write_collectively(
      path, comm,
      [&](h5::Writer& w) {
        write_v1_rows(w, v, ranks.rank == ranks.size - 1);
        write_node_ids(w, v);
      },
      [&](h5::Writer& w) {
        w.string_attr("format", h5::kFormatName);
        if (!g.class_names.empty()) w.string_dataset(kClassNames, g.class_names);
      });
}

struct GraphFileWriter::State {
  std::string path;
  io::AtomicFile file;
  h5::Writer w;
  index_t next_row = 0;
  bool started = false, finished = false, has_ids = false;
  std::vector<std::string> class_names;
  explicit State(const std::string& out) : path(out), file(io::check_output(out, io::OutputNeeds::Seekable)), w(out) {}
};

GraphFileWriter::GraphFileWriter(const std::string& path, bool node_ids) {
  h5::silence_errors();
  s_ = std::make_unique<State>(path);
  s_->has_ids = node_ids;
  s_->w.create(s_->file.temp_path());
  s_->w.write_in_pieces();
}

GraphFileWriter::~GraphFileWriter() = default;  // unfinished: the temporary file is removed

void GraphFileWriter::write(const GraphSlice& g, index_t edges_before, index_t edges_total) {
  if (s_->finished || g.rows.begin != s_->next_row || g.rows.end > g.num_nodes)
    throw std::logic_error("GraphFileWriter: pieces must tile the rows in order");
  const bool first = !s_->started, last = g.rows.end == g.num_nodes;
  if (s_->has_ids && static_cast<index_t>(g.node_ids.size()) != g.rows.size())
    throw std::logic_error("GraphFileWriter: every run needs its rows' node ids");
  std::vector<index_t> indptr(g.indptr.size());
  for (std::size_t i = 0; i < indptr.size(); ++i) indptr[i] = edges_before + g.indptr[i];
  const V1Rows v = v1_rows_of(g, indptr, edges_total, !g.node_weights.empty(), s_->has_ids);
  write_v1_rows(s_->w, v, last, first);
  write_node_ids(s_->w, v);
  if (first) {
    s_->w.string_attr("format", h5::kFormatName);
    if (!g.class_names.empty()) s_->w.string_dataset(kClassNames, g.class_names);
  }
  s_->started = true;
  s_->next_row = g.rows.end;
  if (last) s_->finished = true;
}

void GraphFileWriter::finish() {
  if (!s_->finished) throw std::logic_error("GraphFileWriter: finished before its last rows");
  s_->w.close();
  s_->file.commit();
}

}  // namespace plexus
