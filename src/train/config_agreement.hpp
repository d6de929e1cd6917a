#pragma once
// Every rank trains with the same configuration and data: the checks the trainers run by
// default (GnnTrainer, GnnModel::predict, GptTrainer), each a hash compared over the grid's
// world communicator (src/core/rank_agreement.hpp). A pipeline that builds its configuration
// per rank (a seed from the rank, a width read from a per-host file) would otherwise train
// different models on the ranks of one grid, silently.
#include <cstdint>
#include <string>

#include "plexus/gpt.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"

namespace plexus {

// Every field, options of the kind included (two configurations hash alike iff they are equal
// field by field, floats by their bits).
std::uint64_t config_hash(const TrainConfig& c);
std::uint64_t config_hash(const GptTrainConfig& c);
// The corpus's splits, vocabulary and characters.
std::uint64_t corpus_hash(const TokenCorpus& corpus);

// Collective over grid.world(): InputError(where, "TrainConfig: ranks 0 and B hold different
// configurations ...") on every rank when some rank's differs from rank 0's.
void require_same_config(const TrainConfig& c, ProcessGrid& grid, const std::string& where);
void require_same_config(const GptTrainConfig& c, ProcessGrid& grid, const std::string& where);
void require_same_corpus(const TokenCorpus& corpus, ProcessGrid& grid, const std::string& where);

}  // namespace plexus
