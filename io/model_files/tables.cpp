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
// (root < 0); empty elsewhere. Each node must come exactly once. With `labels` (one per row of
// `mine`), each node's label lands in *placed_labels, in node order, alongside.
std::vector<float> gather_rows(const NodeRows& mine, index_t num_nodes, const comm::Ranks& ranks, int root,
                               const std::vector<std::int64_t>* labels = nullptr,
                               std::vector<std::int64_t>* placed_labels = nullptr) {
  const std::size_t width = static_cast<std::size_t>(mine.width), head = labels ? 4 : 2;  // ids as two floats' bits
  const std::size_t record = width + head;
  std::vector<float> send(mine.node_ids.size() * record);
  for (std::size_t k = 0; k < mine.node_ids.size(); ++k) {
    const std::int64_t id = mine.node_ids[k];
    std::memcpy(send.data() + k * record, &id, sizeof id);
    if (labels) std::memcpy(send.data() + k * record + 2, &(*labels)[k], sizeof id);
    std::copy_n(mine.values.data() + k * width, width, send.data() + k * record + head);
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
  if (placed_labels) placed_labels->assign(static_cast<std::size_t>(num_nodes), 0);
  std::vector<bool> seen(static_cast<std::size_t>(num_nodes), false);
  for (std::size_t at = 0; at + record <= all.size(); at += record) {
    std::int64_t id = 0;
    std::memcpy(&id, all.data() + at, sizeof id);
    if (id < 0 || id >= num_nodes || seen[static_cast<std::size_t>(id)])
      throw InputError("gather_table", "node " + std::to_string(id) + "'s row " +
                                           (id < 0 || id >= num_nodes ? "is outside the graph's " + std::to_string(num_nodes) + " nodes"
                                                                      : std::string("came twice")) +
                                           " (every rank must pass its share of one prediction)");
    seen[static_cast<std::size_t>(id)] = true;
    if (placed_labels) std::memcpy(&(*placed_labels)[static_cast<std::size_t>(id)], all.data() + at + 2, sizeof id);
    std::copy_n(all.data() + at + head, width, out.data() + static_cast<std::size_t>(id) * width);
  }
  const auto missing = std::find(seen.begin(), seen.end(), false);
  if (missing != seen.end())
    throw InputError("gather_table", "node " + std::to_string(missing - seen.begin()) +
                                         "'s row is missing (every rank must pass its share of one prediction)");
  return out;
}

// Throws InputError(where, why) on every rank, with the first failing rank's `why`, when some
// rank's `why` is not empty.
void agree_on(const comm::Ranks& ranks, const std::string& why, const std::string& where) {
  const int first = ranks.first_failed(!why.empty());
  if (first < 0) return;
  throw InputError(where, ranks.broadcast(why, first));
}

NodeTable gather(const Inference& mine, index_t n, const std::vector<std::int64_t>& labels, ProcessGrid& grid, int root) {
  NodeTable t;
  const Predictions& p = mine.predictions;
  const comm::Ranks ranks(grid.world());
  std::vector<std::int64_t> ids;
  std::vector<float> logits = gather_rows(NodeRows{p.node_ids, p.num_classes, p.logits}, n, ranks, root, &labels, &ids);
  std::vector<std::vector<float>> hidden;
  for (const NodeRows& e : mine.embeddings) hidden.push_back(gather_rows(e, n, ranks, root));
  if (root >= 0 && grid.rank() != root) {
    t.rows_on_rank = root;
    return t;
  }
  t.num_classes = p.num_classes;
  t.logits = std::move(logits);
  t.ids = std::move(ids);
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

void check_root(int root, ProcessGrid& grid) {
  if (root < -1 || root >= grid.size())
    throw InputError("gather_table", "root " + std::to_string(root) + " is not a rank of the grid's " +
                                         std::to_string(grid.size()) + " (or -1: every rank)");
}

void append_float(std::string& line, float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  line.append(buf, r.ptr);
}

}  // namespace

NodeTable gather_table(const Inference& mine, ProcessGrid& grid, int root) {
  check_root(root, grid);
  const Predictions& p = mine.predictions;
  const comm::Ranks ranks(grid.world());
  agree_on(ranks,
           p.ids.size() == p.node_ids.size()
               ? std::string()
               : "rank " + std::to_string(ranks.rank) +
                     "'s predictions carry no node ids (made on shards): pass the graph they were made on",
           "Predictions.ids");
  return gather(mine, ranks.sum(static_cast<index_t>(p.node_ids.size())), p.ids, grid, root);
}

NodeTable gather_table(const Predictions& mine, ProcessGrid& grid, int root) {
  Inference i;
  i.predictions = mine;
  return gather_table(i, grid, root);
}

NodeTable gather_table(const Inference& mine, const GraphData& graph, ProcessGrid& grid, int root) {
  check_root(root, grid);
  const Predictions& p = mine.predictions;
  const comm::Ranks ranks(grid.world());
  const index_t n = graph.num_nodes;
  // Each row's id from the graph, checked against the id the row carries: another graph (fewer
  // nodes, or the same nodes in another order) is refused, not used to label the rows.
  std::vector<std::int64_t> ids(p.node_ids.size());
  std::string why;
  const bool carried = p.ids.size() == p.node_ids.size();
  for (std::size_t k = 0; k < p.node_ids.size() && why.empty(); ++k) {
    const index_t node = p.node_ids[k];
    if (node < 0 || node >= n) {
      why = "GraphData has " + std::to_string(n) + " nodes, the predictions are of node " + std::to_string(node) +
            " too: not the graph they were made on";
      break;
    }
    ids[k] = graph.node_ids.size() == static_cast<std::size_t>(n) ? graph.node_ids[static_cast<std::size_t>(node)] : node;
    if (carried && ids[k] != p.ids[k])
      why = "GraphData's node " + std::to_string(node) + " has id " + std::to_string(ids[k]) +
            ", the predictions label it " + std::to_string(p.ids[k]) + ": not the graph they were made on (reordered?)";
  }
  agree_on(ranks, why, "graph");
  const index_t rows = ranks.sum(static_cast<index_t>(p.node_ids.size()));
  if (rows != n)
    throw InputError("graph", "GraphData has " + std::to_string(n) + " nodes, the predictions " + std::to_string(rows) +
                                  " rows: not the graph they were made on (or not every rank's share)");
  return gather(mine, n, ids, grid, root);
}

NodeTable gather_table(const Predictions& mine, const GraphData& graph, ProcessGrid& grid, int root) {
  Inference i;
  i.predictions = mine;
  return gather_table(i, graph, grid, root);
}

void write_table_csv(const NodeTable& t, const std::string& path) {
  if (t.rows_on_rank >= 0)
    throw InputError(path, "this rank's NodeTable holds no rows: gather_table gave them to rank " +
                               std::to_string(t.rows_on_rank) + " (write the table there, or gather with root -1)");
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
