#pragma once
// Link prediction's passes over node pairs through the dot decoder (pmm/dot_link_decoder_3d.hpp),
// on this rank's block of the encoder's output Z: the training loss with its gradient, and a
// split's scores for its metrics. What the link task will run each epoch (docs/link-prediction.md);
// the tests and the parity harness run it today. Collective over the grid.
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "pmm/dot_link_decoder_3d.hpp"

namespace plexus {

// The mean binary cross-entropy with logits over `positives` (label 1) and `negatives`
// (label 0), summed over the grid (each pair kept by one rank), and its
// gradient with respect to Z written over `dz` (Z's shape).
double link_loss_and_grad(Backend& be, ProcessGrid& grid, DotLinkDecoder3D& decoder, const Matrix& z,
                          const NodePairList& positives, const NodePairList& negatives, Matrix& dz);

// The scores of `positives` followed by those of `negatives`, every score gathered once over
// the grid: the same list on every rank.
std::vector<double> link_scores(Backend& be, ProcessGrid& grid, DotLinkDecoder3D& decoder, const Matrix& z,
                                const NodePairList& positives, const NodePairList& negatives);

// The mean binary cross-entropy with logits of such a list (its first `positives` scores label 1,
// the rest label 0), in double.
double link_loss_of_scores(const std::vector<double>& scores, std::size_t positives);

// The same two on a block already selected (DotLinkDecoder3D::select with the pairs' places in
// the whole list): its entries whose index is below `positives` are links (label 1), the rest
// negatives, and the whole list holds `total` pairs (the mean's count; the scores' length).
// Either decoder scores a block (dot_link_decoder_3d.hpp, mlp_link_decoder_3d.hpp).
double link_loss_and_grad(Backend& be, ProcessGrid& grid, LinkDecoder3D& decoder, const Matrix& z,
                          const PairBlock& pairs, std::int64_t positives, std::int64_t total, Matrix& dz);
std::vector<double> link_scores(Backend& be, ProcessGrid& grid, LinkDecoder3D& decoder, const Matrix& z,
                                const PairBlock& pairs, std::size_t total);

// The ROC-AUC of `positives` against `negatives` (link_scores); the same on every rank.
double link_roc_auc(Backend& be, ProcessGrid& grid, DotLinkDecoder3D& decoder, const Matrix& z,
                    const NodePairList& positives, const NodePairList& negatives);

}  // namespace plexus
