// The distributed prepare's file I/O (plexus/io.hpp): read_graph_slice_h5 reads this rank's rows
// of a format v1 file, write_prepared_h5(PreparedSlice) writes a prepared file with every rank
// writing its rows, both collectively through MPI-IO.
#include <mpi.h>

#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

#include "io/format_v1/prepared.hpp"
#include "io/format_v1/shard_reader.hpp"
#include "io/hdf5/collective_write.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare_distributed.hpp"

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

GraphSlice read_slice(const Reader& r, MPI_Comm comm) {
  h5::Header h = h5::read_header(r);
  if (h.num_nodes > std::numeric_limits<col_t>::max())
    r.fail("attribute num_nodes", "more than 2^31-1 nodes are not supported yet");
  h5::ShardReader in(r, h, comm);
  h5::CsrDatasets graph;
  graph.indptr = std::move(h.indptr);
  graph.indices = std::move(h.indices);
  graph.values = std::move(h.values);
  graph.has_values = h.has_values;
  graph.nnz = h.nnz;

  GraphSlice s;
  s.num_nodes = h.num_nodes;
  s.num_features = h.num_features;
  s.num_classes = h.num_classes;
  s.directed = h.directed;
  s.weighted = h.has_values;
  // The whole indptr (8 bytes per node, like the orders every rank holds), to split the rows.
  {
    const std::vector<index_t> ip = in.indptr(graph, Range{0, h.num_nodes});
    const std::vector<index_t> starts = split_rows(ip, h.num_features, in.size());
    s.rows = Range{starts[static_cast<std::size_t>(in.rank())], starts[static_cast<std::size_t>(in.rank()) + 1]};
    s.indptr.assign(ip.begin() + s.rows.begin, ip.begin() + s.rows.end + 1);
  }
  const index_t e0 = s.indptr.front();
  in.expect(static_cast<double>(s.indptr.back() - e0) * (h.has_values ? 8.0 : 4.0) +
            4.0 * static_cast<double>(s.rows.size() * h.num_features));
  s.indices.reserve(static_cast<std::size_t>(s.indptr.back() - e0));
  if (h.has_values) s.values.reserve(static_cast<std::size_t>(s.indptr.back() - e0));
  in.stream_rows(graph, s.rows, s.indptr, [&](index_t, index_t, const auto&, const auto& idx, const float* val) {
    for (const index_t c : idx)
      if (c < 0 || c >= h.num_nodes) throw std::invalid_argument("column index " + std::to_string(c) + " out of range [0, num_nodes)");
    s.indices.insert(s.indices.end(), idx.begin(), idx.end());
    if (val != nullptr) s.values.insert(s.values.end(), val, val + idx.size());
  });
  for (index_t& x : s.indptr) x -= e0;
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
  in.finished();
  return s;
}

}  // namespace

GraphSlice read_graph_slice_h5(const std::string& path, MPI_Comm comm) {
  h5::silence_errors();
  // The class names first, serially (variable-length strings; a few per graph).
  std::vector<std::string> class_names = h5::read_class_names_h5(path);
  Reader r(path);
  try {
    r.open(comm);
    GraphSlice s = read_slice(r, comm);
    s.class_names = std::move(class_names);
    return s;
  } catch (...) {
    r.abandon();  // closing is collective: the caller ends the job (as load_shards_h5)
    throw;
  }
}

void write_prepared_h5(const PreparedSlice& p, const std::string& path, MPI_Comm comm) {
  using namespace h5;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const auto n = static_cast<hsize_t>(p.num_nodes);
  const auto f = static_cast<hsize_t>(p.num_features);
  const auto r0 = static_cast<hsize_t>(p.rows.begin), rows = static_cast<hsize_t>(p.rows.size());
  const bool last = rank == size - 1;
  if (!p.class_names.empty() && p.class_names.size() != static_cast<std::size_t>(p.num_classes))
    throw InputError(path, "cannot write: " + std::to_string(p.class_names.size()) + " class names for " +
                               std::to_string(p.num_classes) + " classes");

  const auto write = [&](Writer& w) {
    w.scalar_attr<std::int32_t>("format_version", H5T_STD_I32LE, kFormatVersion);
    w.scalar_attr<std::int64_t>("num_nodes", H5T_STD_I64LE, p.num_nodes);
    w.scalar_attr<std::int64_t>("num_features", H5T_STD_I64LE, p.num_features);
    w.scalar_attr<std::int32_t>("num_classes", H5T_STD_I32LE, p.num_classes);
    w.scalar_attr<std::uint8_t>("directed", H5T_STD_U8LE, p.directed ? 1 : 0);
    // Per-node datasets: this rank's rows.
    const auto node_rows = [&](const char* name, hid_t type, const auto& v) {
      w.block_dataset<std::remove_cvref_t<decltype(v[0])>, 1>(name, type, {n}, {r0}, {rows}, v.data(), true);
    };
    // A CSR: indptr (each rank its rows' offsets, the last rank also the end), indices, values.
    const auto csr = [&](const auto& a, const std::string& group, hid_t index_type, bool values) {
      w.group(group.c_str());
      w.block_dataset<index_t, 1>((group + "/indptr").c_str(), H5T_STD_I64LE, {n + 1}, {r0}, {rows + (last ? 1 : 0)},
                                  a.indptr.data(), true);
      const auto total = static_cast<hsize_t>(a.total), begin = static_cast<hsize_t>(a.begin()),
                 count = static_cast<hsize_t>(a.size());
      w.block_dataset<std::remove_cvref_t<decltype(a.indices[0])>, 1>((group + "/indices").c_str(), index_type, {total},
                                                                      {begin}, {count}, a.indices.data(), true);
      if (values)
        w.block_dataset<float, 1>((group + "/values").c_str(), H5T_IEEE_F32LE, {total}, {begin}, {count},
                                  a.values.data(), true);
    };
    csr(p.graph, "/graph", H5T_STD_I64LE, p.weighted);
    w.block_dataset<float, 2>(kFeatures, H5T_IEEE_F32LE, {n, f}, {r0, 0}, {rows, f}, p.features.data(), true);
    node_rows(kLabels, H5T_STD_I32LE, p.labels);
    w.group("/masks");
    node_rows(kTrain, H5T_STD_U8LE, p.train_mask);
    node_rows(kVal, H5T_STD_U8LE, p.val_mask);
    node_rows(kTest, H5T_STD_U8LE, p.test_mask);
    if (p.has_node_weights) node_rows(kNodeWeights, H5T_IEEE_F32LE, p.node_weights);

    w.group(kPrepared);
    w.scalar_attr<std::uint64_t>("seed", H5T_STD_U64LE, p.seed, kPrepared);
    w.scalar_attr<std::int32_t>("metis_parts", H5T_STD_I32LE, p.metis_parts, kPrepared);
    w.scalar_attr<std::uint8_t>("two_orders", H5T_STD_U8LE, p.two_orders ? 1 : 0, kPrepared);
    csr(p.a1, "/prepared/a1", H5T_STD_I32LE, true);
    node_rows("/prepared/node_id_p2", H5T_STD_I64LE, p.node_id_p2);
    if (p.two_orders) {
      csr(p.a2, "/prepared/a2", H5T_STD_I32LE, true);
      node_rows("/prepared/node_id_p", H5T_STD_I64LE, p.node_id_p);
      node_rows("/prepared/labels_p", H5T_STD_I32LE, p.labels_p);
      w.group("/prepared/masks_p");
      node_rows("/prepared/masks_p/train", H5T_STD_U8LE, p.train_p);
      node_rows("/prepared/masks_p/val", H5T_STD_U8LE, p.val_p);
      node_rows("/prepared/masks_p/test", H5T_STD_U8LE, p.test_p);
    } else {  // P == P2: one copy under both names
      w.hard_link("/prepared/a1", "/prepared/a2");
      w.hard_link("/prepared/node_id_p2", "/prepared/node_id_p");
      w.hard_link(kLabels, "/prepared/labels_p");
      w.hard_link("/masks", "/prepared/masks_p");
    }
    const AdjBlockCounts& b = p.block_counts;
    const auto cuts = static_cast<hsize_t>(b.cuts.size()), tiles = cuts - 1;
    w.group("/prepared/block_counts");
    w.block_dataset<index_t, 1>("/prepared/block_counts/cuts", H5T_STD_I64LE, {cuts}, {0}, {cuts}, b.cuts.data(), rank == 0);
    w.block_dataset<index_t, 2>("/prepared/block_counts/a1", H5T_STD_I64LE, {tiles, tiles}, {0, 0}, {tiles, tiles},
                                b.tiles[0].data(), rank == 0);
    if (p.two_orders)
      w.block_dataset<index_t, 2>("/prepared/block_counts/a2", H5T_STD_I64LE, {tiles, tiles}, {0, 0}, {tiles, tiles},
                                  b.tiles[1].data(), rank == 0);
    else
      w.hard_link("/prepared/block_counts/a1", "/prepared/block_counts/a2");
    if (p.has_node_ids) node_rows(kNodeIds, H5T_STD_I64LE, p.node_ids);
  };
  // Variable-length strings cannot be written through MPI-IO: rank 0 adds them (the string
  // attributes too, so they are stored as one process stores them) once the collective file is
  // closed, before it is committed.
  const auto names = [&](Writer& w) {
    w.string_attr("format", kFormatName);
    w.string_attr("normalization", "gcn", kPrepared);
    w.string_attr("balance", balance_name(p.balance), kPrepared);
    if (!p.class_names.empty()) w.string_dataset(kClassNames, p.class_names);
  };
  write_collectively(path, comm, write, names);
}

}  // namespace plexus
