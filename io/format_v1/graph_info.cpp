// read_graph_info_h5: the sizes of a format v1 file (docs/format-v1.md) without its data.
#include "io/hdf5/reader.hpp"

namespace plexus {

GraphInfo read_graph_info_h5(const std::string& path) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open();
  const h5::Header h = h5::read_header(r);  // attributes and dataset shapes, no data
  GraphInfo info;
  info.num_nodes = h.num_nodes;
  info.num_features = h.num_features;
  info.num_classes = h.num_classes;
  info.nnz = h.nnz;
  info.directed = h.directed;
  info.link_split = r.exists("/links");
  info.num_edge_features = h.num_edge_features;
  return info;
}

}  // namespace plexus
