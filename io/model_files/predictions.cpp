// Predictions files (docs/predictions.md): write_predictions_h5. Row k of the file is node k,
// whatever rank predicted it: the rows are first moved to the rank whose block of [0, N) holds
// them (one MPI_Alltoallv), then every rank writes its contiguous block collectively (MPI-IO).
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/hdf5/collective_write.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/shard.hpp"
#include "plexus/trainer.hpp"

namespace plexus {
namespace {

constexpr std::int32_t kPredictionsVersion = 1;

// The predictions of the nodes [begin, begin + n) of the graph, row k being node begin + k.
struct NodeBlock {
  index_t begin = 0, n = 0;
  std::vector<index_t> ids;
  std::vector<std::int32_t> classes;
  std::vector<float> logits;  // n × classes, row-major
};

// Every node's predictions moved to the rank whose block of a block split of [0, N) over the
// ranks holds it (MPI_Alltoallv over `comm`; no MPI call without one), in node order. Each row
// travels as one record: its id (int64), its class (int32), then its `classes` logits.
NodeBlock redistribute(const Predictions& p, index_t num_nodes, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  if (comm != MPI_COMM_NULL) {
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
  }
  const index_t classes = p.num_classes;
  const Range mine = block_range(num_nodes, ranks, rank);
  std::vector<index_t> bounds(static_cast<std::size_t>(ranks) + 1);
  for (int r = 0; r < ranks; ++r) bounds[static_cast<std::size_t>(r)] = block_range(num_nodes, ranks, r).begin;
  bounds.back() = num_nodes;
  const auto owner = [&](index_t id) {
    return static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), id) - bounds.begin()) - 1;
  };
  const std::size_t local = p.node_ids.size();
  if (p.classes.size() != local || p.logits.size() != local * static_cast<std::size_t>(classes))
    throw std::logic_error("predictions: sizes of node_ids, classes and logits disagree");
  for (const index_t id : p.node_ids)
    if (id < 0 || id >= num_nodes)
      throw std::logic_error("predictions: node id " + std::to_string(id) + " outside [0, " + std::to_string(num_nodes) + ")");

  const std::size_t record = sizeof(std::int64_t) + sizeof(std::int32_t) + static_cast<std::size_t>(classes) * sizeof(float);
  std::vector<char> received;
  std::size_t received_rows = 0;
  if (comm == MPI_COMM_NULL || ranks == 1) {
    received.resize(local * record);
    received_rows = local;
    for (std::size_t k = 0; k < local; ++k) {
      char* at = received.data() + k * record;
      const std::int64_t id = p.node_ids[k];
      std::memcpy(at, &id, sizeof id);
      std::memcpy(at + 8, &p.classes[k], sizeof(std::int32_t));
      std::memcpy(at + 12, p.logits.data() + k * static_cast<std::size_t>(classes), classes * sizeof(float));
    }
  } else {
    // MPI counts are ints (in records): a rank's rows must fit one.
    if (local > static_cast<std::size_t>(INT_MAX) || mine.size() > INT_MAX)
      throw InputError("--grid", std::to_string(std::max<index_t>(static_cast<index_t>(local), mine.size())) +
                                             " nodes on one rank exceed what one MPI message may count (" +
                                             std::to_string(INT_MAX) + "); use more ranks");
    std::vector<int> send_counts(static_cast<std::size_t>(ranks), 0), recv_counts(send_counts.size(), 0);
    for (const index_t id : p.node_ids) ++send_counts[static_cast<std::size_t>(owner(id))];
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
    std::vector<int> send_displs(send_counts.size(), 0), recv_displs(send_counts.size(), 0);
    for (std::size_t r = 1; r < send_counts.size(); ++r) {
      send_displs[r] = send_displs[r - 1] + send_counts[r - 1];
      recv_displs[r] = recv_displs[r - 1] + recv_counts[r - 1];
    }
    std::size_t total = 0;
    for (const int c : recv_counts) total += static_cast<std::size_t>(c);
    if (total != static_cast<std::size_t>(mine.size()))
      throw std::logic_error("predictions: rank " + std::to_string(rank) + " receives " + std::to_string(total) + " rows for its " + std::to_string(mine.size()) + " nodes");
    std::vector<char> send(local * record);
    std::vector<int> next = send_displs;
    for (std::size_t k = 0; k < local; ++k) {
      char* at = send.data() + static_cast<std::size_t>(next[static_cast<std::size_t>(owner(p.node_ids[k]))]++) * record;
      const std::int64_t id = p.node_ids[k];
      std::memcpy(at, &id, sizeof id);
      std::memcpy(at + 8, &p.classes[k], sizeof(std::int32_t));
      std::memcpy(at + 12, p.logits.data() + k * static_cast<std::size_t>(classes), classes * sizeof(float));
    }
    received.resize(total * record);
    received_rows = total;
    MPI_Datatype row_type;
    MPI_Type_contiguous(static_cast<int>(record), MPI_BYTE, &row_type);
    MPI_Type_commit(&row_type);
    MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), row_type, received.data(), recv_counts.data(),
                  recv_displs.data(), row_type, comm);
    MPI_Type_free(&row_type);
  }

  NodeBlock b;
  b.begin = mine.begin;
  b.n = mine.size();
  const auto n = static_cast<std::size_t>(b.n);
  if (received_rows != n)
    throw std::logic_error("predictions: " + std::to_string(received_rows) + " rows for the " + std::to_string(n) + " nodes of rank " + std::to_string(rank));
  b.ids.assign(n, -1);
  b.classes.resize(n);
  b.logits.resize(n * static_cast<std::size_t>(classes));
  for (std::size_t k = 0; k < received_rows; ++k) {
    const char* at = received.data() + k * record;
    std::int64_t id = 0;
    std::memcpy(&id, at, sizeof id);
    if (id < mine.begin || id >= mine.end || b.ids[static_cast<std::size_t>(id - mine.begin)] != -1)
      throw std::logic_error("predictions: node " + std::to_string(id) + " on rank " + std::to_string(rank) + " (its nodes [" + std::to_string(mine.begin) + ", " + std::to_string(mine.end) + ")) twice or out of place");
    const auto row = static_cast<std::size_t>(id - mine.begin);
    b.ids[row] = id;
    std::memcpy(&b.classes[row], at + 8, sizeof(std::int32_t));
    std::memcpy(b.logits.data() + row * static_cast<std::size_t>(classes), at + 12, classes * sizeof(float));
  }
  return b;
}

// The original ids of the block's nodes where `ids_from` (the graph file) stores them
// (/node_ids), else the block's own ids. Every rank reads its slice; a rank that fails ends
// every rank with its message, before the collective writes.
std::vector<std::int64_t> row_ids(const NodeBlock& block, const std::string& ids_from, MPI_Comm comm) {
  std::vector<std::int64_t> ids;
  std::exception_ptr error;
  if (!ids_from.empty()) {
    try {
      ids = read_original_node_ids_h5(ids_from, block.begin, block.n);
    } catch (const std::exception&) {
      error = std::current_exception();
    }
  }
  const int bad = h5::detail::first_failed_rank(error != nullptr, comm);
  if (error) std::rethrow_exception(error);
  if (bad >= 0) throw InputError(ids_from, "/node_ids: rank " + std::to_string(bad) + " could not read it");
  if (ids.empty()) ids.assign(block.ids.begin(), block.ids.end());
  return ids;
}

}  // namespace

void write_predictions_h5(const Predictions& p, index_t num_nodes, std::int64_t epochs_done, const ProcessGrid& grid,
                          const std::string& path, const std::string& ids_from) {
  const NodeBlock block = redistribute(p, num_nodes, grid.mpi_comm());
  const std::vector<std::int64_t> ids = row_ids(block, ids_from, grid.mpi_comm());
  const auto n = static_cast<hsize_t>(num_nodes), c = static_cast<hsize_t>(p.num_classes);
  const auto r0 = static_cast<hsize_t>(block.begin), rows = static_cast<hsize_t>(block.n);
  h5::write_collectively(path, grid.mpi_comm(), [&](h5::Writer& w) {
    w.string_attr("format", "plexus-predictions");
    w.scalar_attr<std::int32_t>("version", H5T_STD_I32LE, kPredictionsVersion);
    w.scalar_attr<std::int64_t>("num_nodes", H5T_STD_I64LE, num_nodes);
    w.scalar_attr<std::int64_t>("num_classes", H5T_STD_I64LE, p.num_classes);
    w.scalar_attr<std::int64_t>("epochs_done", H5T_STD_I64LE, epochs_done);
    w.block_dataset<std::int64_t, 1>("/node_id", H5T_STD_I64LE, {n}, {r0}, {rows}, ids.data(), true);
    w.block_dataset<std::int32_t, 1>("/class", H5T_STD_I32LE, {n}, {r0}, {rows}, block.classes.data(), true);
    w.block_dataset<float, 2>("/logits", H5T_IEEE_F32LE, {n, c}, {r0, 0}, {rows, c}, block.logits.data(), true);
  });
}

}  // namespace plexus
