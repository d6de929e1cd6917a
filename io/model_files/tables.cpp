// gather_table and write_table_csv (plexus/tables.hpp): each output's rows gathered by node id
// (a gather or all-gather of id + values records over the grid's world communicator), then
// placed by id; the classes recomputed from the whole logits exactly as predict() computes them.
#include "plexus/tables.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/files/safe_files.hpp"
#include "plexus/error.hpp"
#include "src/comm/rank_exchange.hpp"

namespace plexus {
namespace {

// Every rank's rows of one output in node order ([N × width]) on `root`, or on every rank
// (root < 0); empty elsewhere. Each node must come exactly once.
std::vector<float> gather_rows(const NodeRows& mine, index_t num_nodes, const comm::Ranks& ranks, int root) {
  const auto width = static_cast<std::size_t>(mine.width), record = width + 2;  // id as two floats' bits
  std::vector<float> send(mine.node_ids.size() * record);
  for (std::size_t k = 0; k < mine.node_ids.size(); ++k) {
    const std::int64_t id = mine.node_ids[k];
    std::memcpy(send.data() + k * record, &id, sizeof id);
    std::copy_n(mine.values.data() + k * width, width, send.data() + k * record + 2);
  }
  std::vector<std::size_t> bytes;
  std::size_t total = 0;
  for (const index_t n : ranks.all(static_cast<index_t>(send.size()))) {
    bytes.push_back(static_cast<std::size_t>(n) * sizeof(float));
    total += static_cast<std::size_t>(n);
  }
  std::vector<float> all;
  if (root < 0 || ranks.rank == root) all.resize(total);
  if (root < 0)
    ranks.comm.all_gather_bytes(send.data(), all.data(), bytes);
  else
    ranks.comm.gather_bytes(send.data(), all.data(), bytes, root);
  if (root >= 0 && ranks.rank != root) return {};
  std::vector<float> out(static_cast<std::size_t>(num_nodes) * width);
  std::vector<bool> seen(static_cast<std::size_t>(num_nodes), false);
  for (std::size_t at = 0; at + record <= all.size(); at += record) {
    std::int64_t id = 0;
    std::memcpy(&id, all.data() + at, sizeof id);
    if (id < 0 || id >= num_nodes || seen[static_cast<std::size_t>(id)])
      throw std::logic_error("gather_table: node " + std::to_string(id) + " twice or out of range");
    seen[static_cast<std::size_t>(id)] = true;
    std::copy_n(all.data() + at + 2, width, out.data() + static_cast<std::size_t>(id) * width);
  }
  if (std::find(seen.begin(), seen.end(), false) != seen.end())
    throw std::logic_error("gather_table: a node's row is missing (not every rank's share was given?)");
  return out;
}

void append_float(std::string& line, float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  line.append(buf, r.ptr);
}

}  // namespace

NodeTable gather_table(const Inference& mine, const GraphData& graph, ProcessGrid& grid, int root) {
  if (root >= grid.size()) throw std::invalid_argument("gather_table: root " + std::to_string(root) + " of " + std::to_string(grid.size()) + " ranks");
  const index_t n = graph.num_nodes;
  NodeTable t;
  const Predictions& p = mine.predictions;
  const comm::Ranks ranks(grid.world());
  std::vector<float> logits = gather_rows(NodeRows{p.node_ids, p.num_classes, p.logits}, n, ranks, root);
  std::vector<std::vector<float>> hidden;
  for (const NodeRows& e : mine.embeddings) hidden.push_back(gather_rows(e, n, ranks, root));
  if (root >= 0 && grid.rank() != root) return t;
  t.num_classes = p.num_classes;
  t.logits = std::move(logits);
  t.ids.resize(static_cast<std::size_t>(n));
  for (index_t k = 0; k < n; ++k)
    t.ids[static_cast<std::size_t>(k)] = graph.node_ids.empty() ? k : graph.node_ids[static_cast<std::size_t>(k)];
  t.classes.resize(static_cast<std::size_t>(n));
  for (index_t k = 0; k < n; ++k) {
    const float* row = t.logits.data() + k * t.num_classes;
    t.classes[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(std::max_element(row, row + t.num_classes) - row);
  }
  for (std::size_t l = 0; l < hidden.size(); ++l) {
    NodeRows e;
    e.width = mine.embeddings[l].width;
    e.node_ids.resize(static_cast<std::size_t>(n));
    for (index_t k = 0; k < n; ++k) e.node_ids[static_cast<std::size_t>(k)] = k;
    e.values = std::move(hidden[l]);
    t.embeddings.push_back(std::move(e));
  }
  return t;
}

NodeTable gather_table(const Predictions& mine, const GraphData& graph, ProcessGrid& grid, int root) {
  Inference i;
  i.predictions = mine;
  return gather_table(i, graph, grid, root);
}

void write_table_csv(const NodeTable& t, const std::string& path) {
  const io::OutputTarget out = io::check_output(path, io::OutputNeeds::Stream);
  std::string text = "id,class";
  for (index_t c = 0; c < t.num_classes; ++c) text += ",logit_" + std::to_string(c);
  for (std::size_t l = 0; l < t.embeddings.size(); ++l)
    for (index_t c = 0; c < t.embeddings[l].width; ++c) text += ",emb" + std::to_string(l) + "_" + std::to_string(c);
  text += '\n';
  for (std::size_t k = 0; k < t.rows(); ++k) {
    text += std::to_string(t.ids[k]) + "," + std::to_string(t.classes[k]);
    for (index_t c = 0; c < t.num_classes; ++c) {
      text += ',';
      append_float(text, t.logits[k * static_cast<std::size_t>(t.num_classes) + static_cast<std::size_t>(c)]);
    }
    for (const NodeRows& e : t.embeddings)
      for (index_t c = 0; c < e.width; ++c) {
        text += ',';
        append_float(text, e.values[k * static_cast<std::size_t>(e.width) + static_cast<std::size_t>(c)]);
      }
    text += '\n';
  }
  io::write_text_output(out, text);
}

}  // namespace plexus
