// Node files (read_node_file, apply_node_file; include/plexus/convert.hpp): one node per line of
// a CSV or TSV file with a header, read through TextReader (plain or gzip, "<file>:<line>"
// errors). Column roles come from the header's names; labels are integers or class names.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/convert/text_reader.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"

namespace plexus {
namespace {

using text::TextReader;

bool blank_line(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

// Splits a line at `delim` into fields, each trimmed of surrounding spaces (and of tabs when the
// delimiter is a comma). A field may be quoted ("a, b"; "" stands for one quote), so that class
// names may hold the delimiter. Unlike text::split_fields, runs of delimiters are empty fields:
// an empty label is a field.
void split_delimited(const TextReader& in, std::string_view line, char delim, std::vector<std::string>& out) {
  const auto pad = [delim](char c) { return c == ' ' || (c == '\t' && delim != '\t'); };
  out.clear();
  std::size_t i = 0;
  const std::size_t n = line.size();
  for (;;) {
    while (i < n && pad(line[i])) ++i;
    std::string field;
    if (i < n && line[i] == '"') {
      for (++i;; ++i) {
        if (i == n) in.fail("unterminated quoted field (field " + std::to_string(out.size() + 1) + ")");
        if (line[i] != '"') {
          field += line[i];
        } else if (i + 1 < n && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          ++i;
          break;
        }
      }
      while (i < n && pad(line[i])) ++i;
      if (i < n && line[i] != delim)
        in.fail("text after the closing quote of field " + std::to_string(out.size() + 1));
    } else {
      const std::size_t start = i;
      while (i < n && line[i] != delim) ++i;
      std::size_t end = i;
      while (end > start && pad(line[end - 1])) --end;
      field.assign(line.substr(start, end - start));
    }
    out.push_back(std::move(field));
    if (i == n) return;
    ++i;  // the delimiter
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

SplitOf parse_split(const TextReader& in, const std::string& value) {
  const std::string v = lower(value);
  if (v.empty()) return SplitOf::kNone;
  if (v == "train") return SplitOf::kTrain;
  if (v == "val" || v == "valid" || v == "validation") return SplitOf::kVal;
  if (v == "test") return SplitOf::kTest;
  in.fail("split " + text::printable(value) + ": expected train, val (or valid, validation), test or empty");
}

// A whole-field int64 ("+3" allowed), or false.
bool as_integer(std::string_view s, std::int64_t& v) {
  if (!s.empty() && s[0] == '+' && s.size() > 1) s.remove_prefix(1);
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

// The label column's distinct values in order of appearance, with the line of each's first
// use, and every node's value as an index into them (-1: empty). Integers or names is decided
// at the end, when every value has been seen.
struct LabelValues {
  std::vector<std::string> values;
  std::vector<std::int64_t> first_line;
  std::unordered_map<std::string, std::int32_t> index;
  std::vector<std::int32_t> of_node;

  void add(const std::string& v, std::int64_t line) {
    if (v.empty()) {
      of_node.push_back(-1);
      return;
    }
    const auto [it, fresh] = index.try_emplace(v, static_cast<std::int32_t>(values.size()));
    if (fresh) {
      if (values.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw InputError("labels", "too many distinct labels");
      values.push_back(v);
      first_line.push_back(line);
    }
    of_node.push_back(it->second);
  }
};

// Integer labels are used as given (-1 = unlabelled); any other value makes every label a class
// name, classes numbered in sorted (byte) order of their names.
void decide_labels(NodeFile& f, LabelValues& lv) {
  std::vector<std::int64_t> as_int(lv.values.size());
  bool integers = true;
  for (std::size_t k = 0; k < lv.values.size() && integers; ++k) integers = as_integer(lv.values[k], as_int[k]);
  std::vector<std::int32_t> class_of(lv.values.size());
  if (integers) {
    std::int64_t top = -1;
    for (std::size_t k = 0; k < as_int.size(); ++k) {
      const std::int64_t v = as_int[k];
      const std::string where = f.path + ":" + std::to_string(lv.first_line[k]);
      if (v < -1) throw InputError(where, "label " + std::to_string(v) + ": integer labels are >= 0 (-1 or empty = unlabelled)");
      if (v >= std::numeric_limits<std::int32_t>::max())
        throw InputError(where, "label " + std::to_string(v) + " out of range (integer labels are class numbers)");
      class_of[k] = static_cast<std::int32_t>(v);
      top = std::max(top, v);
    }
    f.num_classes = static_cast<std::int32_t>(top + 1);
  } else {
    std::vector<std::int32_t> order(lv.values.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = static_cast<std::int32_t>(k);
    std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return lv.values[a] < lv.values[b]; });
    for (std::size_t c = 0; c < order.size(); ++c) {
      class_of[static_cast<std::size_t>(order[c])] = static_cast<std::int32_t>(c);
      f.class_names.push_back(lv.values[static_cast<std::size_t>(order[c])]);
    }
    f.num_classes = static_cast<std::int32_t>(order.size());
  }
  f.labels.resize(lv.of_node.size());
  for (std::size_t i = 0; i < lv.of_node.size(); ++i)
    f.labels[i] = lv.of_node[i] < 0 ? -1 : class_of[static_cast<std::size_t>(lv.of_node[i])];
}

// Which header column plays which role (npos: none).
struct Columns {
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::size_t id = npos, label = npos, split = npos;
  std::vector<std::size_t> features;
};

Columns assign_columns(const TextReader& in, const std::vector<std::string>& header, const NodeFileOptions& opt,
                       NodeFile& f) {
  std::string all;
  for (const std::string& h : header) all += (all.empty() ? "" : ", ") + text::printable(h);
  const auto find = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? Columns::npos : static_cast<std::size_t>(it - header.begin());
  };
  for (std::size_t k = 0; k < header.size(); ++k) {
    if (header[k].empty()) in.fail("column " + std::to_string(k + 1) + " of the header has no name");
    if (find(header[k]) != k) in.fail("column " + text::printable(header[k]) + " appears twice in the header");
  }
  const auto require = [&](const std::string& name, const char* option) {
    const std::size_t c = find(name);
    if (c == Columns::npos) in.fail("no column " + text::printable(name) + " (" + option + "); the header has " + all);
    return c;
  };
  Columns c;
  c.id = require(opt.id_column, "NodeFileOptions.id_column");
  c.label = opt.label_column_required ? require(opt.label_column, "NodeFileOptions.label_column") : find(opt.label_column);
  c.split = opt.split_column_required ? require(opt.split_column, "NodeFileOptions.split_column") : find(opt.split_column);
  const auto role = [&](std::size_t k) { return k == c.id || k == c.label || k == c.split; };
  if (opt.pick_features) {
    for (const std::string& name : opt.feature_columns) {
      const std::size_t k = require(name, "NodeFileOptions.feature_columns");
      if (role(k)) in.fail("NodeFileOptions.feature_columns: " + text::printable(name) + " is the id, label or split column");
      if (std::find(c.features.begin(), c.features.end(), k) != c.features.end())
        in.fail("NodeFileOptions.feature_columns: " + text::printable(name) + " is named twice");
      c.features.push_back(k);
    }
  } else {
    for (std::size_t k = 0; k < header.size(); ++k)
      if (!role(k)) c.features.push_back(k);
  }
  if (!opt.features_from.empty() && !c.features.empty()) {
    std::string names;
    for (const std::size_t k : c.features) names += (names.empty() ? "" : ", ") + text::printable(header[k]);
    in.fail("columns " + names + " would be features, and NodeFileOptions.features_from " + opt.features_from +
            " gives the features too: drop the columns, or NodeFileOptions.features_from");
  }
  f.has_labels = c.label != Columns::npos;
  f.has_split = c.split != Columns::npos;
  for (const std::size_t k : c.features) f.feature_names.push_back(header[k]);
  return c;
}

}  // namespace

NodeFile read_node_file(const std::string& path, const NodeFileOptions& opt) {
  TextReader in(path);
  NodeFile f;
  f.path = in.path();
  std::string_view line;
  bool have_header = false;
  while (!have_header && in.next(line)) have_header = !blank_line(line);
  if (!have_header) throw InputError(f.path, "empty file, expected a header line (id,label,...)");
  const char delim = line.find('\t') != std::string_view::npos ? '\t' : ',';
  std::vector<std::string> header, fields;
  split_delimited(in, line, delim, header);
  const Columns cols = assign_columns(in, header, opt, f);

  // What each feature column is called in messages (parse_float names it).
  std::vector<std::string> feature_what;
  for (const std::string& name : f.feature_names) feature_what.push_back("feature " + text::printable(name));
  std::unordered_map<std::int64_t, std::int64_t> line_of_id;  // the line each id was first seen on
  LabelValues labels;
  while (in.next(line)) {
    if (blank_line(line)) continue;
    split_delimited(in, line, delim, fields);
    if (fields.size() != header.size())
      in.fail("expected " + std::to_string(header.size()) + " fields like the header, got " + std::to_string(fields.size()));
    if (static_cast<index_t>(f.ids.size()) >= opt.max_nodes)
      in.fail("more than " + std::to_string(opt.max_nodes) + " nodes");
    const std::int64_t id = text::parse_id(in, fields[cols.id], "node id");
    const auto [seen, fresh] = line_of_id.try_emplace(id, in.line_number());
    if (!fresh) in.fail("duplicate node id " + std::to_string(id) + " (first on line " + std::to_string(seen->second) + ")");
    f.ids.push_back(id);
    if (f.has_labels) labels.add(fields[cols.label], in.line_number());
    if (f.has_split) f.split.push_back(parse_split(in, fields[cols.split]));
    // (What is kept grows with the file: at most 4 bytes of features per 2 bytes read.)
    for (std::size_t j = 0; j < cols.features.size(); ++j)
      f.features.push_back(text::parse_float(in, fields[cols.features[j]], feature_what[j].c_str()));
  }
  if (f.ids.empty()) throw InputError(f.path, "no nodes (only a header line)");
  if (f.has_labels) decide_labels(f, labels);
  return f;
}

void apply_node_file(GraphData& g, const NodeFile& nodes, std::int32_t classes) {
  const auto n = static_cast<std::size_t>(g.num_nodes);
  if (nodes.ids.size() != n)
    throw InputError(nodes.path, "holds " + std::to_string(nodes.ids.size()) + " nodes, the graph " + std::to_string(n));
  if (classes < 0) throw InputError("apply_node_file(classes)", "must be at least 1, got " + std::to_string(classes));
  if (nodes.has_labels) {
    if (classes > 0 && !nodes.class_names.empty())
      throw InputError("apply_node_file(classes)", "the labels of " + nodes.path + " are class names: their number (" +
                                        std::to_string(nodes.num_classes) + ") is the class count");
    if (classes > 0 && classes < nodes.num_classes)
      throw InputError("apply_node_file(classes)", std::to_string(classes) + " is below the " + std::to_string(nodes.num_classes) +
                                        " classes of the labels in " + nodes.path + " (max label + 1)");
    g.labels = nodes.labels;
    g.num_classes = std::max({std::int32_t{1}, nodes.num_classes, classes});
  } else if (classes > 0) {
    g.num_classes = classes;
  }
  if (nodes.has_split) {
    for (std::size_t i = 0; i < n; ++i) {
      g.train_mask[i] = nodes.split[i] == SplitOf::kTrain;
      g.val_mask[i] = nodes.split[i] == SplitOf::kVal;
      g.test_mask[i] = nodes.split[i] == SplitOf::kTest;
    }
  }
  if (!nodes.feature_names.empty()) {
    g.num_features = static_cast<index_t>(nodes.feature_names.size());
    g.features = nodes.features;
  }
}

}  // namespace plexus
