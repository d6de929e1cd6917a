// A GNN in an analytics pipeline, as a C++ team would run one: accounts with their own 12-digit
// ids and the transfers between them, built in memory; a fraud model trained on them; the next
// day's snapshot — new accounts, no labels — scored by the saved model; one table keyed by
// account id.
//
//   pipeline OUT_DIR              one process
//   mpirun -np 4 pipeline OUT_DIR the same results on any number of ranks
//
// Stage 1 (train): build_graph from edge and node arrays keyed by account id; the grid and backend
// the `plexus` command would choose (choose_gnn_grid, make_node_backend); a GraphSAGE with
// class weights (fraud is rare: --class-weights auto), early stopping and the best-validation
// weights restored (what is saved is the model whose accuracy is reported); GnnTrainer::save.
// Stage 2 (score): GnnModel::load on the snapshot (every account, old and new, unlabelled),
// predictions and the hidden layer's embeddings, gathered into one table on rank 0 and written
// as OUT_DIR/scores.csv: id, class, logits, embeddings. OUT_DIR/model.h5 is the model.
// Stage 3 (counterparties): a link model (TrainConfig::task = Link: a GCN encoder, the dot
// decoder) trained on the same transfers, then the likely next counterparties of each new account
// of the snapshot — its 5 best-scoring partners that it has not transferred with yet
// (GnnModel::top_k_partners for a list of ids) — written by every rank collectively as
// OUT_DIR/counterparties.h5 (write_top_k_h5; docs/predictions.md, "Partners").
// Exit status 0 when the fraud model beats always answering "not fraud" on the test accounts
// and the link model ranks held-out transfers well above random pairs (test ROC-AUC above 0.7).
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "plexus/convert.hpp"  // build_graph (plexus::tools)
#include "plexus/plexus.hpp"   // the engine (plexus::plexus)

namespace {

constexpr int kAccounts = 600, kNewAccounts = 60, kFeatures = 6;

// A tiny deterministic generator: every rank builds the same data.
struct Lcg {
  std::uint64_t s;
  std::uint64_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 33;
  }
  float uniform() { return static_cast<float>(next() % 1000000) / 1e6f; }
};

// The branch of account k (0-3).
int branch(int k) { return (k * 37 + k / 7) % 4; }

// 12-digit account ids, not 0..N-1 and not in order.
std::int64_t account_id(int k) { return 100000000000LL + (static_cast<std::int64_t>(k) * 7919 % 1000003) * 10007; }

// Accounts 0..n-1 (the first kAccounts of them labelled: 1 = fraud, about 8 %), their features
// and transfers. Fraudulent accounts send to each other and have skewed features; the others
// mostly within their branch (one of four, which features 2-5 hint at). `snapshot`: kNewAccounts
// more, unlabelled, and no labels or splits at all.
void accounts(bool snapshot, plexus::EdgeArrays& e, plexus::NodeArrays& nodes) {
  const int n = kAccounts + (snapshot ? kNewAccounts : 0);
  Lcg rng{2026};
  std::vector<int> fraud(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) fraud[static_cast<std::size_t>(k)] = rng.next() % 100 < 8;
  for (int k = 0; k < n; ++k) {
    nodes.ids.push_back(account_id(k));
    for (int f = 0; f < kFeatures; ++f)
      nodes.features.push_back(rng.uniform() + (fraud[static_cast<std::size_t>(k)] && f < 2 ? 0.35f : 0.0f) +
                               (f == 2 + branch(k) ? 0.5f : 0.0f));
    if (!snapshot) {
      nodes.labels.push_back(fraud[static_cast<std::size_t>(k)]);
      const std::uint64_t r = rng.next() % 10;  // 60 % train, 20 % validation, 20 % test
      nodes.split.push_back(static_cast<std::uint8_t>(r < 6 ? 1 : r < 8 ? 2 : 3));
    }
  }
  nodes.num_features = kFeatures;
  nodes.num_classes = 2;
  for (int k = 0; k < n; ++k)
    for (int t = 0; t < 4; ++t) {  // transfers: fraud rings mostly among themselves
      int to = static_cast<int>(rng.next() % static_cast<std::uint64_t>(n));
      if (fraud[static_cast<std::size_t>(k)] && rng.next() % 3 != 0)
        while (!fraud[static_cast<std::size_t>(to)]) to = static_cast<int>(rng.next() % static_cast<std::uint64_t>(n));
      else if (rng.next() % 5 != 0)  // four in five within the branch
        while (branch(to) != branch(k)) to = static_cast<int>(rng.next() % static_cast<std::uint64_t>(n));
      e.src.push_back(account_id(k));
      e.dst.push_back(account_id(to));
    }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  try {
    if (argc < 2) throw plexus::InputError("usage", "pipeline OUT_DIR");
    const std::string dir = argv[1], model_path = dir + "/model.h5", table_path = dir + "/scores.csv";
    // ---- stage 1: train on the labelled accounts, keep the best weights, save ----------------
    plexus::EdgeArrays edges;
    plexus::NodeArrays nodes;
    accounts(false, edges, nodes);
    const plexus::GraphData labelled = plexus::build_graph(edges, nodes);  // symmetrised, ids kept
    plexus::TrainConfig cfg;
    cfg.strict = true;  // also: masks disjoint, edges both ways (the same graph on every rank: always)
    cfg.model = plexus::GnnSpec("sage");
    cfg.hidden = 16;
    cfg.epochs = 300;
    cfg.lr = 0.02f;
    cfg.class_weights_auto = true;  // fraud is rare: weigh it up
    cfg.patience = 40;
    cfg.restore_best = true;        // save the model whose accuracy is reported
    // The grid `plexus train --grid auto` would take, and a CPU backend with this node's cores
    // divided among its ranks (plexus/launch.hpp).
    const plexus::GridShape shape = plexus::choose_gnn_grid(labelled, cfg, size).shape;
    auto grid = plexus::ProcessGrid::from_mpi(shape, 1, MPI_COMM_WORLD);
    auto backend = plexus::make_node_backend("cpu", /*threads=*/0, *grid);
    plexus::GnnTrainer trainer(labelled, cfg, *backend, *grid);
    const plexus::TrainResult r = trainer.run();
    trainer.save(model_path);
    // Against always answering "not fraud" (the majority class) on the test accounts.
    long long test = 0, fraud = 0;
    for (std::size_t k = 0; k < labelled.labels.size(); ++k)
      if (labelled.test_mask[k]) ++test, fraud += labelled.labels[k] == 1;
    const double majority = 1.0 - static_cast<double>(fraud) / static_cast<double>(test);
    if (rank == 0)
      std::printf("stage 1: %d epochs%s, best validation accuracy %.4f at epoch %d, test accuracy %.4f "
                  "(always 'not fraud': %.4f); saved %s (weights of epoch %lld)\n",
                  trainer.epochs_done(), r.stopped_early ? " (stopped early)" : "", r.best_val_acc, r.best_epoch + 1,
                  r.test_acc, majority, model_path.c_str(), static_cast<long long>(trainer.weights_epoch()) + 1);
    status = r.test_acc > majority ? 0 : 1;

    // ---- stage 2: the next day's snapshot, unlabelled, with new accounts ----------------------
    plexus::EdgeArrays snap_edges;
    plexus::NodeArrays snap_nodes;
    accounts(true, snap_edges, snap_nodes);
    const plexus::GraphData snapshot = plexus::build_graph(snap_edges, snap_nodes);
    plexus::GnnModel model = plexus::GnnModel::load(model_path);
    plexus::InferenceOptions want;
    want.embeddings = true;
    want.strict = true;  // the snapshot's edges both ways, its masks disjoint
    const plexus::Inference out = model.predict(snapshot, *backend, *grid, want);
    const plexus::NodeTable table = plexus::gather_table(out, *grid, /*root=*/0);  // rows keyed by their ids
    if (rank == 0) {
      plexus::write_table_csv(table, table_path);
      std::size_t flagged = 0, new_flagged = 0;
      for (std::size_t k = 0; k < table.rows(); ++k) {
        flagged += table.classes[k] == 1;
        new_flagged += table.classes[k] == 1 && k >= static_cast<std::size_t>(kAccounts);
      }
      std::printf("stage 2: scored %zu accounts (%d new) on grid %s: %zu flagged as fraud (%zu new); wrote %s\n",
                  table.rows(), kNewAccounts, shape.str().c_str(), flagged, new_flagged, table_path.c_str());
    }

    // ---- stage 3: likely next counterparties of the new accounts ------------------------------
    plexus::TrainConfig link;
    link.task = plexus::GnnTask::Link;  // 5 % of the transfers held out for validation, 10 % for test
    link.hidden = 32;
    link.link.embedding_width = 16;
    link.epochs = 100;
    link.dropout = 0.0f;
    link.weight_decay = 0.0f;
    const plexus::GridShape link_shape = plexus::choose_gnn_grid(labelled, link, size).shape;
    auto link_grid = plexus::ProcessGrid::from_mpi(link_shape, 1, MPI_COMM_WORLD);
    plexus::GnnTrainer link_trainer(labelled, link, *backend, *link_grid);
    const plexus::TrainResult lr = link_trainer.run();
    const std::string link_path = dir + "/counterparties-model.h5", partners_path = dir + "/counterparties.h5";
    link_trainer.save(link_path);
    std::vector<std::int64_t> new_accounts;
    for (int k = kAccounts; k < kAccounts + kNewAccounts; ++k) new_accounts.push_back(account_id(k));
    plexus::GnnModel link_model = plexus::GnnModel::load(link_path);
    const plexus::TopKPartners next = link_model.top_k_partners(snapshot, new_accounts, 5, *backend, *link_grid);
    plexus::write_top_k_h5(next, snapshot.num_nodes, *link_grid, partners_path);
    if (rank == 0)
      std::printf("stage 3: link model, best validation ROC-AUC %.4f, test ROC-AUC %.4f on grid %s; the 5 likely "
                  "next counterparties of %lld new accounts in %s\n",
                  lr.best_val_auc, lr.test_auc, link_shape.str().c_str(), static_cast<long long>(next.num_rows),
                  partners_path.c_str());
    if (!(lr.test_auc > 0.7)) status = 1;
  } catch (const plexus::InputError& e) {
    std::fprintf(stderr, "pipeline: %s\n", e.message().c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeline: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
