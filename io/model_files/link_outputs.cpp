// A link model's outputs (plexus/io.hpp; docs/predictions.md, "Partners", "Pair scores"): top-K
// partner files, where each rank reports a contiguous range of nodes (TopKPartners3D's slices of
// the R blocks), written in place collectively, nothing gathered to one rank; and the scores of
// given pairs, which every rank holds whole (rank 0 writes them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5/collective_write.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"

namespace plexus {

void write_top_k_h5(const TopKPartners& t, index_t num_nodes, ProcessGrid& grid, const std::string& path) {
  const auto rows = static_cast<hsize_t>(t.node_ids.size()), k = static_cast<hsize_t>(t.k);
  if (t.ids.size() != rows || t.partner_ids.size() != rows * k || t.scores.size() != rows * k)
    throw std::invalid_argument("write_top_k_h5: the rows' lists differ in length");
  for (std::size_t r = 1; r < t.node_ids.size(); ++r)
    if (t.node_ids[r] <= t.node_ids[r - 1]) throw std::invalid_argument("write_top_k_h5: the rows are not in node order");
  if (t.first_row < 0 || t.first_row + static_cast<index_t>(rows) > t.num_rows || t.num_rows > num_nodes)
    throw std::invalid_argument("write_top_k_h5: rows " + std::to_string(t.first_row) + " + " + std::to_string(rows) +
                                " are not within " + std::to_string(t.num_rows) + " of " + std::to_string(num_nodes));
  // A missing partner (fewer than k candidates) is -1 with score 0: no non-finite value is written.
  std::vector<float> scores(t.scores);
  for (std::size_t j = 0; j < scores.size(); ++j)
    if (t.partner_ids[j] < 0) scores[j] = 0.0f;
    else if (!std::isfinite(scores[j]))
      throw InputError(path, "the score of node " + std::to_string(t.ids[j / k]) + "'s partner " +
                                 std::to_string(t.partner_ids[j]) + " is not finite: nothing written");
  const auto n = static_cast<hsize_t>(t.num_rows);
  const auto r0 = static_cast<hsize_t>(t.first_row);
  h5::write_collectively(path, grid.world(), [&](h5::Writer& w) {
    w.string_attr("format", "plexus-top-k");
    w.scalar_attr<std::int32_t>("version", H5T_STD_I32LE, 1);
    w.scalar_attr<std::int64_t>("num_nodes", H5T_STD_I64LE, num_nodes);
    w.scalar_attr<std::int64_t>("k", H5T_STD_I64LE, t.k);
    w.scalar_attr<std::int64_t>("num_rows", H5T_STD_I64LE, t.num_rows);
    w.block_dataset<std::int64_t, 1>("/node_id", H5T_STD_I64LE, {n}, {r0}, {rows}, t.ids.data(), true);
    w.block_dataset<std::int64_t, 2>("/partners", H5T_STD_I64LE, {n, k}, {r0, 0}, {rows, k}, t.partner_ids.data(), true);
    w.block_dataset<float, 2>("/scores", H5T_IEEE_F32LE, {n, k}, {r0, 0}, {rows, k}, scores.data(), true);
  });
}

void write_pair_scores_h5(const NodePairList& pairs, const std::vector<float>& scores, ProcessGrid& grid,
                          const std::string& path) {
  if (pairs.u.size() != pairs.v.size() || scores.size() != pairs.size())
    throw std::invalid_argument("write_pair_scores_h5: the pairs and their scores differ in length");
  for (std::size_t k = 0; k < scores.size(); ++k)
    if (!std::isfinite(scores[k]))
      throw InputError(path, "the score of pair " + std::to_string(k + 1) + " is not finite: nothing written");
  const auto m = static_cast<hsize_t>(scores.size());
  const bool writes = grid.world().rank() == 0;
  h5::write_collectively(path, grid.world(), [&](h5::Writer& w) {
    w.string_attr("format", "plexus-pair-scores");
    w.scalar_attr<std::int32_t>("version", H5T_STD_I32LE, 1);
    w.scalar_attr<std::int64_t>("num_pairs", H5T_STD_I64LE, static_cast<std::int64_t>(m));
    w.block_dataset<std::int64_t, 1>("/u", H5T_STD_I64LE, {m}, {0}, {m}, pairs.u.data(), writes);
    w.block_dataset<std::int64_t, 1>("/v", H5T_STD_I64LE, {m}, {0}, {m}, pairs.v.data(), writes);
    w.block_dataset<float, 1>("/score", H5T_IEEE_F32LE, {m}, {0}, {m}, scores.data(), writes);
  });
}

}  // namespace plexus
