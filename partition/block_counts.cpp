// AdjBlockCounts (include/plexus/block_counts.hpp): one pass over each order's entries.
#include "plexus/block_counts.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "plexus/balance.hpp"

namespace plexus {

std::vector<index_t> block_count_cuts(index_t n) {
  std::vector<index_t> cuts{0, n};
  for (int p : kBlockCountParts)
    for (int k = 0; k < p; ++k) cuts.push_back(block_range(n, p, k).begin);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

namespace {

// The tile of every node: the index of the last cut at or below it.
std::vector<std::int32_t> tile_of_nodes(const std::vector<index_t>& cuts) {
  std::vector<std::int32_t> tile(static_cast<std::size_t>(cuts.back()));
  for (std::size_t t = 0; t + 1 < cuts.size(); ++t)
    std::fill(tile.begin() + cuts[t], tile.begin() + cuts[t + 1], static_cast<std::int32_t>(t));
  return tile;
}

// The index of `x` in the sorted cuts, or -1.
std::ptrdiff_t cut_index(const std::vector<index_t>& cuts, index_t x) {
  const auto it = std::lower_bound(cuts.begin(), cuts.end(), x);
  return it != cuts.end() && *it == x ? it - cuts.begin() : -1;
}

}  // namespace

std::vector<index_t> count_tiles_of_rows(const std::vector<index_t>& cuts, index_t row0, index_t rows,
                                         const index_t* indptr, const col_t* indices) {
  const std::vector<std::int32_t> tile = tile_of_nodes(cuts);
  const std::size_t tiles = cuts.size() - 1;
  std::vector<index_t> counts(tiles * tiles, 0);
  for (index_t r = 0; r < rows; ++r) {
    index_t* row = counts.data() + static_cast<std::size_t>(tile[static_cast<std::size_t>(row0 + r)]) * tiles;
    for (index_t k = indptr[r]; k < indptr[r + 1]; ++k) ++row[tile[static_cast<std::size_t>(indices[k])]];
  }
  return counts;
}

std::vector<index_t> count_held_of_rows(const std::vector<index_t>& cuts, index_t row0, index_t rows,
                                        const index_t* indptr, const col_t* indices) {
  const std::vector<std::int32_t> tile = tile_of_nodes(cuts);
  const std::size_t tiles = cuts.size() - 1, parts = kBlockCountParts.size();
  const index_t n = cuts.back();
  // Every tile lies in one block of each part count (the cuts hold every block's bounds).
  std::vector<std::int32_t> slot_of_tile(tiles * parts);
  for (std::size_t t = 0; t < tiles; ++t) {
    int offset = 0;
    for (std::size_t i = 0; i < parts; ++i) {
      const int p = kBlockCountParts[i];
      slot_of_tile[t * parts + i] = offset + block_of(n, p, cuts[t]);
      offset += p;
    }
  }
  std::vector<index_t> held(tiles * static_cast<std::size_t>(kHeldSlots), 0);
  // The last row that counted each tile and each slot: a row counts a block once, however many
  // of its entries the block holds.
  std::vector<index_t> tile_seen(tiles, -1), slot_seen(static_cast<std::size_t>(kHeldSlots), -1);
  for (index_t r = 0; r < rows; ++r) {
    const index_t row = row0 + r;
    index_t* out = held.data() + static_cast<std::size_t>(tile[static_cast<std::size_t>(row)]) * kHeldSlots;
    for (index_t k = indptr[r]; k < indptr[r + 1]; ++k) {
      const auto t = static_cast<std::size_t>(tile[static_cast<std::size_t>(indices[k])]);
      if (tile_seen[t] == row) continue;
      tile_seen[t] = row;
      for (std::size_t i = 0; i < parts; ++i) {
        const auto slot = static_cast<std::size_t>(slot_of_tile[t * parts + i]);
        if (slot_seen[slot] == row) continue;
        slot_seen[slot] = row;
        ++out[slot];
      }
    }
  }
  return held;
}

int held_slot(index_t n, Range cols) {
  if (cols.begin < 0 || cols.begin >= n) return -1;  // (a non-empty block starts inside)
  int offset = 0;
  for (const int p : kBlockCountParts) {
    const int j = block_of(n, p, cols.begin);
    if (block_range(n, p, j) == cols) return offset + j;
    offset += p;
  }
  return -1;
}

AdjBlockCounts count_adj_blocks(const HostCsr& a1, const HostCsr& a2) {
  AdjBlockCounts c;
  c.cuts = block_count_cuts(a1.rows);
  for (const HostCsr* a : {&a1, &a2})
    if (a->rows > 0 && (a->rows != a1.rows || a->cols != a->rows))
      throw std::invalid_argument("count_adj_blocks: not an n x n matrix");
  c.tiles[0] = count_tiles_of_rows(c.cuts, 0, a1.rows, a1.indptr.data(), a1.indices.data());
  c.tiles[1] = a2.rows > 0 ? count_tiles_of_rows(c.cuts, 0, a2.rows, a2.indptr.data(), a2.indices.data()) : c.tiles[0];
  c.held[0] = count_held_of_rows(c.cuts, 0, a1.rows, a1.indptr.data(), a1.indices.data());
  c.held[1] = a2.rows > 0 ? count_held_of_rows(c.cuts, 0, a2.rows, a2.indptr.data(), a2.indices.data()) : c.held[0];
  c.sum_tiles();
  return c;
}

void AdjBlockCounts::sum_tiles() {
  const std::size_t n = cuts.size() - 1, m = cuts.size();
  for (int o = 0; o < 2; ++o) {
    if (tiles[o].size() != n * n) throw std::invalid_argument("AdjBlockCounts: tiles do not match the cuts");
    std::vector<index_t>& s = prefix[o];
    s.assign(m * m, 0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        s[(i + 1) * m + j + 1] = tiles[o][i * n + j] + s[i * m + j + 1] + s[(i + 1) * m + j] - s[i * m + j];
  }
  if (held[0].empty() && held[1].empty()) {
    held_prefix = {};
    return;
  }
  const auto slots = static_cast<std::size_t>(kHeldSlots);
  for (int o = 0; o < 2; ++o) {
    if (held[o].size() != n * slots) throw std::invalid_argument("AdjBlockCounts: held rows do not match the cuts");
    std::vector<index_t>& s = held_prefix[o];
    s.assign(m * slots, 0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < slots; ++j) s[(i + 1) * slots + j] = s[i * slots + j] + held[o][i * slots + j];
  }
}

index_t AdjBlockCounts::held_rows(int which, Range rows, Range cols) const {
  if (!has_held()) return -1;
  const std::ptrdiff_t r0 = cut_index(cuts, rows.begin), r1 = cut_index(cuts, rows.end);
  if (r0 < 0 || r1 < 0) return -1;
  if (cols.size() == 0 || rows.size() == 0) return 0;
  const int slot = held_slot(cuts.back(), cols);
  if (slot < 0) return -1;
  const std::vector<index_t>& s = held_prefix[which == 1 ? 1 : 0];
  const auto slots = static_cast<std::size_t>(kHeldSlots);
  return s[static_cast<std::size_t>(r1) * slots + static_cast<std::size_t>(slot)] -
         s[static_cast<std::size_t>(r0) * slots + static_cast<std::size_t>(slot)];
}

index_t AdjBlockCounts::entries(int which, Range rows, Range cols) const {
  if (empty() || prefix[0].empty()) return -1;
  const std::ptrdiff_t r0 = cut_index(cuts, rows.begin), r1 = cut_index(cuts, rows.end);
  const std::ptrdiff_t c0 = cut_index(cuts, cols.begin), c1 = cut_index(cuts, cols.end);
  if (r0 < 0 || r1 < 0 || c0 < 0 || c1 < 0) return -1;
  const auto m = static_cast<std::ptrdiff_t>(cuts.size());
  const std::vector<index_t>& s = prefix[which == 1 ? 1 : 0];
  const auto at = [&](std::ptrdiff_t i, std::ptrdiff_t j) { return s[static_cast<std::size_t>(i * m + j)]; };
  return at(r1, c1) - at(r0, c1) - at(r1, c0) + at(r0, c0);
}

}  // namespace plexus
