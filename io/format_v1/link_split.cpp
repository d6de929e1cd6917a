// A format v1 file's link split (docs/format-v1.md, "Link splits"): /links/{val,test}_{pos,neg},
// int64 [M, 2], beside a /graph that holds the training links only. Written by `plexus convert
// edgelist --edge-split` (write_graph_h5 with a LinkSplit), read by the link task
// (read_training_data) in place of a split drawn in memory.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "io/format_v1/prepared.hpp"
#include "io/hdf5/reader.hpp"
#include "io/hdf5/util.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/sizes.hpp"

namespace plexus {

namespace {
constexpr const char* kLinks = "/links";
struct Member {
  const char* path;
  NodePairList LinkSplit::*list;
};
constexpr Member kMembers[] = {{"/links/val_pos", &LinkSplit::val_pos},
                               {"/links/val_neg", &LinkSplit::val_neg},
                               {"/links/test_pos", &LinkSplit::test_pos},
                               {"/links/test_neg", &LinkSplit::test_neg}};
}  // namespace

namespace h5 {
void write_link_split(Writer& w, const LinkSplit& held_out) {
  w.group(kLinks);
  for (const Member& m : kMembers) {
    const NodePairList& p = held_out.*m.list;
    std::vector<std::int64_t> rows(2 * p.size());
    for (std::size_t k = 0; k < p.size(); ++k) rows[2 * k] = p.u[k], rows[2 * k + 1] = p.v[k];
    const auto count = static_cast<hsize_t>(p.size());
    w.dataset(m.path, H5T_STD_I64LE, rows.data(), {count, 2}, {std::max<hsize_t>(1, std::min<hsize_t>(count, 65536)), 2});
  }
  w.scalar_attr("as_published", H5T_STD_I32LE, std::int32_t{held_out.as_published ? 1 : 0}, kLinks);
  w.scalar_attr("negatives_per_link", H5T_STD_I64LE, std::int64_t{held_out.negatives_per_link}, kLinks);
}
}  // namespace h5

void write_graph_h5(const GraphData& g, const NodeNames& names, const LinkSplit& held_out, const std::string& path) {
  h5::check_node_names(g, names, path);
  // (write_atomically validates g first; the split is checked against it before any of it is
  // written, and a refusal removes the temporary file.)
  h5::write_atomically(g, path, [&](h5::Writer& w) {
    validate_link_split(g, held_out, path);
    h5::write_node_names(w, g, names);
    h5::write_link_split(w, held_out);
  });
}

std::optional<LinkSplit> read_link_split_h5(const std::string& path) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open();
  const h5::Header h = h5::read_header(r);
  if (!r.exists(kLinks)) return std::nullopt;
  LinkSplit s;
  // (Absent from files written before they existed: a split of ours, shared negatives.)
  if (r.attr_exists("as_published", kLinks)) {
    const std::int64_t a = r.int_attr("as_published", "int32", kLinks);
    if (a != 0 && a != 1) r.fail("/links: attribute as_published", std::to_string(a) + " is not 0 or 1");
    s.as_published = a == 1;
  }
  if (r.attr_exists("negatives_per_link", kLinks)) {
    s.negatives_per_link = r.int_attr("negatives_per_link", "int64", kLinks);
    if (s.negatives_per_link < 0)
      r.fail("/links: attribute negatives_per_link", std::to_string(s.negatives_per_link) + " is negative");
  }
  for (const Member& m : kMembers) {
    const h5::Reader::Dataset d = r.open_dataset(m.path, false, "int64", {h5::Reader::kAny, 2}, "[M, 2]");
    const hsize_t count = d.dims[0];
    require_memory(static_cast<double>(count) * 32.0, path, m.path, std::to_string(count) + " pairs");
    const std::vector<std::int64_t> rows = r.read_ints<std::int64_t>(d, static_cast<std::size_t>(2 * count));
    NodePairList& p = s.*m.list;
    p.u.reserve(static_cast<std::size_t>(count));
    p.v.reserve(static_cast<std::size_t>(count));
    for (std::size_t k = 0; k < static_cast<std::size_t>(count); ++k) {
      const std::int64_t u = rows[2 * k], v = rows[2 * k + 1];
      if (u < 0 || u >= h.num_nodes || v < 0 || v >= h.num_nodes)
        throw InputError(path, std::string(m.path) + ": pair " + std::to_string(k + 1) + " (" + std::to_string(u) +
                                   ", " + std::to_string(v) + ") names a node outside [0, " +
                                   std::to_string(h.num_nodes) + ")");
      p.u.push_back(u);
      p.v.push_back(v);
    }
  }
  return s;
}

}  // namespace plexus
