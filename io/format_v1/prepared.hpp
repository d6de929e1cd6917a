#pragma once
// The /prepared group of a format v1 file (docs/format-v1.md, "Prepared graphs"): names and
// the checked opening of its datasets (private to io/).
#include "io/hdf5/reader.hpp"
#include "plexus/balance.hpp"
#include "plexus/io.hpp"

namespace plexus::h5 {
class Writer;  // io/hdf5/writer.hpp

constexpr const char* kPrepared = "/prepared";

// /links/{val,test}_{pos,neg} (docs/format-v1.md, "Link splits"), written into an open file
// (io/format_v1/link_split.cpp): a plain graph's and a prepared one's.
void write_link_split(Writer& w, const LinkSplit& held_out);

// One CSR of datasets, opened and shape-checked: /graph or /prepared/a1, /prepared/a2.
struct CsrDatasets {
  Reader::Dataset indptr, indices, values;
  bool has_values = false;
  std::int64_t nnz = 0;
};

struct PreparedHeader {
  bool prepared = false;
  Balance balance = Balance::kNone;
  std::uint64_t seed = 0;
  int metis_parts = 1;
  bool two_orders = false;
  CsrDatasets adj[2];  // Â1, Â2
  // The labels and masks in P order (the same objects as /labels and /masks with one order).
  Reader::Dataset labels_p, train_p, val_p, test_p;
};

// The /graph CSR of a file's header, its datasets moved out of `h`.
inline CsrDatasets take_graph_csr(Header& h) {
  CsrDatasets graph;
  graph.indptr = std::move(h.indptr);
  graph.indices = std::move(h.indices);
  graph.values = std::move(h.values);
  graph.has_values = h.has_values;
  graph.nnz = h.nnz;
  return graph;
}

// Opens `<group>/indptr`, `indices` and (optional) `values` of an N × N CSR.
CsrDatasets open_csr(const Reader& r, const std::string& group, std::int64_t num_nodes, bool values_required);

// prepared == false when the file has no /prepared group; otherwise every attribute and
// dataset of the group is checked for type and shape (nothing is read but attributes).
PreparedHeader read_prepared_header(const Reader& r, const Header& h);

// Refuses (InputError(path, "cannot write: ...")) names that do not fit `g`: ids other than
// one per node, class names other than one per class (io/format_v1/node_names.cpp).
void check_node_names(const GraphData& g, const NodeNames& names, const std::string& path);
// Writes the names that are non-empty (/node_ids, /class_names) of a plain file of `g`.
void write_node_names(Writer& w, const GraphData& g, const NodeNames& names);

// The /class_names of a file (serial read; empty when it has none), checked as
// read_node_names_h5 checks them.
std::vector<std::string> read_class_names_h5(const std::string& path);

}  // namespace plexus::h5
