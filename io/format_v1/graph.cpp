// Format v1 HDF5 graphs (docs/format-v1.md): read_graph_h5 and write_graph_h5, with the
// HDF5 C API and the default (serial, sec2) file driver.
//
// Reading checks existence, dtype class and shape of every attribute and dataset against the
// root attributes *before* allocating anything, then reads and hands the result to
// plexus::validate for the semantic invariants. Every problem is an InputError(path,
// "<object>: <problem>") where <object> is a dataset path ("/graph/indptr") or
// "attribute <name>".
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "io/hdf5/reader.hpp"
#include "io/hdf5/util.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/sizes.hpp"

namespace plexus {
namespace {

using h5::Hid;
using namespace h5;  // the format constants and Reader (io/hdf5/reader.hpp)

}  // namespace

// =============================================================================================

GraphData read_graph_h5(const std::string& path) {
  h5::silence_errors();
  Reader r(path);
  r.open();

  const Header h = read_header(r);
  GraphData g;
  g.num_nodes = h.num_nodes;
  g.num_features = h.num_features;
  g.num_classes = h.num_classes;
  g.directed = h.directed;
  const auto n = static_cast<hsize_t>(h.num_nodes);
  const auto nnz = static_cast<hsize_t>(h.nnz);
  // The header's sizes decide what the reads allocate: check them first.
  require_memory(graph_host_bytes(h.num_nodes, h.nnz, h.num_features, h.has_values) +
                     4.0 * static_cast<double>(h.nnz) * static_cast<double>(h.num_edge_features),
                 path, "the graph",
                 std::to_string(h.num_nodes) + " nodes, " + std::to_string(h.nnz) + " edges, " +
                     std::to_string(h.num_features) + " features");
  g.indptr = r.read_ints<index_t>(h.indptr, n + 1);
  g.indices = r.read_ints<index_t>(h.indices, nnz);
  if (h.has_values) g.values = r.read_floats(h.values, nnz);
  if (h.num_edge_features > 0) {
    g.num_edge_features = h.num_edge_features;
    g.edge_features = r.read_floats(h.edge_features, nnz * static_cast<hsize_t>(h.num_edge_features));
  }
  g.features = r.read_floats(h.features, n * static_cast<hsize_t>(h.num_features));
  g.labels = r.read_ints<std::int32_t>(h.labels, n);
  g.train_mask = r.read_ints<std::uint8_t>(h.train, n);
  g.val_mask = r.read_ints<std::uint8_t>(h.val, n);
  g.test_mask = r.read_ints<std::uint8_t>(h.test, n);
  if (r.exists(kNodeWeights)) g.node_weights = read_node_weights(r, n, Range{0, h.num_nodes});

  validate(g, path);
  return g;
}

void write_graph_h5(const GraphData& g, const std::string& path) {
  write_atomically(g, path, [](Writer&) {});
}

}  // namespace plexus
