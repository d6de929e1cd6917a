#include "models/gnn_network.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/sparse.hpp"
#include "models/kinds/kind_spec.hpp"
#include "pmm/held_rows_model.hpp"
#include "pmm/neighbour_operators.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {
// When --sparse-comm (TrainConfig::sparse_comm) takes the rows forms on this grid: auto's rule
// depends on whether the ranks share a node, and a quantised sum's rows form adds no copies (it
// codes what it sends, as the dense form does).
RowsRule rows_rule(SparseComm s, bool one_node, bool quantised) {
  switch (s) {
    case SparseComm::Off:
    case SparseComm::Dense: return RowsRule::Never;
    case SparseComm::Rows: return RowsRule::FewerRows;
    case SparseComm::Auto: return one_node && !quantised ? RowsRule::Cheaper : RowsRule::FewerRows;
  }
  return RowsRule::Never;
}
}  // namespace

GnnNetwork::GnnNetwork(Backend& be, ProcessGrid& grid, GnnShards& shards, const TrainConfig& cfg, NetworkUse use)
    : be_(be),
      grid_(grid),
      cfg_(cfg),
      scatter_logits_(cfg.comm_variant != CommVariant::Baseline && kind_spec(cfg.model).scatter_logits),
      reuse_gathers_(cfg.comm_variant == CommVariant::RsAgReuse),
      bf16_(cfg.precision == Precision::BF16),
      inference_(use == NetworkUse::Inference),
      adj_ws_(be) {
  if (be.device() == Device::CUDA) grid.use_device_copies(be);  // a one-rank grid's copies reach the GPU
  const KindSpec& kind = kind_spec(cfg.model);
  const int n_layers = shards.layers();
  if (shards.shape_only && be.computes()) throw std::invalid_argument("GnnNetwork: shards of sizes only on a backend that computes");
  if (static_cast<int>(shards.adj_of_layer.size()) != n_layers)
    throw std::invalid_argument("GnnNetwork: the shards give no Â block for every layer");
  std::vector<LayerGeometry> geos;
  for (int l = 0; l < n_layers; ++l) {
    geos.push_back(layer_geometry(grid, l, shards.num_nodes, shards.dims, shards.transform_first));
    if (kind.order != LayerOrder::Auto && geos.back().transform_first != (kind.order == LayerOrder::TransformFirst))
      throw std::invalid_argument("GnnNetwork: shards cut for " +
                                  std::string(layer_order_name(layer_order_of(geos.back().transform_first))) + " layers; " +
                                  cfg.model.kind() + " layers are " + layer_order_name(kind.order));
  }
  // The widest dense operand each Â block multiplies: a layer's SpMMs (forward and backward)
  // both take a block as wide as its input features aggregating first (Â·H, Âᵀ·dAGG) and as
  // its output features transforming first (Â·Y, Âᵀ·dOUT). Sizes the blocks' SpMM plans.
  const std::size_t num_blocks = shards.shape_only ? shards.adj_blocks.size() : shards.adj.size();
  std::vector<index_t> adj_width(num_blocks, 0);
  for (int l = 0; l < n_layers; ++l) {
    const std::size_t k = static_cast<std::size_t>(shards.adj_of_layer[l]);
    const LayerGeometry& g = geos[static_cast<std::size_t>(l)];
    if (k < adj_width.size())
      adj_width[k] = std::max(adj_width[k], (g.transform_first ? g.out_cols : g.in_cols).size());
  }
  // A kind may multiply by an operator on Â's pattern (SAGE and GIN: pmm/neighbour_operators.hpp):
  // the values are replaced before the blocks go up, and each block's self-loop selector S is
  // built beside it where the kind needs it. The mean's degree collectives run once per layer
  // layout (shards.layouts, as the loaders' reads do), so every rank issues the same sequence
  // whichever of its blocks coincide.
  const BlockNeeds needs = kind.blocks(cfg.model);
  const auto no_edge_features = [&] {
    return InputError("shards", "GnnShards: the model (" + cfg.model.kind() +
                                    ") reads edge features and these shards hold none (a prepared file's do not yet: "
                                    "train on the plain graph)");
  };
  const auto block = [&](std::size_t k) {
    // (Shards without block ranges, e.g. put together by hand, hold whole blocks.)
    return k < shards.adj_blocks.size() ? shards.adj_blocks[k] : AdjBlockRange{};
  };
  const auto self_col = [&](std::size_t k) {
    const AdjBlockRange b = block(k);
    return k < shards.adj_self_col.size() ? shards.adj_self_col[k] : block_self_columns(b.rows, b.cols);
  };
  if (needs.values) {
    const NeighbourOperator op = *needs.values;
    std::vector<bool> done(num_blocks, false);
    for (int l : shards.layouts) {
      const auto k = static_cast<std::size_t>(shards.adj_of_layer[l]);
      const AdjBlockRange b = block(k);
      Communicator& row_peers = grid.comm(geos[static_cast<std::size_t>(l)].roles.o);
      Communicator* part_axis = b.sharded ? &grid.comm(b.axis) : nullptr;
      if (shards.shape_only) {
        if (op.mean) neighbour_value_collectives(b, row_peers, part_axis);
      } else if (op.mean || !done[k]) {
        set_neighbour_values(shards.adj[k], shards.adj_t[k], b, self_col(k), op, row_peers, part_axis);
      }
      done[k] = true;
    }
  }
  // Each distinct Â block once on the backend (layers of the same layout share it); the host
  // copy goes as soon as it is up. A sharded block keeps its part and is gathered per use.
  for (std::size_t k = 0; k < num_blocks; ++k) {
    const AdjBlockRange b = block(k);
    Communicator* axis = b.sharded ? &grid.comm(b.axis) : nullptr;
    if (needs.self_loops) {
      AdjBlockRange whole = b;  // S is small (a row each): never sharded, never chunked
      whole.sharded = false;
      whole.part_rows = b.rows;
      whole.part_cols = b.cols;
      if (shards.shape_only)
        self_loops_.push_back(std::make_unique<DeviceAdj>(be, whole, self_loop_selector_nnz(b.rows.size(), b.cols.size()),
                                                          1, nullptr, &adj_ws_, adj_width[k]));
      else
        self_loops_.push_back(std::make_unique<DeviceAdj>(be, whole, self_loop_selector(self_col(k), b.cols.size()),
                                                          self_loop_selector_t(self_col(k), b.cols.size()), 1, nullptr,
                                                          &adj_ws_, adj_width[k]));
    }
    if (needs.transpose_map) {  // per-entry values gathered into the transpose's order (GAT)
      if (b.sharded) throw std::invalid_argument("GnnNetwork: per-entry values need Â blocks held whole (no sharded Â)");
      const index_t nnz = shards.shape_only ? shards.adj_nnz.at(k) : shards.adj[k].nnz();
      transpose_maps_.emplace_back(be, static_cast<std::size_t>(nnz));
      if (!shards.shape_only) transpose_maps_.back().upload(csr_transpose_map(shards.adj[k], shards.adj_t[k]).data());
    }
    if (needs.edge_features) {  // the block's edges, without its self-loops, and their features (GINE)
      if (b.sharded) throw std::invalid_argument("GnnNetwork: edge features need Â blocks held whole (no sharded Â)");
      if (shards.edge_feature_width <= 0) throw no_edge_features();
      if (shards.shape_only)  // (Â's entries: the edges and at most a self-loop a row, counted as edges)
        edge_features_.push_back(std::make_unique<DeviceEdgeFeatures>(be, b.rows.size(), b.cols.size(), shards.adj_nnz.at(k),
                                                                      shards.edge_feature_width));
      else
        edge_features_.push_back(std::make_unique<DeviceEdgeFeatures>(be, shards.adj[k], self_col(k),
                                                                      shards.adj_edge_features.at(k),
                                                                      shards.edge_feature_width));
    }
    if (needs.entry_features) {  // every entry's feature row, feature-major (GAT's edge scores)
      if (shards.edge_feature_width <= 0) throw no_edge_features();
      const index_t nnz = shards.shape_only ? shards.adj_nnz.at(k) : shards.adj[k].nnz();
      const auto w = static_cast<std::size_t>(shards.edge_feature_width), n = static_cast<std::size_t>(nnz);
      MemoryScope scope(be, MemoryKind::EdgeValues, "the entries' edge features");
      entry_features_.emplace_back(be, n * w);
      if (!shards.shape_only)
        entry_features_.back().upload(feature_major(shards.adj_edge_features.at(k), shards.edge_feature_width).data());
    }
    if (shards.shape_only)
      adj_.push_back(std::make_unique<DeviceAdj>(be, b, shards.adj_nnz.at(k), cfg.agg_chunks, axis, &adj_ws_, adj_width[k]));
    else
      adj_.push_back(std::make_unique<DeviceAdj>(be, b, std::move(shards.adj[k]), std::move(shards.adj_t[k]),
                                                 cfg.agg_chunks, axis, &adj_ws_, adj_width[k]));
  }
  // --sparse-comm (TrainConfig::sparse_comm, CPU backend): the sums of each layer's block, over
  // the axes the layer sums its products on (Â·H over o, Âᵀ·G over d), in layer order on every
  // rank (a block two layers share on this rank may be two blocks on another).
  // --wire int8|int4: the quantised sums read and write host memory (RowSparseSum).
  if (cfg.wire != Wire::Fp32 && be.device() != Device::CPU)
    throw InputError("TrainConfig.wire", std::string(wire_name(cfg.wire)) + " sums are the CPU backend's for now");
  if (cfg.sparse_comm != SparseComm::Off && be.device() == Device::CPU) {
    const RowsRule rows = rows_rule(cfg.sparse_comm, grid.one_node(), cfg.wire != Wire::Fp32);
    if (shards.shape_only && shards.adj_counts)  // a plan's dry run: its table's held rows
      for (std::size_t k = 0; k < num_blocks; ++k)
        adj_[k]->model_held_rows(held_rows_model(shards.adj_counts, shards.adj_symmetric, shards.num_nodes, block(k)));
    for (int l = 0; l < n_layers; ++l) {
      const auto k = static_cast<std::size_t>(shards.adj_of_layer[l]);
      const LayerRoles& roles = geos[static_cast<std::size_t>(l)].roles;
      adj_[k]->plan_sums(grid.comm(roles.o), grid.comm(roles.d), rows);
      // S holds an entry in every row (an explicit zero where the node's self-loop is in another
      // rank's columns: neighbour_operators.hpp), and Sᵀ's rows depend on the node order, which a
      // plan does not know: their sums stay dense, the same in a run and in its plan.
      if (needs.self_loops) self_loops_[k]->plan_sums(grid.comm(roles.o), grid.comm(roles.d), RowsRule::Never);
      // The rs-ag variant's last layer transforming first reduce-scatters Â·Y over o instead
      // (GcnLayer3D, [3]; a one-rank o sums nothing: no scatter).
      const LayerGeometry& geo = geos[static_cast<std::size_t>(l)];
      if (scatter_logits_ && l + 1 == n_layers && geo.transform_first && grid.dim(roles.o) > 1)
        adj_[k]->plan_scatter(grid.comm(roles.o), rows);
    }
  }
  shards.adj_self_col.clear();
  shards.adj_self_col.shrink_to_fit();
  shards.adj_edge_features.clear();
  shards.adj_edge_features.shrink_to_fit();
  adj_of_layer_ = shards.adj_of_layer;
  adj_blocks_ = shards.adj_blocks;
  adj_row_ids_ = std::move(shards.adj_row_ids);
  if (kind.info.attention) adj_col_ids_ = std::move(shards.adj_col_ids);
  for (int l = 0; l < n_layers; ++l) {
    const LayerGeometry& geo = geos[static_cast<std::size_t>(l)];
    LayerCommOptions comm;
    comm.scatter_output = scatter_logits_ && l + 1 == n_layers;  // (rs-ag: the last layer)
    comm.reuse_weight = reuse_gathers_;
    comm.agg_chunks = cfg.agg_chunks;
    comm.bf16 = bf16_;
    comm.wire = cfg.wire;
    comm.bf16_output = bf16_ && l + 1 < n_layers;  // (the logits stay fp32)
    comm.recompute = cfg.recompute;
    comm.inference = inference_;
    const auto k = static_cast<std::size_t>(shards.adj_of_layer[l]);
    const LayerContext context{be,
                               grid,
                               geo,
                               n_layers,
                               *adj_[k],
                               needs.self_loops ? self_loops_[k].get() : nullptr,
                               needs.transpose_map ? transpose_maps_[k].data() : nullptr,
                               needs.edge_features ? edge_features_[k].get() : nullptr,
                               needs.entry_features ? entry_features_[k].data() : nullptr,
                               needs.entry_features ? shards.edge_feature_width : 0,
                               cfg_,
                               comm};
    layers_.push_back(kind.make_layer(context));
  }
  if (cfg.task == GnnTask::Link && cfg.link.decoder == LinkDecoder::Mlp)
    link_decoder_ = std::make_unique<MlpLinkDecoder3D>(be, grid, layers_.back()->geometry(), shards.num_nodes,
                                                       static_cast<int>(decoder_layers_of(cfg)), decoder_hidden_of(cfg),
                                                       cfg.seed, inference_);
  const LayerGeometry& g0 = layers_.front()->geometry();
  plan_features_gather(shards.adj_of_layer[0]);
  if (bf16_) {
    if (!kind.bf16) throw std::invalid_argument("GnnNetwork: bf16 graph tensors are not done for " + cfg.model.kind());
    features16_ = Bf16Matrix(be, shards.feat_rows.size(), shards.feat_cols.size());
    if (!shards.shape_only) features16_.upload(shards.features);
    if (grid.dim(g0.in_repl()) > 1) features16_full_ = Bf16Matrix(be, g0.in_rows.size(), g0.in_cols.size());
    return;
  }
  features_ = Matrix(be, shards.feat_rows.size(), shards.feat_cols.size());
  if (!shards.shape_only) features_.upload(shards.features);
  if (grid.dim(g0.in_repl()) > 1) features_full_ = Matrix(be, g0.in_rows.size(), g0.in_cols.size());
}

void GnnNetwork::plan_features_gather(int block) {
  // Collective over layer 0's in_repl axis (every rank of it builds the same layer 0, so all
  // plan or none): its block's columns are the rows of H it reads (DeviceAdj::plan_operand_gather).
  const LayerGeometry& g0 = layers_.front()->geometry();
  Communicator& group = grid_.comm(g0.in_repl());
  const RowsRule rule = rows_rule(cfg_.sparse_comm, grid_.one_node(), false);  // (features travel in fp32 or bf16)
  if (rule == RowsRule::Never || be_.device() != Device::CPU || group.size() == 1 ||
      !layers_.front()->reads_input_through_adj_only())
    return;
  auto gather = adj_[static_cast<std::size_t>(block)]->plan_operand_gather(group, rule);
  if (gather->rows() != g0.in_rows.size()) throw std::logic_error("GnnNetwork: layer 0's block does not read its input's rows");
  if (gather->form() == RowSparseGather::Form::Rows) features_gather_ = std::move(gather);
}

ActivationView GnnNetwork::features() {
  // The feature rows are stored split over the axis layer 0's input is replicated on (d
  // aggregating first, i transforming first); all-gathered there. (With one rank on it the
  // stored block is already the whole input.) They never change: with reuse_gathers they are
  // gathered on the first pass only.
  const LayerGeometry& g0 = layers_.front()->geometry();
  const Axis repl = g0.in_repl();
  if (grid_.dim(repl) == 1) return bf16_ ? ActivationView(features16_) : ActivationView(features_);
  if (!reuse_gathers_ || !features_gathered_) {
    const auto counts = block_counts(g0.in_rows.size(), grid_.dim(repl), g0.in_cols.size());
    const auto width = static_cast<std::size_t>(g0.in_cols.size());
    const bool data = be_.computes();  // (a dry run's backend holds no memory)
    if (features_gather_ && bf16_)
      features_gather_->gather(data ? features16_.data() : nullptr, data ? features16_full_.data() : nullptr,
                               width * sizeof(bf16));
    else if (features_gather_)
      features_gather_->gather(data ? features_.data() : nullptr, data ? features_full_.data() : nullptr,
                               width * sizeof(float));
    else if (bf16_)
      grid_.comm(repl).iall_gather(features16_.data(), features16_full_.data(), counts)->wait();
    else
      grid_.comm(repl).all_gather(features_.data(), features_full_.data(), counts);
  }
  features_gathered_ = true;
  return bf16_ ? ActivationView(features16_full_) : ActivationView(features_full_);
}

DropoutSpec GnnNetwork::dropout_for(int epoch, int layer, bool training) const {
  if (!training) return {};
  return {std::max(cfg_.dropout, 0.0f),
          DropoutKey{cfg_.seed, static_cast<std::uint32_t>(epoch), static_cast<std::uint32_t>(layer)}, true};
}

const Matrix& GnnNetwork::forward(int epoch, bool training, const std::function<void()>& between_layers) {
  if (training && inference_) throw std::logic_error("GnnNetwork: a training pass of a network built for inference");
  // Every layer takes its input in its precision (bf16: the features, then the previous layer's
  // output) and all but the last return theirs so; the logits are fp32.
  ActivationView h = features();
  outputs_.assign(layers_.size(), ActivationView());
  for (int l = 0; l < num_layers(); ++l) {
    if (l > 0 && between_layers) between_layers();
    h = layers_[l]->forward(h, dropout_for(epoch, l, training));
    outputs_[static_cast<std::size_t>(l)] = h;
  }
  return h.f32();
}

void GnnNetwork::backward(Matrix& d_logits, int epoch, const std::function<void()>& between_layers) {
  if (inference_) throw std::logic_error("GnnNetwork: backward of a network built for inference");
  Activation grad(std::move(d_logits));
  for (int l = num_layers() - 1; l >= 0; --l) {
    if (l < num_layers() - 1 && between_layers) between_layers();
    grad = layers_[l]->backward(grad, dropout_for(epoch, l, true), l > 0);
  }
}

LayerGeometry GnnNetwork::loss_geometry() const {
  LayerGeometry g = layers_.back()->geometry();
  g.out_rows = layers_.back()->out_slice_rows();
  return g;
}

void GnnNetwork::weights_updated() {
  for (auto& layer : layers_) layer->weight_updated();
}

std::vector<ModelParam> GnnNetwork::named_parameters() {
  std::vector<ModelParam> all;
  for (int l = 0; l < num_layers(); ++l)
    // Kipf & Welling decay only the first layer's weights (GCN, SAGE, GIN: its weight
    // matrices); a kind may decay every layer's (GAT, as PyG's GAT example: every parameter).
    for (LayerParam& p : layers_[l]->parameters(/*decay_weights=*/l == 0 || kind_spec(cfg_.model).decay_every_layer)) {
      p.name = "layer" + std::to_string(l) + "/" + p.name;
      all.push_back(std::move(p));
    }
  if (link_decoder_)
    for (LayerParam& p : link_decoder_->parameters()) all.push_back(std::move(p));
  return all;
}

std::vector<ParamRef> GnnNetwork::parameters() {
  std::vector<ParamRef> refs;
  for (ModelParam& p : named_parameters()) refs.push_back({p.slot->data(), p.slot->grad(), p.slot->size(), p.decay});
  return refs;
}

const index_t* GnnNetwork::block_ids(const std::vector<std::vector<index_t>>& ids, std::size_t k) const {
  return k < ids.size() && !ids[k].empty() ? ids[k].data() : nullptr;
}

std::vector<EdgeAttention> GnnNetwork::attention() {
  std::vector<EdgeAttention> out;
  for (int l = 0; l < num_layers(); ++l) {
    GnnLayer3D& layer = *layers_[static_cast<std::size_t>(l)];
    if (layer.attention_heads() == 0) continue;
    const std::vector<float> alpha = layer.attention_on_host();  // collective over the layer's i
    EdgeAttention a;
    a.layer = l;
    a.heads = layer.attention_heads();
    if (!alpha.empty()) {
      // The block's entries on the host (its pattern, in the order of α's columns).
      const auto k = static_cast<std::size_t>(adj_of_layer_[static_cast<std::size_t>(l)]);
      const CsrView block = adj_[k]->operand(false).whole;
      std::vector<index_t> indptr(static_cast<std::size_t>(block.rows + 1));
      std::vector<col_t> indices(static_cast<std::size_t>(block.nnz));
      be_.copy_to_host(indptr.data(), block.indptr, indptr.size() * sizeof(index_t));
      if (!indices.empty()) be_.copy_to_host(indices.data(), block.indices, indices.size() * sizeof(col_t));
      const AdjBlockRange& b = adj_blocks_[k];
      const index_t* row_ids = block_ids(adj_row_ids_, k);
      const index_t* col_ids = block_ids(adj_col_ids_, k);
      const auto nnz = static_cast<std::size_t>(block.nnz), heads = static_cast<std::size_t>(a.heads);
      a.dst.resize(nnz);
      a.src.resize(nnz);
      a.alpha.resize(nnz * heads);
      for (index_t r = 0; r < block.rows; ++r)
        for (index_t e = indptr[static_cast<std::size_t>(r)]; e < indptr[static_cast<std::size_t>(r) + 1]; ++e) {
          const auto entry = static_cast<std::size_t>(e);
          const index_t c = indices[entry];
          a.dst[entry] = row_ids ? row_ids[r] : b.rows.begin + r;
          a.src[entry] = col_ids ? col_ids[c] : b.cols.begin + c;
          for (std::size_t h = 0; h < heads; ++h) a.alpha[entry * heads + h] = alpha[h * nnz + entry];
        }
    }
    out.push_back(std::move(a));
  }
  return out;
}

NodeRows GnnNetwork::owned_output(int layer) {
  const auto l = static_cast<std::size_t>(layer);
  if (l >= outputs_.size() || outputs_[l].empty())
    throw std::logic_error("GnnNetwork::owned_output: no forward pass has computed layer " + std::to_string(layer));
  const bool last = layer + 1 == num_layers();
  const LayerGeometry g = last ? loss_geometry() : geometry_of_layer(layer);
  // The output's rows are the same on every rank of its replication axis (unless already split
  // there: the last layer's under scatter_logits) and on every rank of its feature axis once
  // their columns are gathered: split them over both, so that each node has one owner.
  const Range rows = last && scatter_logits_
                         ? g.out_rows
                         : sub_range(g.out_rows, grid_.dim(g.out_repl()), grid_.coord(g.out_repl()));
  const Range owned = sub_range(rows, grid_.dim(g.out_feat()), grid_.coord(g.out_feat()));
  const std::vector<float> mine = outputs_[l].to_host();
  Communicator& f = grid_.host_comm(g.out_feat());
  const index_t width = g.out_dim, n = owned.size(), first = owned.begin - g.out_rows.begin;
  std::vector<float> blocks(static_cast<std::size_t>(g.out_rows.size() * width));
  f.all_gather(mine.data(), blocks.data(), block_counts(width, f.size(), g.out_rows.size()));

  NodeRows out;
  out.width = width;
  out.values.resize(static_cast<std::size_t>(n * width));
  // blocks: rank k's [rows × cols_k] block after rank k-1's; interleaved into whole rows.
  index_t offset = 0;
  for (int k = 0; k < f.size(); ++k) {
    const Range cols = block_range(width, f.size(), k);
    for (index_t r = 0; r < n; ++r)
      std::copy_n(blocks.data() + offset + (first + r) * cols.size(), cols.size(),
                  out.values.data() + r * width + cols.begin);
    offset += g.out_rows.size() * cols.size();
  }
  // The layer's output rows are its Â block's rows: their input ids are the block's.
  const auto k = static_cast<std::size_t>(adj_of_layer_[l]);
  const index_t* ids = block_ids(adj_row_ids_, k);
  out.node_ids.resize(static_cast<std::size_t>(n));
  for (index_t r = 0; r < n; ++r)
    out.node_ids[static_cast<std::size_t>(r)] = ids ? ids[owned.begin + r - adj_blocks_[k].rows.begin] : owned.begin + r;
  return out;
}

}  // namespace plexus
