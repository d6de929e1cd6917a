// OGB link-property-prediction layout (read_ogb_links, plexus/convert.hpp): the graph of raw/ as
// read_ogb reads it, and the split's torch.save dicts (split/<name>/{train,valid,test}.pt) read
// with the safe pickle reader — OGB's own split, taken as published (LinkSplit::as_published).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "io/convert/ogb_raw.hpp"
#include "io/convert/pickle.hpp"
#include "io/convert/torch_file.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"

namespace plexus {
namespace {

namespace fs = std::filesystem;
using pickle::Ref;

// What one split file holds: its links and, for valid/test, their negatives.
struct SplitFile {
  NodePairList links, negatives;
  std::int64_t negatives_per_link = 0;  // target_node_neg's columns; 0 for a shared edge_neg
};

class SplitReader {
 public:
  SplitReader(std::string path, index_t n, std::string n_source)
      : path_(std::move(path)), n_(n), n_source_(std::move(n_source)) {}

  SplitFile read(bool with_negatives) {
    const pickle::Document doc = read_torch_save(path_);
    const Ref root = doc.root();
    if (root == nullptr || root->kind != pickle::Kind::Dict)
      throw InputError(path_, "expected a dict of numpy arrays (OGB's split), found " + pickle::describe(root, 0));
    SplitFile f;
    if (const Ref edge = root->get("edge")) {
      f.links = pairs(edge, "edge");
      if (with_negatives) {
        const Ref neg = root->get("edge_neg");
        if (neg == nullptr) throw InputError(path_, "has 'edge' but no 'edge_neg' (the split's negatives)");
        f.negatives = pairs(neg, "edge_neg");
      }
    } else if (root->get("source_node") != nullptr || root->get("target_node") != nullptr) {
      const auto source = nodes(root->get("source_node"), "source_node");
      const auto target = nodes(root->get("target_node"), "target_node");
      if (source.data.size() != target.data.size())
        throw InputError(path_, "'source_node' has " + std::to_string(source.data.size()) + " entries, 'target_node' " +
                                    std::to_string(target.data.size()));
      f.links.u = source.data;
      f.links.v = target.data;
      if (with_negatives) {
        const Ref neg = root->get("target_node_neg");
        if (neg == nullptr) throw InputError(path_, "has 'source_node' but no 'target_node_neg' (each link's negatives)");
        const pickle::Array<std::int64_t> a = pickle::to_int_array(neg, where("target_node_neg"));
        if (a.shape.size() != 2 || a.rows() != static_cast<std::int64_t>(source.data.size()) || a.cols() < 1)
          throw InputError(path_, "'target_node_neg' has shape " + shape_text(a.shape) + ", expected [" +
                                      std::to_string(source.data.size()) + ", K] (K negatives for each link)");
        f.negatives_per_link = a.cols();
        f.negatives.u.resize(a.data.size());
        f.negatives.v = a.data;
        for (std::size_t k = 0; k < a.data.size(); ++k) {
          f.negatives.u[k] = source.data[k / static_cast<std::size_t>(a.cols())];
          check_node(a.data[k], "target_node_neg", k);
        }
      }
    } else {
      throw InputError(path_, "has neither 'edge' nor 'source_node'/'target_node' (keys: " + pickle::describe(root, 1) + ")");
    }
    return f;
  }

 private:
  std::string where(const char* key) const { return path_ + ": '" + key + "'"; }
  static std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
    return s + "]";
  }
  void check_node(std::int64_t id, const char* key, std::size_t k) const {
    if (id < 0 || id >= n_)
      throw InputError(path_, std::string("'") + key + "' entry " + std::to_string(k + 1) + ": node " + std::to_string(id) +
                                  " out of range [0, " + std::to_string(n_) + ") (" + n_source_ + ")");
  }
  // An [M, 2] array of node pairs.
  NodePairList pairs(Ref v, const char* key) const {
    const pickle::Array<std::int64_t> a = pickle::to_int_array(v, where(key));
    if (a.shape.size() != 2 || a.cols() != 2)
      throw InputError(path_, std::string("'") + key + "' has shape " + shape_text(a.shape) + ", expected [M, 2]");
    NodePairList p;
    p.u.reserve(static_cast<std::size_t>(a.rows()));
    p.v.reserve(static_cast<std::size_t>(a.rows()));
    for (std::size_t k = 0; k < static_cast<std::size_t>(a.rows()); ++k) {
      check_node(a.data[2 * k], key, k);
      check_node(a.data[2 * k + 1], key, k);
      p.u.push_back(a.data[2 * k]);
      p.v.push_back(a.data[2 * k + 1]);
    }
    return p;
  }
  // A one-dimensional array of node ids.
  pickle::Array<std::int64_t> nodes(Ref v, const char* key) const {
    if (v == nullptr) throw InputError(path_, std::string("has no '") + key + "'");
    pickle::Array<std::int64_t> a = pickle::to_int_array(v, where(key));
    if (a.shape.size() != 1) throw InputError(path_, std::string("'") + key + "' has shape " + shape_text(a.shape) + ", expected [M]");
    for (std::size_t k = 0; k < a.data.size(); ++k) check_node(a.data[k], key, k);
    return a;
  }

  std::string path_;
  index_t n_;
  std::string n_source_;
};

// Whether v is in u's row of g (rows sorted by the converter).
bool has_edge(const GraphData& g, std::int64_t u, std::int64_t v) {
  const auto b = g.indices.begin() + g.indptr[static_cast<std::size_t>(u)],
             e = g.indices.begin() + g.indptr[static_cast<std::size_t>(u) + 1];
  return std::binary_search(b, e, static_cast<index_t>(v));
}

// Each undirected pair with its smaller node first, as the link task's own splits write them.
void smaller_first(NodePairList& p) {
  for (std::size_t k = 0; k < p.size(); ++k)
    if (p.u[k] > p.v[k]) std::swap(p.u[k], p.v[k]);
}

}  // namespace

OgbLinkData read_ogb_links(const std::string& dir, const OgbOptions& opt) {
  std::string n_source;
  OgbLinkData d;
  d.graph = ogb::read_ogb_graph(dir, opt, n_source);
  const GraphData& g = d.graph;
  const fs::path sd = ogb::ogb_split_dir(dir, opt);
  if (sd.empty())
    throw InputError((fs::path(dir) / "split").string(), "no split directory (expected split/<name>/{train,valid,test}.pt)");
  std::error_code ec;
  const auto file = [&](const char* name) {
    const fs::path p = sd / name;
    if (!fs::exists(p, ec)) throw InputError(p.string(), "no such file");
    return p.string();
  };

  // The training links: each must be a link of raw/ (message passing trains on them).
  const std::string train_path = file("train.pt");
  const SplitFile train = SplitReader(train_path, g.num_nodes, n_source).read(false);
  for (std::size_t k = 0; k < train.links.size(); ++k) {
    const std::int64_t u = train.links.u[k], v = train.links.v[k];
    if (u == v) continue;  // (self-loops are dropped from the graph, as every converter drops them)
    if (!has_edge(g, u, v) && (g.directed || !has_edge(g, v, u)))
      throw InputError(train_path, "training link " + std::to_string(k + 1) + " (" + std::to_string(u) + ", " +
                                       std::to_string(v) + ") is not an edge of raw/edge.csv.gz");
  }

  SplitFile val = SplitReader(file("valid.pt"), g.num_nodes, n_source).read(true);
  SplitFile test = SplitReader(file("test.pt"), g.num_nodes, n_source).read(true);
  if (val.negatives_per_link != test.negatives_per_link)
    throw InputError(sd.string(), "valid.pt has " + std::to_string(val.negatives_per_link) +
                                      " negatives a link, test.pt " + std::to_string(test.negatives_per_link) +
                                      " (0: one shared set): the split's files disagree");
  for (NodePairList* p : {&val.links, &val.negatives, &test.links, &test.negatives})
    if (!g.directed) smaller_first(*p);
  LinkSplit& s = d.held_out;
  s.val_pos = std::move(val.links);
  s.val_neg = std::move(val.negatives);
  s.test_pos = std::move(test.links);
  s.test_neg = std::move(test.negatives);
  s.as_published = true;
  s.negatives_per_link = val.negatives_per_link;
  validate_link_split(g, s, sd.string());
  return d;
}

}  // namespace plexus
