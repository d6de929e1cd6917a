#pragma once
// The memory checks before training and sampling (src/plan/memory_needs.cpp): what plexus train,
// plexus predict and plexus gpt train / sample will hold per rank, from the file's header and
// the options alone (plexus plan's predictions: a dry run of the trainer), compared with this
// rank's budget (plexus/sizes.hpp: set_memory_budget) before anything is loaded or allocated.
// A need past the budget is refused with InputError naming the option or file that drives it:
// a run too large for the machine ends with one line, not with the kernel's OOM killer.
#include <string>

#include "plexus/gpt.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "plan/gpt_plan.hpp"

namespace plexus {

// The largest rank of `grid` training on the graph file `path` with `cfg`: its tensors (plexus
// plan's MB/rank, predict_ranks of gnn_problem(path, cfg), first epoch) plus the host copy of
// the graph it loads (graph_host_bytes of the file's sizes, weighted): its 1/P share of the
// file, or all of it when `whole_graph` (a plain file ordered in memory: every rank reads it).
void check_train_memory(const std::string& path, const TrainConfig& cfg, GridShape grid, bool whole_graph);
// plexus predict with the model options `cfg` on the graph file `path`: its forward pass
// (GnnModel::predict; ProblemSize::inference), plus its 1/P of the file.
void check_predict_memory(const std::string& path, const TrainConfig& cfg, GridShape grid);
// The largest rank of `dp` replicas of `grid` in one step of GPT training with `cfg`
// (predict_gpt_ranks with the run's ZeRO stage, bucket and precision). `vocab_from` names what
// set the vocabulary (--vocab, or the text file).
void check_gpt_memory(const GptTrainConfig& cfg, GridShape grid, int dp, const std::string& vocab_from);
// plexus gpt sample of the model read from `path` for `prompts` prompts on `grid`: the largest
// rank's peak of predict_generation_ranks (the dry run of generate_gpt: parameters, the window
// pass, the decoder and its KV caches).
void check_sample_memory(const GptConfig& model, index_t prompts, bool kv_cache, GridShape grid,
                         const std::string& path);

}  // namespace plexus
