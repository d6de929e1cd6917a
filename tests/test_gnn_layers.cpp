// What each GNN kind computes, against a float64 forward written from the definitions
// (docs/gnn-models.md; PyG's SAGEConv, GINConv and GATConv), on one rank: a directed graph with a node
// without neighbours, 3 layers, random weights and biases. The grid tests compare ranks with
// one rank and the gradient tests the backward with the forward, so this is where the forward
// itself is pinned down.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "models/gnn_network.hpp"
#include "train/graph_shards.hpp"
#include "plexus/graph.hpp"
#include "plexus/sparse.hpp"
#include "core/shard_layout.hpp"

namespace plexus {
namespace {

// 9 nodes, directed; node 8 has no neighbours (row 8 is empty).
GraphData graph() {
  GraphData g;
  g.num_nodes = 9;
  g.num_features = 4;
  g.num_classes = 3;
  g.directed = true;
  const std::vector<std::vector<index_t>> rows = {{1, 2}, {0, 4, 7}, {3}, {5, 6}, {1}, {0, 2, 8}, {4, 5, 7}, {6}, {}};
  g.indptr = {0};
  for (const auto& r : rows) {
    for (index_t j : r) g.indices.push_back(j);
    g.indptr.push_back(static_cast<index_t>(g.indices.size()));
  }
  for (index_t k = 0; k < g.num_nodes * g.num_features; ++k) g.features.push_back(std::cos(0.9f * static_cast<float>(k)));
  // Two features an edge (GINE reads them; the other kinds do not), u -> v and v -> u unlike.
  g.num_edge_features = 2;
  for (index_t k = 0; k < g.num_edges() * 2; ++k) g.edge_features.push_back(std::sin(1.3f * static_cast<float>(k) + 0.4f));
  for (index_t i = 0; i < g.num_nodes; ++i) {
    g.labels.push_back(static_cast<std::int32_t>(i % 3));
    g.train_mask.push_back(1);
    g.val_mask.push_back(0);
    g.test_mask.push_back(0);
  }
  return g;
}

using Mat = std::vector<std::vector<double>>;

Mat matmul(const Mat& a, const std::vector<float>& w, index_t cols) {
  Mat out(a.size(), std::vector<double>(static_cast<std::size_t>(cols), 0.0));
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t k = 0; k < a[i].size(); ++k)
      for (index_t j = 0; j < cols; ++j) out[i][j] += a[i][k] * w[k * static_cast<std::size_t>(cols) + j];
  return out;
}
void add_bias(Mat& a, const std::vector<float>& b) {
  for (auto& row : a)
    for (std::size_t j = 0; j < row.size(); ++j) row[j] += b[j];
}
void relu(Mat& a) {
  for (auto& row : a)
    for (double& v : row) v = std::max(v, 0.0);
}
// GINE's Σ_{j ∈ N(i)} relu(h_j + e_ij·W_e + b_e), e_ij the feature row of the stored edge i -> j.
Mat edge_messages(const GraphData& g, const Mat& h, const std::vector<float>& w_e, const std::vector<float>& b_e) {
  const auto cols = static_cast<index_t>(h[0].size());
  Mat out(h.size(), std::vector<double>(h[0].size(), 0.0));
  for (index_t i = 0; i < g.num_nodes; ++i)
    for (index_t k = g.indptr[i]; k < g.indptr[i + 1]; ++k)
      for (index_t c = 0; c < cols; ++c) {
        double m = h[g.indices[k]][c] + b_e[c];
        for (index_t f = 0; f < g.num_edge_features; ++f)
          m += g.edge_features[k * g.num_edge_features + f] * w_e[f * cols + c];
        out[i][c] += std::max(m, 0.0);
      }
  return out;
}
// The shards of `g` for `cfg`'s kind, with the blocks' edge features where it reads them.
GnnShards kind_shards(const GraphData& g, const HostCsr& a_hat, const TrainConfig& cfg, const std::vector<index_t>& dims,
                      const std::vector<bool>& transform_first) {
  auto grid = ProcessGrid::single();
  GnnShards shards = build_shards(g, a_hat, *grid, dims, false, transform_first);
  if (cfg.model.reads_edge_features()) attach_edge_features(shards, g);
  return shards;
}

// Σ_{j ∈ N(i)} h_j (or the mean), N(i) the row's entries of the cleaned graph (no self-loop).
Mat aggregate(const GraphData& g, const Mat& h, bool mean) {
  Mat out(h.size(), std::vector<double>(h[0].size(), 0.0));
  for (index_t i = 0; i < g.num_nodes; ++i) {
    const index_t deg = g.indptr[i + 1] - g.indptr[i];
    for (index_t k = g.indptr[i]; k < g.indptr[i + 1]; ++k)
      for (std::size_t c = 0; c < h[0].size(); ++c) out[i][c] += h[g.indices[k]][c] / (mean ? deg : 1);
  }
  return out;
}

// GAT (PyG's GATConv, self-loops added): for every head h of F features, attention over N(i) ∪ {i}
// of the scores LeakyReLU(a_dst·z_i + a_src·z_j); the heads concatenated, or averaged.
// `alpha_out`, where given, receives α: (dst, src) → every head's.
using AlphaMap = std::map<std::pair<index_t, index_t>, std::vector<double>>;
Mat gat_layer(const GraphData& g, const Mat& h, std::map<std::string, std::vector<float>>& value, const std::string& L,
              int heads, index_t width, bool average, float slope, AlphaMap* alpha_out = nullptr, bool edges = false) {
  const index_t f = average ? width : width / heads;
  const Mat z = matmul(h, value[L + "weight"], heads * f);
  const std::vector<float>& a_src = value[L + "att_src"];
  const std::vector<float>& a_dst = value[L + "att_dst"];
  Mat out(h.size(), std::vector<double>(static_cast<std::size_t>(width), 0.0));
  for (index_t i = 0; i < g.num_nodes; ++i) {
    std::vector<index_t> nbrs(g.indices.begin() + g.indptr[i], g.indices.begin() + g.indptr[i + 1]);
    nbrs.push_back(i);
    // With edge features (`edges`): each entry's feature row, the self-loop's the mean of the row's.
    std::vector<std::vector<double>> rows;
    const index_t d_e = g.num_edge_features;
    if (edges) {
      std::vector<double> mean(static_cast<std::size_t>(d_e), 0.0);
      for (index_t k = g.indptr[i]; k < g.indptr[i + 1]; ++k) {
        rows.emplace_back();
        for (index_t f = 0; f < d_e; ++f) {
          rows.back().push_back(g.edge_features[k * d_e + f]);
          mean[f] += g.edge_features[k * d_e + f] / static_cast<double>(g.indptr[i + 1] - g.indptr[i]);
        }
      }
      rows.push_back(mean);
    }
    for (int hd = 0; hd < heads; ++hd) {
      const auto score = [&](index_t node, const std::vector<float>& a) {
        double s = 0;
        for (index_t c = 0; c < f; ++c) s += z[node][hd * f + c] * a[hd * f + c];
        return s;
      };
      std::vector<double> e;
      for (std::size_t q = 0; q < nbrs.size(); ++q) {
        double x = score(i, a_dst) + score(nbrs[q], a_src);
        if (edges)  // a_edge·(e_ij·W_e) over the head's columns
          for (index_t c = 0; c < f; ++c) {
            double lin = 0;
            for (index_t ff = 0; ff < d_e; ++ff) lin += rows[q][ff] * value[L + "edge_weight"][ff * heads * f + hd * f + c];
            x += lin * value[L + "att_edge"][hd * f + c];
          }
        e.push_back(x > 0 ? x : slope * x);
      }
      const double m = *std::max_element(e.begin(), e.end());
      double sum = 0;
      for (double& v : e) sum += (v = std::exp(v - m));
      if (alpha_out != nullptr)
        for (std::size_t k = 0; k < nbrs.size(); ++k) {
          std::vector<double>& a = (*alpha_out)[{i, nbrs[k]}];
          a.resize(static_cast<std::size_t>(heads));
          a[static_cast<std::size_t>(hd)] = e[k] / sum;
        }
      for (std::size_t k = 0; k < nbrs.size(); ++k)
        for (index_t c = 0; c < f; ++c)
          out[i][average ? c : hd * f + c] += e[k] / sum * z[nbrs[k]][hd * f + c] / (average ? heads : 1);
    }
  }
  add_bias(out, value[L + "bias"]);
  return out;
}

void check_forward(const TrainConfig& cfg, const std::vector<index_t>& dims = {4, 5, 6, 3}) {
  const GraphData g = graph();
  auto be = make_reference_backend();
  auto grid = ProcessGrid::single();
  const GnnSpec& m = cfg.model;
  const bool gat = m.kind() == "gat", appnp = m.kind() == "appnp";
  const HostCsr a_hat = gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values);
  GnnShards shards = kind_shards(g, a_hat, cfg, dims, std::vector<bool>(3, gat || appnp));
  GnnNetwork model(*be, *grid, shards, cfg);
  // Random values for every parameter (biases and ε too), kept by name for the reference.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.8f, 0.8f);
  std::map<std::string, std::vector<float>> value;
  for (ModelParam& p : model.named_parameters()) {
    std::vector<float> v(p.slot->size());
    for (float& x : v) x = p.name.ends_with("eps") ? 0.3f : u(rng);
    p.slot->upload(v);
    value[p.name] = v;
  }
  if (m.kind() == "gin" || m.kind() == "gine") model.weights_updated();
  const Matrix& out = model.forward(0, /*training=*/false);
  std::vector<float> got(static_cast<std::size_t>(out.rows() * out.cols()));
  be->copy_to_host(got.data(), out.data(), got.size() * sizeof(float));
  const std::vector<EdgeAttention> attention = model.attention();
  EXPECT_EQ(attention.size(), gat ? 3u : 0u);

  Mat h(static_cast<std::size_t>(g.num_nodes), std::vector<double>(4));
  for (index_t i = 0; i < g.num_nodes; ++i)
    for (int c = 0; c < 4; ++c) h[i][c] = g.features[i * 4 + c];
  for (int l = 0; l < 3; ++l) {
    const std::string L = "layer" + std::to_string(l) + "/";
    const index_t out_dim = dims[l + 1];
    Mat next;
    if (gat) {
      AlphaMap alpha;
      const int heads = static_cast<int>(m.integer(l < 2 ? "heads" : "out-heads"));
      next = gat_layer(g, h, value, L, heads, out_dim, l == 2, m.real("negative-slope"), &alpha, m.reads_edge_features());
      // The model's attention coefficients (what predict --attention writes) are these α.
      const EdgeAttention& a = attention.at(static_cast<std::size_t>(l));
      EXPECT_EQ(a.layer, l);
      ASSERT_EQ(a.heads, heads);
      ASSERT_EQ(a.dst.size(), alpha.size()) << "layer " << l;
      for (std::size_t k = 0; k < a.dst.size(); ++k) {
        const auto it = alpha.find({a.dst[k], a.src[k]});
        ASSERT_NE(it, alpha.end()) << "layer " << l << ": no entry " << a.src[k] << " -> " << a.dst[k];
        for (std::size_t hd = 0; hd < it->second.size(); ++hd)
          EXPECT_NEAR(a.alpha[k * it->second.size() + hd], it->second[hd], 1e-5)
              << "layer " << l << ": " << a.src[k] << " -> " << a.dst[k] << " head " << hd;
      }
      if (l < 2)
        for (auto& row : next)
          for (double& v : row) v = v > 0 ? v : std::expm1(v);
      h = next;
      continue;
    } else if (appnp) {
      // Z_0 = H·W + b; the last layer: Z_k = (1 − α)·Â·Z_{k−1} + α·Z_0, K times (PyG's APPNP).
      next = matmul(h, value[L + "weight"], out_dim);
      add_bias(next, value[L + "bias"]);
      if (l == 2) {
        const double alpha = m.real("alpha");
        const Mat z0 = next;
        for (std::int64_t k = 0; k < m.integer("steps"); ++k) {
          Mat z(z0.size(), std::vector<double>(static_cast<std::size_t>(out_dim), 0.0));
          for (index_t i = 0; i < a_hat.rows; ++i)
            for (index_t e = a_hat.indptr[i]; e < a_hat.indptr[i + 1]; ++e)
              for (index_t j = 0; j < out_dim; ++j) z[i][j] += a_hat.values[e] * next[a_hat.indices[e]][j];
          for (std::size_t i = 0; i < z.size(); ++i)
            for (index_t j = 0; j < out_dim; ++j) z[i][j] = (1 - alpha) * z[i][j] + alpha * z0[i][j];
          next = z;
        }
      }
    } else if (m.kind() == "sage") {
      next = matmul(aggregate(g, h, m.choice("aggregator") == "mean"), value[L + "weight"], out_dim);
      const Mat root = matmul(h, value[L + "root_weight"], out_dim);
      for (std::size_t i = 0; i < next.size(); ++i)
        for (index_t j = 0; j < out_dim; ++j) next[i][j] += root[i][j];
      add_bias(next, value[L + "bias"]);
      if (m.flag("normalize"))
        for (auto& row : next) {
          double n2 = 0;
          for (double v : row) n2 += v * v;
          const double n = std::max(std::sqrt(n2), 1e-12);
          for (double& v : row) v /= n;
        }
    } else {
      const double eps = m.flag("train-eps") ? value[L + "eps"][0] : m.real("gin-eps");
      Mat z = m.kind() == "gine" ? edge_messages(g, h, value[L + "edge_weight"], value[L + "edge_bias"])
                                 : aggregate(g, h, false);
      for (std::size_t i = 0; i < z.size(); ++i)
        for (std::size_t c = 0; c < z[i].size(); ++c) z[i][c] += (1.0 + eps) * h[i][c];
      next = matmul(z, value[L + "weight"], out_dim);
      add_bias(next, value[L + "bias"]);
      relu(next);
      next = matmul(next, value[L + "weight2"], out_dim);
      add_bias(next, value[L + "bias2"]);
    }
    if (l < 2) relu(next);
    h = next;
  }
  ASSERT_EQ(got.size(), h.size() * 3);
  for (std::size_t i = 0; i < h.size(); ++i)
    for (std::size_t j = 0; j < 3; ++j)
      EXPECT_NEAR(got[i * 3 + j], h[i][j], 1e-4 * (1.0 + std::abs(h[i][j]))) << "node " << i << " class " << j;
}

TrainConfig kind(const GnnSpec& spec) {
  TrainConfig c;
  c.dropout = 0.0f;
  c.seed = 7;
  c.model = spec;
  return c;
}

TEST(GnnLayers, GatWithConcatenatedAndAveragedHeadsIsPyGsGATConv) {
  // Hidden layers: 2 heads of 3 and of 2 features, concatenated; the last: 3 heads of 3 classes,
  // averaged.
  check_forward(kind(GnnSpec("gat").set("heads", 2).set("out-heads", 3).set("negative-slope", 0.3)), {4, 6, 4, 3});
}
TEST(GnnLayers, GatWithEdgeFeaturesIsPyGsGATConvWithEdgeDim) {
  check_forward(kind(GnnSpec("gat").set("heads", 2).set("out-heads", 3).set("edge-features", true)), {4, 6, 4, 3});
}
TEST(GnnLayers, GatWithOneHeadPerLayer) {
  check_forward(kind(GnnSpec("gat").set("heads", 1).set("out-heads", 1)));
}

// GAT's per-edge arrays are the backend's "edge" memory (MemoryKind::EdgeValues), and nothing
// else is: per layer α, its dropped copy and its transposed copy (heads × entries each), plus
// one layer's dα at a time in the backward pass. What plan and train report as `edge`.
TEST(GnnLayers, GatEdgeMemoryIsItsAttentionArrays) {
  const GraphData g = graph();
  auto be = make_reference_backend();
  auto grid = ProcessGrid::single();
  const std::vector<index_t> dims{4, 6, 4, 3};
  GnnShards shards = build_shards(g, gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values), *grid, dims, false,
                                  std::vector<bool>(3, true));
  GnnNetwork model(*be, *grid, shards,
                   kind(GnnSpec("gat").set("heads", 2).set("out-heads", 3).set("attn-dropout", 0.5)));
  const auto entries = static_cast<std::size_t>(g.num_edges() + g.num_nodes);  // Â = A + I
  const std::size_t persistent = 3 * (2 + 2 + 3) * entries * sizeof(float);
  EXPECT_EQ(be->live_bytes(MemoryKind::EdgeValues), persistent);
  const Matrix& out = model.forward(0, /*training=*/true);
  Matrix d_logits(*be, out.rows(), out.cols());
  be->fill(d_logits.view(), 0.1f);
  model.backward(d_logits, 0);
  EXPECT_EQ(be->peak_bytes(MemoryKind::EdgeValues), persistent + 3 * entries * sizeof(float));  // the widest dα
  EXPECT_EQ(be->live_bytes(MemoryKind::EdgeValues), persistent);
}

TEST(GnnLayers, AppnpIsAnMlpThenPyGsAPPNP) {
  check_forward(kind(GnnSpec("appnp")));  // K = 10, α = 0.1
  check_forward(kind(GnnSpec("appnp").set("steps", 1).set("alpha", 0.5)));
  check_forward(kind(GnnSpec("appnp").set("steps", 0)));  // an MLP
}
// Which parameters weight decay takes, per kind, as its reference trains it: Kipf & Welling's
// rule (layer 0's weight matrices) for gcn, sage and gin; every parameter for gat and appnp
// (PyG's GAT and APPNP examples: Adam over model.parameters()).
TEST(GnnLayers, WeightDecayTakesWhatEachKindsReferenceDecays) {
  const GraphData g = graph();
  const HostCsr a_hat = gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values);
  for (const GnnKindInfo& k : gnn_kinds()) {
    auto be = make_reference_backend();
    auto grid = ProcessGrid::single();
    TrainConfig cfg = kind(GnnSpec(k.name));
    if (k.name == "gat") cfg.model.set("heads", 1);
    GnnShards shards = kind_shards(g, a_hat, cfg, {4, 5, 6, 3}, transform_first_layers(cfg, {4, 5, 6, 3}));
    GnnNetwork model(*be, *grid, shards, cfg);
    const bool every = k.name == "gat" || k.name == "appnp";
    for (const ModelParam& p : model.named_parameters()) {
      const bool matrix = p.name.ends_with("weight") || p.name.ends_with("weight2");
      EXPECT_EQ(p.decay, every || (p.name.starts_with("layer0/") && matrix)) << k.name << " " << p.name;
    }
  }
}

TEST(GnnLayers, SageMeanIsPyGsSAGEConv) { check_forward(kind(GnnSpec("sage"))); }
TEST(GnnLayers, SageSumIsPyGsSAGEConvWithSum) { check_forward(kind(GnnSpec("sage").set("aggregator", "sum"))); }
TEST(GnnLayers, SageNormalizeDividesEachRowByItsNorm) { check_forward(kind(GnnSpec("sage").set("normalize", true))); }
TEST(GnnLayers, GinWithAFixedEpsIsPyGsGINConv) { check_forward(kind(GnnSpec("gin").set("gin-eps", 0.7))); }
TEST(GnnLayers, GineAddsEachEdgesFeaturesToItsMessageAsPyGsGINEConv) {
  check_forward(kind(GnnSpec("gine").set("gin-eps", 0.7)));
  check_forward(kind(GnnSpec("gine").set("gin-eps", 5.0).set("train-eps", true)));
}
TEST(GnnLayers, GinWithATrainedEpsReadsItsParameter) {
  // 5 is the initial value; the parameter is then set to 0.3.
  check_forward(kind(GnnSpec("gin").set("gin-eps", 5.0).set("train-eps", true)));
}

}  // namespace
}  // namespace plexus
