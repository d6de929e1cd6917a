// link_pieces_parity: link prediction on the PyG peer's own splits, composed from the engine's
// pieces (docs/link-prediction.md) until `plexus train --task link` exists — a white-box harness
// (it includes the engine's internal headers), to be replaced by that command.
//
//   link_pieces_parity SPLIT_DIR [--seeds 10] [--grid XxYxZ] [--epochs 100]
//
// SPLIT_DIR is what examples/bench/pyg_link_peer.py --write-split wrote: seed<k>/ for each seed.
// The model is the peer's: a GCN of 2 layers (hidden 128, output 64), the dot decoder, Adam 0.01,
// no dropout or weight decay, the positive training links and as many fresh uniform negatives
// each epoch, binary cross-entropy with logits; the test ROC-AUC at the epoch of the best
// validation ROC-AUC. The grid's ranks run as threads. Prints a line per seed and
// `ENGINE_JSON {...}`. examples/bench/run_link_parity.sh runs both.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "models/gnn_network.hpp"
#include "optim/adam.hpp"
#include "plexus/buffer.hpp"
#include "plexus/graph.hpp"
#include "pmm/dot_link_decoder_3d.hpp"
#include "train/graph_shards.hpp"
#include "train/tasks/link_passes.hpp"
#include "train/tasks/negative_pairs.hpp"

using namespace plexus;

namespace {

template <class T>
std::vector<T> read_binary(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw std::runtime_error("cannot read " + path);
  const auto n = static_cast<std::size_t>(f.tellg()) / sizeof(T);
  std::vector<T> v(n);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(T)));
  return v;
}

// A 2 × n int64 array (PyG's edge_index layout).
NodePairList read_pairs(const std::string& path) {
  const std::vector<std::int64_t> e = read_binary<std::int64_t>(path);
  const std::size_t n = e.size() / 2;
  return {std::vector<std::int64_t>(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(n)),
          std::vector<std::int64_t>(e.begin() + static_cast<std::ptrdiff_t>(n), e.end())};
}

struct SeedResult {
  double best_val = 0, test = 0;
  std::vector<double> losses;
};

SeedResult run_seed(const std::string& dir, std::uint64_t seed, GridShape shape, int epochs) {
  std::ifstream shape_file(dir + "/shape.txt");
  index_t n = 0, f = 0;
  if (!(shape_file >> n >> f)) throw std::runtime_error("cannot read " + dir + "/shape.txt");
  GraphData g;
  g.num_nodes = n;
  g.num_features = f;
  g.num_classes = 64;  // the embedding's width stands where the classes would
  g.features = read_binary<float>(dir + "/features.f32");
  g.labels.assign(static_cast<std::size_t>(n), -1);
  g.train_mask.assign(static_cast<std::size_t>(n), 0);
  g.val_mask = g.test_mask = g.train_mask;
  // The message-passing graph: the training links, both directions; each link once as a positive.
  const NodePairList edges = read_pairs(dir + "/train_edges.i64");
  std::vector<std::vector<index_t>> adj(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < edges.u.size(); ++k) adj[static_cast<std::size_t>(edges.u[k])].push_back(edges.v[k]);
  NodePairList positives;
  g.indptr.push_back(0);
  for (index_t u = 0; u < n; ++u) {
    auto& row = adj[static_cast<std::size_t>(u)];
    std::sort(row.begin(), row.end());
    for (const index_t v : row) {
      g.indices.push_back(v);
      if (u < v) positives.u.push_back(u), positives.v.push_back(v);
    }
    g.indptr.push_back(static_cast<index_t>(g.indices.size()));
  }
  const NodePairList val_pos = read_pairs(dir + "/val_pos.i64"), val_neg = read_pairs(dir + "/val_neg.i64");
  const NodePairList test_pos = read_pairs(dir + "/test_pos.i64"), test_neg = read_pairs(dir + "/test_neg.i64");

  SeedResult result;
  std::mutex m;
  run_in_process_grid(shape, 1, [&](ProcessGrid& grid) {
    auto be = make_cpu_backend(1);
    TrainConfig cfg;
    cfg.model = GnnSpec("gcn");
    cfg.layers = 2;
    cfg.hidden = 128;
    cfg.dropout = 0;
    cfg.weight_decay = 0;
    cfg.lr = 0.01f;
    cfg.seed = seed;
    GnnShards shards = shards_of_graph(g, cfg, grid, false, false);
    GnnNetwork net(*be, grid, shards, cfg);
    AdamParams hp;
    hp.lr = cfg.lr;
    Adam adam(*be, net.parameters(), hp);
    const LayerGeometry last = net.output_geometry();
    DotLinkDecoder3D decoder(*be, grid, last, n);
    Matrix z(*be, last.out_rows.size(), last.out_cols.size());
    const auto links = static_cast<std::int64_t>(positives.size());
    SeedResult r;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      be->copy(net.forward(epoch, true).view(), z.view());
      Matrix dz(*be, z.rows(), z.cols());
      r.losses.push_back(link_loss_and_grad(*be, grid, decoder, z, positives,
                                            negative_pairs(seed, static_cast<std::uint32_t>(epoch), n, 0, links), dz));
      net.backward(dz, epoch);
      adam.step();
      net.weights_updated();
      be->copy(net.forward(epoch, false).view(), z.view());
      const double val = link_roc_auc(*be, grid, decoder, z, val_pos, val_neg);
      const double test = link_roc_auc(*be, grid, decoder, z, test_pos, test_neg);
      if (val > r.best_val) r.best_val = val, r.test = test;
    }
    if (grid.rank() == 0) {
      std::lock_guard<std::mutex> lock(m);
      result = r;
    }
  });
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: link_pieces_parity SPLIT_DIR [--seeds N] [--grid XxYxZ] [--epochs E]\n");
    return 2;
  }
  const std::string dir = argv[1];
  int seeds = 10, epochs = 100;
  GridShape shape{1, 1, 1};
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seeds") seeds = std::stoi(argv[i + 1]);
    else if (a == "--epochs") epochs = std::stoi(argv[i + 1]);
    else if (a == "--grid") shape = parse_grid(argv[i + 1]);
    else {
      std::fprintf(stderr, "link_pieces_parity: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::vector<double> tests;
  std::string losses0;
  for (int s = 0; s < seeds; ++s) {
    const SeedResult r = run_seed(dir + "/seed" + std::to_string(s), static_cast<std::uint64_t>(s), shape, epochs);
    tests.push_back(r.test);
    std::printf("seed %d: best val ROC-AUC %.4f, its test ROC-AUC %.4f\n", s, r.best_val, r.test);
    if (s == 0)
      for (std::size_t e = 0; e < r.losses.size(); ++e) {
        if (e) losses0 += ',';
        losses0 += std::to_string(r.losses[e]);
      }
  }
  double mean = 0, var = 0;
  for (const double t : tests) mean += t / static_cast<double>(tests.size());
  for (const double t : tests) var += (t - mean) * (t - mean) / static_cast<double>(tests.size());
  std::printf("ENGINE_JSON {\"grid\": \"%s\", \"epochs\": %d, \"seeds\": %d, \"test_auc_mean\": %.6f, \"test_auc_std\": %.6f, "
              "\"seed0_losses\": [%s]}\n",
              shape.str().c_str(), epochs, seeds, mean, std::sqrt(var), losses0.c_str());
  return 0;
}
