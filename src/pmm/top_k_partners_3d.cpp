// The best K partners of every node on the 3D grid (top_k_partners_3d.hpp has the layout and
// the collectives).
#include "pmm/top_k_partners_3d.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace plexus {

namespace {

// Higher score first, then the lower node: the same order on every grid.
bool better(const Partner& a, const Partner& b) {
  return a.score > b.score || (a.score == b.score && a.node >= 0 && (b.node < 0 || a.node < b.node));
}

// A partner as the merge over Q moves it: 16 bytes, no padding left unset.
struct PackedPartner {
  float score;
  std::int32_t zero;
  std::int64_t node;
};

}  // namespace

TopKPartners3D::TopKPartners3D(Backend& be, ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes)
    : be_(be),
      grid_(grid),
      at_(grid, last, num_nodes),
      slice_(sub_range(last.out_rows, grid.dim(last.out_feat()), grid.coord(last.out_feat()))) {
  for (index_t u = slice_.begin; u < slice_.end; ++u) reported_.push_back(u);
}

void TopKPartners3D::only(const std::vector<std::int64_t>& nodes) {
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i] < 0 || nodes[i] >= at_.n || (i > 0 && nodes[i] <= nodes[i - 1]))
      throw std::invalid_argument("TopKPartners3D::only: node " + std::to_string(nodes[i]) + " at " +
                                  std::to_string(i) + " is out of range or order (ascending, distinct, below " +
                                  std::to_string(at_.n) + ")");
  const auto within = [&](Range r) {
    return std::vector<std::int64_t>(std::lower_bound(nodes.begin(), nodes.end(), r.begin),
                                     std::lower_bound(nodes.begin(), nodes.end(), r.end));
  };
  listed_ = true;
  block_rows_ = within(at_.rows);
  reported_ = within(slice_);
}

TopKRows TopKPartners3D::search(const Matrix& z, index_t k, const std::vector<std::vector<std::int64_t>>& exclude,
                                index_t tile) {
  at_.require_block(z, "TopKPartners3D", "Z");
  if (k < 1 || tile < 1)
    throw std::invalid_argument("TopKPartners3D: K and the tile must be at least 1, got " + std::to_string(k) + " and " +
                                std::to_string(tile));
  const std::size_t rows = reported_.size();
  if (!exclude.empty() && exclude.size() != rows)
    throw std::invalid_argument("TopKPartners3D: " + std::to_string(exclude.size()) + " exclusion lists for " +
                                std::to_string(rows) + " rows");
  const Range q = at_.q_rows;
  const index_t width = at_.cols.size();
  Matrix zq;
  {
    MemoryScope scope(be_, MemoryKind::Activations, "the Q block of the embeddings");
    zq = Matrix(be_, q.size(), width);
  }
  at_.gather_q(grid_, z, zq);

  // The rows a tile's GEMM takes: the R block's, or its listed rows copied out (runs of
  // consecutive rows a copy each).
  const index_t m = listed_ ? static_cast<index_t>(block_rows_.size()) : at_.rows.size();
  Matrix listed;
  if (listed_) {
    MemoryScope scope(be_, MemoryKind::Activations, "the listed rows of the embeddings");
    listed = Matrix(be_, m, width);
    for (std::size_t i = 0; i < block_rows_.size();) {
      std::size_t j = i + 1;
      while (j < block_rows_.size() && block_rows_[j] == block_rows_[j - 1] + 1) ++j;
      const index_t from = block_rows_[i] - at_.rows.begin, run = static_cast<index_t>(j - i);
      if (width > 0)
        be_.copy(ConstMatrixView{z.data() + from * width, run, width, width},
                 MatrixView{listed.data() + static_cast<index_t>(i) * width, run, width, width});
      i = j;
    }
  }
  const ConstMatrixView left = listed_ ? listed.view() : z.view();

  const int f_parts = grid_.dim(at_.f);
  // Rows of the GEMM each rank of F selects for: its slice's (listed) rows.
  std::vector<index_t> slice_rows(static_cast<std::size_t>(f_parts));
  for (int c = 0; c < f_parts; ++c) {
    const Range s = sub_range(at_.rows, f_parts, c);
    slice_rows[static_cast<std::size_t>(c)] =
        listed_ ? static_cast<index_t>(std::lower_bound(block_rows_.begin(), block_rows_.end(), s.end) -
                                       std::lower_bound(block_rows_.begin(), block_rows_.end(), s.begin))
                : s.size();
  }
  const index_t t_max = std::min(tile, std::max<index_t>(q.size(), 1));
  MemoryScope scope(be_, MemoryKind::Workspace, "a tile of partner scores");
  Buffer<float> scores(be_, static_cast<std::size_t>(m * t_max)), mine(be_, rows * static_cast<std::size_t>(t_max));
  std::vector<std::vector<Partner>> heaps(rows);  // worst first: the one a better candidate replaces
  const auto worse_first = [](const Partner& a, const Partner& b) { return better(a, b); };
  std::vector<std::size_t> next_excluded(rows, 0);
  std::vector<std::size_t> counts(static_cast<std::size_t>(f_parts));
  for (index_t t0 = 0; t0 < q.size(); t0 += t_max) {
    const index_t t = std::min(t_max, q.size() - t0);
    if (width > 0)
      be_.gemm(Trans::No, Trans::Yes, 1.0f, left, ConstMatrixView{zq.data() + t0 * width, t, width, width}, 0.0f,
               MatrixView{scores.data(), m, t, t});
    else  // no feature column here: this rank's partial scores are 0
      be_.fill(MatrixView{scores.data(), m, t, t}, 0.0f);
    for (int c = 0; c < f_parts; ++c)
      counts[static_cast<std::size_t>(c)] = static_cast<std::size_t>(slice_rows[static_cast<std::size_t>(c)] * t);
    grid_.comm(at_.f).reduce_scatter(scores.data(), mine.data(), counts);
    std::vector<float> host(rows * static_cast<std::size_t>(t));
    if (!host.empty()) be_.copy_to_host(host.data(), mine.data(), host.size() * sizeof(float));
    for (std::size_t i = 0; i < rows; ++i) {
      const std::int64_t u = reported_[i];
      const std::vector<std::int64_t>* ex = exclude.empty() ? nullptr : &exclude[i];
      std::vector<Partner>& heap = heaps[i];
      for (index_t j = 0; j < t; ++j) {
        const std::int64_t v = q.begin + t0 + j;
        if (v == u) continue;
        if (ex) {
          std::size_t& e = next_excluded[i];
          while (e < ex->size() && (*ex)[e] < v) ++e;
          if (e < ex->size() && (*ex)[e] == v) continue;
        }
        const Partner cand{v, host[i * static_cast<std::size_t>(t) + static_cast<std::size_t>(j)]};
        if (static_cast<index_t>(heap.size()) < k) {
          heap.push_back(cand);
          std::push_heap(heap.begin(), heap.end(), worse_first);
        } else if (better(cand, heap.front())) {
          std::pop_heap(heap.begin(), heap.end(), worse_first);
          heap.back() = cand;
          std::push_heap(heap.begin(), heap.end(), worse_first);
        }
      }
    }
  }

  // This Q block's best K of each row, best first and padded; then the Q blocks' merged.
  const auto kk = static_cast<std::size_t>(k);
  std::vector<PackedPartner> packed(rows * kk, PackedPartner{-std::numeric_limits<float>::infinity(), 0, -1});
  for (std::size_t i = 0; i < rows; ++i) {
    std::sort(heaps[i].begin(), heaps[i].end(), better);
    for (std::size_t j = 0; j < heaps[i].size(); ++j) packed[i * kk + j] = {heaps[i][j].score, 0, heaps[i][j].node};
  }
  const int q_parts = grid_.dim(at_.q);
  std::vector<PackedPartner> all(packed.size() * static_cast<std::size_t>(q_parts));
  grid_.host_comm(at_.q).all_gather_bytes(
      packed.data(), all.data(),
      std::vector<std::size_t>(static_cast<std::size_t>(q_parts), packed.size() * sizeof(PackedPartner)));
  TopKRows out;
  out.rows = reported_;
  out.k = k;
  out.best.resize(rows * kk);
  std::vector<Partner> row;
  for (std::size_t i = 0; i < rows; ++i) {
    row.clear();
    for (int b = 0; b < q_parts; ++b)
      for (std::size_t j = 0; j < kk; ++j) {
        const PackedPartner& p = all[(static_cast<std::size_t>(b) * rows + i) * kk + j];
        if (p.node >= 0) row.push_back({p.node, p.score});
      }
    std::sort(row.begin(), row.end(), better);
    std::copy_n(row.begin(), std::min(kk, row.size()), out.best.begin() + static_cast<std::ptrdiff_t>(i * kk));
  }
  return out;
}

}  // namespace plexus
