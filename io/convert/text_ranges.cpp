// Reading a text graph a range of bytes at a time (io/convert/text_ranges.hpp).
#include "io/convert/text_ranges.hpp"

#include <algorithm>
#include <string_view>

#include "io/convert/text_reader.hpp"

namespace plexus::text {

LineRange byte_range(std::uint64_t size, std::uint64_t data_begin, std::uint64_t part, std::uint64_t parts) {
  const std::uint64_t data = size - std::min(size, data_begin);
  LineRange range;
  range.begin = data_begin + data * part / parts;
  range.end = data_begin + data * (part + 1) / parts;
  return range;
}

ParsedLines parse_edge_lines(const std::string& path, const EdgeListOptions& opt, const LineRange& range) {
  TextReader in(path, range.begin, range.end, range.first_line);
  ParsedLines out;
  const bool dense = opt.num_nodes > 0;
  std::vector<std::string_view> f;
  std::string_view line;
  while (in.next(line)) {
    if (is_comment_or_blank(line)) continue;
    split_fields(line, f);
    if (f.size() < 2 || f.size() > 3) in.fail("expected 2 or 3 columns (u v [weight]), got " + std::to_string(f.size()));
    if (out.columns == 0) {
      out.columns = f.size();
      out.first_edge_line = in.line_number();
    }
    if (f.size() != out.columns)
      in.fail("expected " + std::to_string(out.columns) + " columns like the first edge line, got " +
              std::to_string(f.size()));
    build::Edge e{0, 0, in.line_number(), 1.0f};
    index_t* ends[2] = {&e.u, &e.v};
    for (int k = 0; k < 2; ++k) {
      const std::int64_t id = parse_id(in, f[static_cast<std::size_t>(k)], "node id");
      if (id < opt.base) in.fail("node id " + std::to_string(id) + " is below the first id " + std::to_string(opt.base));
      *ends[k] = id - opt.base;
      if (dense && *ends[k] >= opt.num_nodes)
        in.fail("node id " + std::to_string(id) + " out of range: EdgeListOptions.num_nodes " + std::to_string(opt.num_nodes) +
                " allows ids " + std::to_string(opt.base) + ".." + std::to_string(opt.num_nodes - 1 + opt.base));
    }
    if (out.columns == 3) e.w = parse_float(in, f[2], "edge weight");
    out.edges.push_back(e);
  }
  return out;
}

// The rest of a converted slice as the one-process converters make it: synthetic features
// (of the rows' degrees), no labels, empty masks.
void finish_slice(GraphSlice& s, index_t n, bool directed, bool weighted, const EdgeListOptions& opt) {
  s.num_nodes = n;
  s.directed = directed;
  s.weighted = weighted;
  build::synthetic_feature_rows(opt.features, opt.feature_width, opt.seed, n, s.rows.begin, s.rows.size(),
                                s.indptr.data(), s.features);
  s.num_features = opt.features == SyntheticFeatures::kRandom ? opt.feature_width : 1;
  s.num_classes = opt.classes;
  const auto rows = static_cast<std::size_t>(s.rows.size());
  s.labels.assign(rows, -1);
  s.train_mask.assign(rows, 0);
  s.val_mask.assign(rows, 0);
  s.test_mask.assign(rows, 0);
}

}  // namespace plexus::text
