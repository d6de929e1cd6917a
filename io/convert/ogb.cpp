// OGB's raw layout (read_ogb): the CSV files that ogb's NodePropPredDataset and
// LinkPropPredDataset download (DIR/raw/*.csv.gz), read without Python, and a node-property
// split (DIR/split/<name>/*.csv.gz). Each file may be gzip-compressed or plain, and named
// NAME.csv.gz or NAME.csv. The link split's .pt files: io/convert/ogb_links.cpp.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/convert/graph_build.hpp"
#include "io/convert/ogb_raw.hpp"
#include "io/convert/text_reader.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"

namespace plexus {
namespace {

namespace fs = std::filesystem;
using text::TextReader;

// DIR/NAME.csv.gz, else DIR/NAME.csv, else nullopt.
std::optional<std::string> find_csv(const fs::path& dir, const std::string& name) {
  for (const char* ext : {".csv.gz", ".csv"}) {
    const fs::path p = dir / (name + ext);
    std::error_code ec;
    if (fs::exists(p, ec)) return p.string();
  }
  return std::nullopt;
}

std::string require_csv(const fs::path& dir, const std::string& name) {
  auto p = find_csv(dir, name);
  if (!p) throw InputError((dir / (name + ".csv.gz")).string(), "no such file");
  return *p;
}

bool is_nan_token(std::string_view t) {
  if (t.empty()) return true;
  std::string s(t);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "nan" || s == "-nan";
}

// Node ids, one per non-blank row, each < n.
std::vector<index_t> read_ids(const std::string& path, index_t n, const std::string& n_source) {
  TextReader in(path);
  std::vector<index_t> out;
  std::vector<std::string_view> f;
  std::string_view line;
  while (in.next(line)) {
    text::split_fields(line, f);
    if (f.empty()) continue;
    if (f.size() != 1) in.fail("expected 1 column (a node id), got " + std::to_string(f.size()));
    const std::int64_t id = text::parse_id(in, f[0], "node id");
    if (id >= n) in.fail("node id " + std::to_string(id) + " out of range [0, " + std::to_string(n) + ") (" + n_source + ")");
    out.push_back(id);
  }
  return out;
}

void check_rows(const std::string& path, index_t rows, index_t n, const std::string& n_source) {
  if (rows != n)
    throw InputError(path, "has " + std::to_string(rows) + " rows, expected " + std::to_string(n) + " (" + n_source + ")");
}

}  // namespace

namespace ogb {

GraphData read_ogb_graph(const std::string& dir_str, const OgbOptions& opt, std::string& n_source_out) {
  const fs::path dir(dir_str);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir_str, fs::exists(dir, ec) ? "not a directory" : "no such directory");
  const fs::path raw = dir / "raw";
  if (!fs::is_directory(raw, ec)) throw InputError((raw).string(), "no such directory (expected the OGB raw/ layout)");

  index_t n = -1;
  std::string n_source;
  std::vector<std::string_view> f;
  std::string_view line;

  // ---- num-node-list (optional) ----
  if (auto p = find_csv(raw, "num-node-list")) {
    TextReader in(*p);
    while (in.next(line)) {
      text::split_fields(line, f);
      if (f.empty()) continue;
      if (n >= 0) in.fail("more than one row: graph-property datasets (many graphs) are not supported");
      if (f.size() != 1) in.fail("expected 1 column (the node count), got " + std::to_string(f.size()));
      n = text::parse_id(in, f[0], "node count");
      if (n < 1) in.fail("node count must be at least 1");
      if (n > opt.max_nodes) in.fail("node count " + std::to_string(n) + " exceeds the limit of " + std::to_string(opt.max_nodes));
    }
    if (n < 0) throw InputError(*p, "no node count");
    n_source = "num_nodes from " + *p;
    build::require_graph_memory(*p, std::to_string(n) + " nodes declared", n, 0, opt.symmetrize, false, 1);
  }

  // ---- node features (optional) ----
  GraphData g;
  std::vector<float> feat;
  index_t width = 0, feat_rows = 0;
  const auto feat_path = find_csv(raw, "node-feat");
  if (feat_path) {
    TextReader in(*feat_path);
    while (in.next(line)) {
      text::split_fields(line, f);
      if (f.empty()) continue;
      if (width == 0) width = static_cast<index_t>(f.size());
      if (static_cast<index_t>(f.size()) != width)
        in.fail("expected " + std::to_string(width) + " feature columns like the first row, got " + std::to_string(f.size()));
      if (n >= 0 && feat_rows == n) in.fail("more than " + std::to_string(n) + " rows (" + n_source + ")");
      if (feat_rows >= opt.max_nodes) in.fail("more rows than the node limit");
      for (const auto& t : f) feat.push_back(text::parse_float(in, t, "feature"));
      ++feat_rows;
    }
    if (width == 0) throw InputError(*feat_path, "no feature rows");
    if (n < 0) {
      n = feat_rows;
      n_source = "the number of rows of " + *feat_path;
    }
    check_rows(*feat_path, feat_rows, n, n_source);
  }

  // ---- labels (optional) ----
  std::vector<std::int32_t> labels;
  const auto label_path = find_csv(raw, "node-label");
  if (label_path) {
    TextReader in(*label_path);
    std::size_t written = 0;  // rows up to the last non-blank one
    while (in.next(line)) {
      text::split_fields(line, f);
      // An empty row is a missing label (pandas writes NaN as an empty field).
      if (f.size() > 1) in.fail("expected 1 column (multi-task labels are not supported), got " + std::to_string(f.size()));
      if (n >= 0 && static_cast<index_t>(labels.size()) == n) {
        if (f.empty()) continue;  // trailing blank lines
        in.fail("more than " + std::to_string(n) + " rows (" + n_source + ")");
      }
      if (static_cast<index_t>(labels.size()) >= opt.max_nodes) in.fail("more rows than the node limit");
      if (f.empty() || is_nan_token(f[0])) {
        labels.push_back(-1);
        if (!f.empty()) written = labels.size();
        continue;
      }
      std::int64_t y = 0;
      const std::string_view t = f[0];
      if (t.find_first_of(".eE") != std::string_view::npos) {  // "3.0" (labels stored as float)
        const float v = text::parse_float(in, t, "label");
        if (v != static_cast<float>(static_cast<std::int64_t>(v))) in.fail("label " + text::printable(t) + " is not an integer");
        y = static_cast<std::int64_t>(v);
      } else {
        y = text::parse_int(in, t, "label");
      }
      if (y < -1 || y > (std::int64_t{1} << 30)) in.fail("label " + std::to_string(y) + " out of range");
      labels.push_back(static_cast<std::int32_t>(y));
      written = labels.size();
    }
    if (n < 0) {
      labels.resize(written);  // trailing blank lines are not rows
      if (labels.empty()) throw InputError(*label_path, "no labels");
      n = static_cast<index_t>(labels.size());
      n_source = "the number of rows of " + *label_path;
    }
    check_rows(*label_path, static_cast<index_t>(labels.size()), n, n_source);
  }

  // ---- edges ----
  const std::string edge_path = require_csv(raw, "edge");
  std::vector<build::Edge> edges;
  index_t max_id = -1;
  {
    TextReader in(edge_path);
    while (in.next(line)) {
      text::split_fields(line, f);
      if (f.empty()) continue;
      if (f.size() != 2) in.fail("expected 2 columns (src,dst), got " + std::to_string(f.size()));
      const index_t u = text::parse_id(in, f[0], "node id");
      const index_t v = text::parse_id(in, f[1], "node id");
      for (const index_t id : {u, v}) {
        if (n >= 0 && id >= n) in.fail("node id " + std::to_string(id) + " out of range [0, " + std::to_string(n) + ") (" + n_source + ")");
        if (id >= opt.max_nodes) in.fail("node id " + std::to_string(id) + " exceeds the node limit");
      }
      max_id = std::max({max_id, u, v});
      edges.push_back({u, v, static_cast<index_t>(edges.size()), 1.0f});
    }
  }
  if (n < 0) {
    if (max_id < 0) throw InputError(edge_path, "no edges, and no num-node-list, node-feat or node-label to size the graph");
    n = max_id + 1;
    n_source = "max node id + 1 in " + edge_path;
  }
  build::require_graph_memory(edge_path, std::to_string(n) + " nodes (" + n_source + "), " +
                                             std::to_string(edges.size()) + " edges",
                              n, static_cast<std::int64_t>(edges.size()), opt.symmetrize, false, std::max<index_t>(width, 1));
  build::csr_from_edges(g, n, edges, opt.symmetrize, false);

  if (feat_path) {
    g.num_features = width;
    g.features = std::move(feat);
  } else {
    build::synthetic_features(g, SyntheticFeatures::kDegree, 1, 0);
  }
  build::unlabelled(g, 1);
  if (label_path) {
    g.labels = std::move(labels);
    std::int32_t c = 0;
    for (const std::int32_t y : g.labels) c = std::max(c, y + 1);
    g.num_classes = std::max<std::int32_t>(c, 1);
  }

  n_source_out = n_source;
  return g;
}

std::filesystem::path ogb_split_dir(const std::filesystem::path& dir, const OgbOptions& opt) {
  std::error_code ec;
  std::string split = opt.split;
  const fs::path split_root = dir / "split";
  if (split.empty() && fs::is_directory(split_root, ec)) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(split_root, ec))
      if (e.is_directory(ec)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    if (names.size() == 1) split = names[0];
    if (names.size() > 1) {
      std::string list;
      for (const auto& s : names) list += (list.empty() ? "" : ", ") + s;
      throw InputError("OgbOptions.split", "several splits in " + split_root.string() + " (" + list + "); choose one");
    }
  }
  if (split.empty()) return {};
  const fs::path sd = split_root / split;
  if (!fs::is_directory(sd, ec)) throw InputError(sd.string(), "no such split directory");
  return sd;
}

}  // namespace ogb

using ogb::ogb_split_dir;
using ogb::read_ogb_graph;

namespace {
// Whether a split directory holds a link split (torch.save files) rather than node ids.
bool holds_link_split(const fs::path& sd) {
  std::error_code ec;
  return !sd.empty() && (fs::exists(sd / "valid.pt", ec) || fs::exists(sd / "train.pt", ec));
}
}  // namespace

bool ogb_has_link_split(const std::string& dir, const OgbOptions& opt) { return holds_link_split(ogb_split_dir(dir, opt)); }

GraphData read_ogb(const std::string& dir_str, const OgbOptions& opt) {
  std::string n_source;
  GraphData g = read_ogb_graph(dir_str, opt, n_source);
  const index_t n = g.num_nodes;
  if (const fs::path sd = ogb_split_dir(dir_str, opt); !sd.empty()) {
    if (holds_link_split(sd))
      throw InputError(sd.string(), "holds a link split (train.pt, valid.pt, test.pt): read it with read_ogb_links");
    const std::pair<const char*, std::vector<std::uint8_t>*> parts[] = {
        {"train", &g.train_mask}, {"valid", &g.val_mask}, {"test", &g.test_mask}};
    for (const auto& [name, mask] : parts) {
      for (const index_t id : read_ids(require_csv(sd, name), n, n_source)) (*mask)[static_cast<std::size_t>(id)] = 1;
    }
  }
  validate(g, dir_str);
  return g;
}

}  // namespace plexus
