// Predictions files (docs/predictions.md): write_predictions_h5. Row k of the file is node k,
// whatever rank predicted it: the rows are first moved to the rank whose block of [0, N) holds
// them (one all-to-all over the grid's world communicator), then every rank writes its
// contiguous block collectively (io/hdf5/collective_write.hpp).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/hdf5/collective_write.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/shard.hpp"
#include "plexus/gnn_trainer.hpp"
#include "src/comm/rank_exchange.hpp"

namespace plexus {
namespace {

constexpr std::int32_t kPredictionsVersion = 1;

// The predictions of the nodes [begin, begin + n) of the graph, row k being node begin + k.
struct NodeBlock {
  index_t begin = 0, n = 0;  // nodes [begin, begin + n), in order
  std::vector<std::int32_t> classes;
  std::vector<float> logits;  // n × classes, row-major
};

// The rank whose block of a block split of [0, N) over `ranks` ranks holds a node.
class NodeOwners {
 public:
  NodeOwners(index_t num_nodes, int ranks) : bounds_(static_cast<std::size_t>(ranks) + 1) {
    for (int r = 0; r < ranks; ++r) bounds_[static_cast<std::size_t>(r)] = block_range(num_nodes, ranks, r).begin;
    bounds_.back() = num_nodes;
  }
  int operator()(index_t node) const {
    return static_cast<int>(std::upper_bound(bounds_.begin(), bounds_.end(), node) - bounds_.begin()) - 1;
  }

 private:
  std::vector<index_t> bounds_;
};

// Where each destination's records start in a buffer ordered by destination.
std::vector<std::size_t> displacements(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> d(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) d[r] = d[r - 1] + counts[r - 1];
  return d;
}

// Records of `record` bytes, `send_counts[r]` of them for rank r in rank order, sent to their
// ranks: the records received, in rank order.
std::vector<char> exchange(const std::vector<char>& send, const std::vector<std::size_t>& send_counts,
                           std::size_t record, const comm::Ranks& ranks) {
  std::vector<std::size_t> send_bytes(send_counts);
  for (std::size_t& b : send_bytes) b *= record;
  const std::vector<std::size_t> recv_bytes = ranks.all_to_all_counts(send_bytes);
  std::vector<char> received(std::accumulate(recv_bytes.begin(), recv_bytes.end(), std::size_t{0}));
  ranks.comm.all_to_all_bytes(send.data(), send_bytes, received.data(), recv_bytes);
  return received;
}

// Rows of a per-node output moved to the rank whose block of the nodes holds them (one record
// each: node id, then its values), in node order: the block's [n × width] values.
// `what` names the output in the logic errors (an id out of range or twice is a bug upstream).
std::vector<float> redistribute_rows(const NodeRows& rows, index_t num_nodes, const comm::Ranks& ranks,
                                     const std::string& what) {
  const int rank = ranks.rank;
  const NodeOwners owner(num_nodes, ranks.size);
  const Range mine = block_range(num_nodes, ranks.size, rank);
  const auto width = static_cast<std::size_t>(rows.width), local = rows.node_ids.size();
  if (rows.values.size() != local * width) throw std::logic_error(what + ": sizes of node_ids and values disagree");
  for (const index_t id : rows.node_ids)
    if (id < 0 || id >= num_nodes)
      throw std::logic_error(what + ": node id " + std::to_string(id) + " outside [0, " + std::to_string(num_nodes) + ")");
  const std::size_t record = sizeof(std::int64_t) + width * sizeof(float);
  std::vector<std::size_t> send_counts(static_cast<std::size_t>(ranks.size), 0);
  for (const index_t id : rows.node_ids) ++send_counts[static_cast<std::size_t>(owner(id))];
  std::vector<char> send(local * record);
  std::vector<std::size_t> next = displacements(send_counts);
  for (std::size_t k = 0; k < local; ++k) {
    char* at = send.data() + next[static_cast<std::size_t>(owner(rows.node_ids[k]))]++ * record;
    const std::int64_t id = rows.node_ids[k];
    std::memcpy(at, &id, sizeof id);
    std::memcpy(at + sizeof id, rows.values.data() + k * width, width * sizeof(float));
  }
  const std::vector<char> received = exchange(send, send_counts, record, ranks);
  const auto n = static_cast<std::size_t>(mine.size());
  if (received.size() / record != n)
    throw std::logic_error(what + ": " + std::to_string(received.size() / record) + " rows for the " +
                           std::to_string(n) + " nodes of rank " + std::to_string(rank));
  std::vector<float> out(n * width);
  std::vector<bool> seen(n, false);
  for (std::size_t k = 0; k < n; ++k) {
    std::int64_t id = 0;
    std::memcpy(&id, received.data() + k * record, sizeof id);
    if (id < mine.begin || id >= mine.end || seen[static_cast<std::size_t>(id - mine.begin)])
      throw std::logic_error(what + ": node " + std::to_string(id) + " on rank " + std::to_string(rank) + " twice or out of place");
    seen[static_cast<std::size_t>(id - mine.begin)] = true;
    std::memcpy(out.data() + static_cast<std::size_t>(id - mine.begin) * width, received.data() + k * record + sizeof id,
                width * sizeof(float));
  }
  return out;
}

// Every node's predictions moved to the rank whose block of a block split of [0, N) over the
// ranks holds it (redistribute_rows), in node order: the class travels as one more 4-byte
// column before the logits, its bits copied (never converted to a float).
NodeBlock redistribute(const Predictions& p, index_t num_nodes, const comm::Ranks& ranks) {
  const std::size_t local = p.node_ids.size(), classes = static_cast<std::size_t>(p.num_classes);
  if (p.classes.size() != local || p.logits.size() != local * classes)
    throw std::logic_error("predictions: sizes of node_ids, classes and logits disagree");
  const std::size_t width = classes + 1;
  NodeRows rows{p.node_ids, static_cast<index_t>(width), std::vector<float>(local * width)};
  for (std::size_t k = 0; k < local; ++k) {
    std::memcpy(rows.values.data() + k * width, &p.classes[k], sizeof(std::int32_t));
    std::copy_n(p.logits.data() + k * classes, classes, rows.values.data() + k * width + 1);
  }
  const std::vector<float> moved = redistribute_rows(rows, num_nodes, ranks, "predictions");
  const Range mine = block_range(num_nodes, ranks.size, ranks.rank);
  NodeBlock b;
  b.begin = mine.begin;
  b.n = mine.size();
  const auto n = static_cast<std::size_t>(b.n);
  b.classes.resize(n);
  b.logits.resize(n * classes);
  for (std::size_t k = 0; k < n; ++k) {
    std::memcpy(&b.classes[k], moved.data() + k * width, sizeof(std::int32_t));
    std::copy_n(moved.data() + k * width + 1, classes, b.logits.data() + k * classes);
  }
  return b;
}

// One GAT layer's attention rows whose dst this rank's block of the nodes holds, sorted by
// (dst, src), and where they start among all the layer's rows.
struct AttentionRows {
  std::vector<std::int64_t> dst, src;
  std::vector<float> alpha;  // rows × heads
  std::uint64_t first = 0, total = 0;
};

// The rows moved to the rank of their dst (one record each: dst, src, then the heads' α), sorted
// there; `first` and `total` by a scan of the row counts. An entry reported twice or a node id
// out of range is a logic error (every entry of Â is reported once).
AttentionRows redistribute_attention(const EdgeAttention& a, index_t num_nodes, const comm::Ranks& ranks) {
  const NodeOwners owner(num_nodes, ranks.size);
  const auto heads = static_cast<std::size_t>(a.heads);
  const std::size_t local = a.dst.size();
  if (a.src.size() != local || a.alpha.size() != local * heads)
    throw std::logic_error("attention: sizes of dst, src and alpha disagree");
  for (std::size_t k = 0; k < local; ++k)
    if (a.dst[k] < 0 || a.dst[k] >= num_nodes || a.src[k] < 0 || a.src[k] >= num_nodes)
      throw std::logic_error("attention: an edge " + std::to_string(a.src[k]) + " -> " + std::to_string(a.dst[k]) +
                             " outside [0, " + std::to_string(num_nodes) + ")");
  const std::size_t record = 2 * sizeof(std::int64_t) + heads * sizeof(float);
  std::vector<std::size_t> send_counts(static_cast<std::size_t>(ranks.size), 0);
  for (const index_t d : a.dst) ++send_counts[static_cast<std::size_t>(owner(d))];
  std::vector<char> send(local * record);
  std::vector<std::size_t> next = displacements(send_counts);
  for (std::size_t k = 0; k < local; ++k) {
    char* at = send.data() + next[static_cast<std::size_t>(owner(a.dst[k]))]++ * record;
    const std::int64_t ends[2] = {a.dst[k], a.src[k]};
    std::memcpy(at, ends, sizeof ends);
    std::memcpy(at + sizeof ends, a.alpha.data() + k * heads, heads * sizeof(float));
  }
  const std::vector<char> received = exchange(send, send_counts, record, ranks);
  const std::size_t rows = received.size() / record;
  std::vector<std::array<std::int64_t, 2>> ends(rows);
  for (std::size_t k = 0; k < rows; ++k) std::memcpy(ends[k].data(), received.data() + k * record, 16);
  std::vector<std::size_t> order(rows);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return ends[x] < ends[y]; });
  AttentionRows out;
  out.dst.resize(rows);
  out.src.resize(rows);
  out.alpha.resize(rows * heads);
  for (std::size_t k = 0; k < rows; ++k) {
    const std::size_t from = order[k];
    if (k > 0 && ends[from] == ends[order[k - 1]])
      throw std::logic_error("attention: the entry " + std::to_string(ends[from][1]) + " -> " +
                             std::to_string(ends[from][0]) + " reported twice");
    out.dst[k] = ends[from][0];
    out.src[k] = ends[from][1];
    std::memcpy(out.alpha.data() + k * heads, received.data() + from * record + 16, heads * sizeof(float));
  }
  out.first = static_cast<std::uint64_t>(ranks.exscan(static_cast<index_t>(rows)));
  out.total = static_cast<std::uint64_t>(ranks.sum(static_cast<index_t>(rows)));
  return out;
}

// The original ids of the block's nodes where `ids_from` (the graph file) stores them
// (/node_ids), else the block's own ids. Every rank reads its slice; a rank that fails ends
// every rank with its message, before the collective writes.
// Or, given `node_ids` (every node's, from memory), the block's slice of them, once every rank's
// list was found to be of num_nodes distinct ids.
std::vector<std::int64_t> row_ids(const NodeBlock& block, index_t num_nodes, const std::string& ids_from,
                                  const std::vector<std::int64_t>& node_ids, const comm::Ranks& ranks) {
  std::vector<std::int64_t> ids;
  std::exception_ptr error;
  if (!node_ids.empty()) {
    const char* where = "PredictionsFileOptions.node_ids";
    std::string problem;
    if (!ids_from.empty()) problem = "given with ids_from; give one of them";
    else if (node_ids.size() != static_cast<std::size_t>(num_nodes))
      problem = std::to_string(node_ids.size()) + " ids for " + std::to_string(num_nodes) + " nodes";
    else {
      std::vector<std::int64_t> sorted = node_ids;
      std::sort(sorted.begin(), sorted.end());
      const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
      if (twice != sorted.end()) problem = "id " + std::to_string(*twice) + " names two nodes";
    }
    const int bad = ranks.first_failed(!problem.empty());
    if (!problem.empty()) throw InputError(where, problem);
    if (bad >= 0) throw InputError(where, "rank " + std::to_string(bad) + "'s list is wrong");
    return {node_ids.begin() + block.begin, node_ids.begin() + block.begin + block.n};
  }
  if (!ids_from.empty()) {
    try {
      ids = read_original_node_ids_h5(ids_from, block.begin, block.n);
    } catch (const std::exception&) {
      error = std::current_exception();
    }
  }
  const int bad = ranks.first_failed(error != nullptr);
  if (error) std::rethrow_exception(error);
  if (bad >= 0) throw InputError(ids_from, "/node_ids: rank " + std::to_string(bad) + " could not read it");
  if (ids.empty()) {
    ids.resize(static_cast<std::size_t>(block.n));
    std::iota(ids.begin(), ids.end(), std::int64_t{block.begin});
  }
  return ids;
}

void write_file(const Predictions& p, index_t num_nodes, std::int64_t epochs_done, ProcessGrid& grid,
                const std::string& path, const std::string& ids_from, const std::vector<std::int64_t>& node_ids,
                const std::vector<EdgeAttention>& attention, const std::vector<NodeRows>& embeddings) {
  const comm::Ranks ranks(grid.world());
  const NodeBlock block = redistribute(p, num_nodes, ranks);
  std::vector<std::vector<float>> hidden;
  for (const NodeRows& e : embeddings) hidden.push_back(redistribute_rows(e, num_nodes, ranks, "embeddings"));
  std::vector<AttentionRows> layers;
  for (const EdgeAttention& a : attention) layers.push_back(redistribute_attention(a, num_nodes, ranks));
  const std::vector<std::int64_t> ids = row_ids(block, num_nodes, ids_from, node_ids, ranks);
  const auto n = static_cast<hsize_t>(num_nodes), c = static_cast<hsize_t>(p.num_classes);
  const auto r0 = static_cast<hsize_t>(block.begin), rows = static_cast<hsize_t>(block.n);
  h5::write_collectively(path, grid.world(), [&](h5::Writer& w) {
    w.string_attr("format", "plexus-predictions");
    w.scalar_attr<std::int32_t>("version", H5T_STD_I32LE, kPredictionsVersion);
    w.scalar_attr<std::int64_t>("num_nodes", H5T_STD_I64LE, num_nodes);
    w.scalar_attr<std::int64_t>("num_classes", H5T_STD_I64LE, p.num_classes);
    w.scalar_attr<std::int64_t>("epochs_done", H5T_STD_I64LE, epochs_done);
    w.block_dataset<std::int64_t, 1>("/node_id", H5T_STD_I64LE, {n}, {r0}, {rows}, ids.data(), true);
    w.block_dataset<std::int32_t, 1>("/class", H5T_STD_I32LE, {n}, {r0}, {rows}, block.classes.data(), true);
    w.block_dataset<float, 2>("/logits", H5T_IEEE_F32LE, {n, c}, {r0, 0}, {rows, c}, block.logits.data(), true);
    if (!hidden.empty()) {
      w.group("/embeddings");
      for (std::size_t l = 0; l < hidden.size(); ++l) {
        const auto width = static_cast<hsize_t>(embeddings[l].width);
        w.block_dataset<float, 2>(("/embeddings/layer" + std::to_string(l)).c_str(), H5T_IEEE_F32LE, {n, width}, {r0, 0},
                                  {rows, width}, hidden[l].data(), true);
      }
    }
    if (layers.empty()) return;
    w.group("/attention");
    for (std::size_t k = 0; k < layers.size(); ++k) {
      const AttentionRows& a = layers[k];
      const std::string g = "/attention/layer" + std::to_string(attention[k].layer);
      const auto e = static_cast<hsize_t>(a.total), e0 = static_cast<hsize_t>(a.first);
      const auto mine = static_cast<hsize_t>(a.dst.size()), h = static_cast<hsize_t>(attention[k].heads);
      w.group(g.c_str());
      w.scalar_attr<std::int64_t>("heads", H5T_STD_I64LE, attention[k].heads, g.c_str());
      w.block_dataset<std::int64_t, 1>((g + "/dst").c_str(), H5T_STD_I64LE, {e}, {e0}, {mine}, a.dst.data(), true);
      w.block_dataset<std::int64_t, 1>((g + "/src").c_str(), H5T_STD_I64LE, {e}, {e0}, {mine}, a.src.data(), true);
      w.block_dataset<float, 2>((g + "/alpha").c_str(), H5T_IEEE_F32LE, {e, h}, {e0, 0}, {mine, h}, a.alpha.data(), true);
    }
  });
}

}  // namespace

void write_predictions_h5(const Predictions& p, index_t num_nodes, std::int64_t epochs_done, ProcessGrid& grid,
                          const std::string& path, const std::string& ids_from,
                          const std::vector<EdgeAttention>& attention, const std::vector<NodeRows>& embeddings) {
  write_file(p, num_nodes, epochs_done, grid, path, ids_from, {}, attention, embeddings);
}

void write_predictions_h5(const Predictions& p, index_t num_nodes, std::int64_t epochs_done, ProcessGrid& grid,
                          const std::string& path, const PredictionsFileOptions& o) {
  write_file(p, num_nodes, epochs_done, grid, path, o.ids_from, o.node_ids, o.attention, o.embeddings);
}

}  // namespace plexus
