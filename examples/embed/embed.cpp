// Embedding Plexus: a graph built in memory (no file), trained with GnnTrainer on this process
// or on an MPI job's grid, its predictions read back and scored by the caller.
//
//   embed              one process, grid 1x1x1
//   mpirun -np 4 embed 2x2x1
//
// Built against plexus::plexus alone it is CPU-only and needs no CUDA library to start. Built
// with -DEMBED_CUDA=ON (find_package(plexus COMPONENTS cuda), plexus::cuda) it enables the CUDA
// backend and trains on the GPU when this process sees one, else on the CPU.
//
// The graph: 4 communities of 50 nodes, each node linked to its 6 nearest neighbours in its
// community and to one node of the next community; features are noise plus a weak hint of the
// community, which is the label. Exit status 0 when the test accuracy is at least 0.8.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "plexus/plexus.hpp"  // the whole CPU library's API
#if defined(EMBED_CUDA)
#include "plexus/cuda.hpp"
#endif

namespace {

constexpr int kCommunities = 4, kSize = 50, kFeatures = 8;

// A tiny deterministic generator, so that every rank builds the same graph.
struct Lcg {
  std::uint64_t s = 12345;
  float uniform() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(s >> 40) / static_cast<float>(1ull << 24);
  }
};

plexus::GraphData communities() {
  plexus::GraphData g;
  const int n = kCommunities * kSize;
  g.num_nodes = n;
  g.num_features = kFeatures;
  g.num_classes = kCommunities;
  g.indptr.push_back(0);
  std::vector<std::vector<plexus::index_t>> adj(n);
  for (int v = 0; v < n; ++v) {
    const int c = v / kSize, i = v % kSize;
    for (int d : {1, 2, 3}) {  // ring neighbours, both ways
      adj[v].push_back(c * kSize + (i + d) % kSize);
      adj[v].push_back(c * kSize + (i + kSize - d) % kSize);
    }
  }
  for (int v = 0; v < n; v += 5) {  // a few edges across communities, both ways
    const int u = (v + kSize + 7) % n;
    adj[v].push_back(u);
    adj[u].push_back(v);
  }
  for (auto& row : adj) {  // CSR rows sorted by column
    std::sort(row.begin(), row.end());
    g.indices.insert(g.indices.end(), row.begin(), row.end());
    g.indptr.push_back(static_cast<plexus::index_t>(g.indices.size()));
  }
  Lcg rng;
  for (int v = 0; v < n; ++v) {
    const int c = v / kSize;
    for (int f = 0; f < kFeatures; ++f) g.features.push_back(rng.uniform() + (f == c ? 0.5f : 0.0f));
    g.labels.push_back(c);
    const int r = v % 5;  // 20 % train, 20 % validation, 60 % test
    g.train_mask.push_back(r == 0);
    g.val_mask.push_back(r == 1);
    g.test_mask.push_back(r >= 2);
  }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  try {
    const plexus::GraphData graph = communities();
    plexus::TrainConfig cfg;
    cfg.epochs = 100;
    cfg.hidden = 16;
    const plexus::GridShape shape = plexus::parse_grid(argc > 1 ? argv[1] : std::to_string(size) + "x1x1");
    auto grid = plexus::ProcessGrid::from_mpi(shape, 1, MPI_COMM_WORLD);
#if defined(EMBED_CUDA)
    plexus::cuda::enable();  // make_cuda_backend and cuda_available reach the CUDA library
    const int gpus = plexus::cuda_device_count();
    auto backend = gpus ? plexus::make_cuda_backend(plexus::ProcessGrid::node_placement().local_rank % gpus)
                        : plexus::make_cpu_backend();
    // Device tensors cross ranks through host copies over MPI (safe when ranks share a GPU);
    // with a GPU per rank, grid->use_nccl(*backend) gives each axis an NCCL communicator.
    if (gpus && grid->size() > 1) grid->stage_through_host(*backend);
#else
    auto backend = plexus::make_cpu_backend();
#endif
    if (rank == 0) std::printf("backend %s (this program can make: %s)\n", backend->name().c_str(), plexus::compiled_backends());

    plexus::GnnTrainer trainer(graph, cfg, *backend, *grid);
    for (int e = 0; e < cfg.epochs; ++e) {
      const plexus::EpochMetrics m = trainer.epoch();
      if (rank == 0 && (e + 1) % 25 == 0)
        std::printf("epoch %3d  loss %.4f  val acc %.3f\n", e + 1, m.loss, m.val_acc);
    }

    // Predictions for this rank's nodes, by node id; count the correct test nodes over ranks,
    // through the grid's world communicator (the process group every API of the library takes).
    const plexus::Predictions p = trainer.predict();
    std::int64_t counts[2] = {0, 0};  // correct, test nodes
    for (std::size_t k = 0; k < p.node_ids.size(); ++k) {
      const auto v = static_cast<std::size_t>(p.node_ids[k]);
      if (!graph.test_mask[v]) continue;
      ++counts[1];
      counts[0] += p.classes[k] == graph.labels[v];
    }
    grid->world().all_reduce(counts, 2, plexus::ReduceOp::Sum);
    const double accuracy = static_cast<double>(counts[0]) / static_cast<double>(counts[1]);
    const plexus::EvalMetrics e = trainer.evaluate();
    if (rank == 0)
      std::printf("grid %s: test accuracy %.3f from the predictions (%lld of %lld), %.3f reported by evaluate()\n",
                  shape.str().c_str(), accuracy, static_cast<long long>(counts[0]), static_cast<long long>(counts[1]),
                  e.test_acc);
    status = accuracy >= 0.8 && accuracy == e.test_acc ? 0 : 1;
  } catch (const plexus::InputError& e) {
    std::fprintf(stderr, "embed: %s\n", e.message().c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);  // the library throws; ending the job is the caller's choice
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
