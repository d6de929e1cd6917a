// `plexus predict`: a trained GCN (a model file of plexus train --save-model, or a checkpoint)
// applied to every node of a graph; the predicted classes and the last layer's outputs written
// as one HDF5 file (docs/predictions.md), every rank writing its contiguous block of nodes
// collectively (MPI-IO), nothing gathered to one rank.
#include <mpi.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/files.hpp"
#include "io/hdf5_collective_write.hpp"
#include "io/hdf5_writer.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"
#include "plexus/trainer.hpp"
#include "src/cli/commands.hpp"

namespace plexus::cli {

namespace {

constexpr std::int32_t kPredictionsVersion = 1;

struct PredictOptions {
  std::string data, checkpoint, out, backend = "auto", grid = "1x1x1", memory_per_rank;
  int threads = 0;
  bool quiet = false;
};

// The predictions of the nodes [begin, begin + n) of the graph, row k being node begin + k.
struct NodeBlock {
  index_t begin = 0, n = 0;
  std::vector<index_t> ids;
  std::vector<std::int32_t> classes;
  std::vector<float> logits;  // n × classes, row-major
};

// A missing or unreadable --checkpoint is named as such before anything is loaded.
void require_checkpoint(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) throw InputError(path, "no such file (--checkpoint)");
  if (st.type() == std::filesystem::file_type::directory) throw InputError(path, "is a directory, not a model file");
  io::require_regular_input(path, "HDF5");
}

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
      throw std::logic_error(fmt::format("predictions: node id {} outside [0, {})", id, num_nodes));

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
      throw InputError("--grid", fmt::format("{} nodes on one rank exceed what one MPI message may count ({}); use more ranks",
                                             std::max<index_t>(static_cast<index_t>(local), mine.size()), INT_MAX));
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
      throw std::logic_error(fmt::format("predictions: rank {} receives {} rows for its {} nodes", rank, total, mine.size()));
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
    throw std::logic_error(fmt::format("predictions: {} rows for the {} nodes of rank {}", received_rows, n, rank));
  b.ids.assign(n, -1);
  b.classes.resize(n);
  b.logits.resize(n * static_cast<std::size_t>(classes));
  for (std::size_t k = 0; k < received_rows; ++k) {
    const char* at = received.data() + k * record;
    std::int64_t id = 0;
    std::memcpy(&id, at, sizeof id);
    if (id < mine.begin || id >= mine.end || b.ids[static_cast<std::size_t>(id - mine.begin)] != -1)
      throw std::logic_error(fmt::format("predictions: node {} on rank {} (its nodes [{}, {})) twice or out of place",
                                         id, rank, mine.begin, mine.end));
    const auto row = static_cast<std::size_t>(id - mine.begin);
    b.ids[row] = id;
    std::memcpy(&b.classes[row], at + 8, sizeof(std::int32_t));
    std::memcpy(b.logits.data() + row * static_cast<std::size_t>(classes), at + 12, classes * sizeof(float));
  }
  return b;
}

void run_predict(PredictOptions& o) {
  o.threads = threads_per_rank(o.threads);
  if (o.data.empty()) o.data = default_dataset();
  const std::size_t memory_limit = parse_memory_budget(o.memory_per_rank);
  auto grid = ProcessGrid::create(parse_grid(o.grid));
  const bool root = grid->rank() == 0;
  const bool quiet = o.quiet || !root;
  // Inputs and the output are checked before anything is loaded or computed (io/files.hpp).
  require_checkpoint(o.checkpoint);
  if (root) io::check_output(o.out, io::OutputNeeds::Seekable, {o.data, o.checkpoint});

  // The model: its widths and options from the file, so that none need repeating here.
  const GcnModelInfo model = read_gcn_model_info_h5(o.checkpoint);
  const GraphInfo graph = read_graph_info_h5(o.data);
  if (model.dims.size() < 2 || model.dims.front() != graph.num_features || model.dims.back() != graph.num_classes)
    throw InputError(o.checkpoint,
                     fmt::format("a model of {} features and {} classes does not fit {} ({} features, {} classes)",
                                 model.dims.empty() ? 0 : model.dims.front(), model.dims.empty() ? 0 : model.dims.back(),
                                 o.data, graph.num_features, graph.num_classes));
  TrainConfig cfg = model.config;

  set_rank_memory_budget(memory_limit);
  RunBackend run = make_run_backend(o.backend, o.threads, /*profile=*/false, *grid);
  Backend& backend = run.get();
  backend.set_memory_limit(memory_limit);
  check_train_memory(o.data, cfg, grid->shape(), /*whole_graph=*/false);  // before the load

  const auto t0 = std::chrono::steady_clock::now();
  GcnShards shards = load_shards_h5(o.data, *grid, cfg.layers, cfg.hidden, cfg.shard_adj);
  const index_t num_nodes = shards.num_nodes;
  GcnTrainer trainer(std::move(shards), cfg, backend, *grid);
  trainer.load(o.checkpoint);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto t1 = std::chrono::steady_clock::now();
  NodeBlock block;
  index_t classes = 0;
  {
    const Predictions p = trainer.predict();
    classes = p.num_classes;
    block = redistribute(p, num_nodes, grid->mpi_comm());
  }
  const int epochs = trainer.epochs_done();
  // The accuracies of the loaded weights on the data's splits (a second forward pass; every
  // rank takes part, so it follows the user's --quiet, not rank 0's).
  EvalMetrics acc;
  if (!o.quiet) acc = trainer.evaluate();

  const auto n = static_cast<hsize_t>(num_nodes), c = static_cast<hsize_t>(classes);
  const auto r0 = static_cast<hsize_t>(block.begin), rows = static_cast<hsize_t>(block.n);
  h5::write_collectively(o.out, grid->mpi_comm(), [&](h5::Writer& w) {
    w.string_attr("format", "plexus-predictions");
    w.scalar_attr<std::int32_t>("version", H5T_STD_I32LE, kPredictionsVersion);
    w.scalar_attr<std::int64_t>("num_nodes", H5T_STD_I64LE, num_nodes);
    w.scalar_attr<std::int64_t>("num_classes", H5T_STD_I64LE, classes);
    w.scalar_attr<std::int64_t>("epochs_done", H5T_STD_I64LE, epochs);
    w.block_dataset<std::int64_t, 1>("/node_id", H5T_STD_I64LE, {n}, {r0}, {rows}, block.ids.data(), true);
    w.block_dataset<std::int32_t, 1>("/class", H5T_STD_I32LE, {n}, {r0}, {rows}, block.classes.data(), true);
    w.block_dataset<float, 2>("/logits", H5T_IEEE_F32LE, {n, c}, {r0, 0}, {rows, c}, block.logits.data(), true);
  });
  const double predict_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  if (quiet) return;
  spdlog::info("{}: {} nodes, {} classes; model {} ({} layers, hidden {}, {} epochs); backend {}, grid {} "
               "(loaded in {:.2f} s)",
               o.data, num_nodes, classes, o.checkpoint, cfg.layers, cfg.hidden, epochs, backend.name(),
               grid->shape().str(), load_s);
  fmt::print("wrote {} ({} nodes x {} classes) in {:.2f} s; accuracy train {:.4f}  val {:.4f}  test {:.4f}\n", o.out,
             num_nodes, classes, predict_s, acc.train_acc, acc.val_acc, acc.test_acc);
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto opts = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand(
      "predict", "Apply a trained GCN (a --save-model file or checkpoint) to every node; write classes and logits");
  cmd->add_option("--data", opts->data, "Dataset in Plexus format v1 (HDF5); default: the bundled Cora");
  cmd->add_option("--checkpoint", opts->checkpoint,
                  "GCN model file (plexus train --save-model, docs/gcn-model.md); its layers and widths are used")
      ->required();
  cmd->add_option("--out,-o", opts->out, "Output file (HDF5, docs/predictions.md)")->required();
  cmd->add_option("--grid", opts->grid, "Process grid XxYxZ (product = number of MPI ranks)")->capture_default_str();
  cmd->add_option("--backend", opts->backend, "Kernel backend")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "reference"}))
      ->capture_default_str();
  cmd->add_option("--threads", opts->threads, "CPU threads per rank (0 = the node's cores divided among its ranks)")
      ->capture_default_str();
  cmd->add_option("--memory-per-rank", opts->memory_per_rank,
                  "Refuse to allocate past this many bytes per rank (e.g. 512M, 2G)");
  cmd->add_flag("--quiet,-q", opts->quiet, "Print nothing (and skip the accuracy pass)");
  cmd->callback([opts] { run_predict(*opts); });
}

}  // namespace plexus::cli
