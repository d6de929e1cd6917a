#pragma once
// What the link task learns from a graph (docs/link-prediction.md): the graph its encoder passes
// messages over — the input without its held-out links — and the pairs: the training links and
// the held-out splits with their negatives. Training (shards_of_graph) and its plan's dry run
// (gnn_problem) take both from here, so the plan scores the pairs training scores.
#include <optional>

#include "plexus/graph.hpp"
#include "plexus/link_split.hpp"
#include "plexus/prepare.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"

namespace plexus {

struct LinkTaskGraph {
  std::optional<GraphData> drawn;  // the input without the links a drawn split held out
  LinkPairs links;
  // The graph message passing sees: `drawn`, or the input when the file brought its own split.
  const GraphData& graph(const GraphData& input) const { return drawn ? *drawn : input; }
};

// `held_out`: the file's own split (checked against `input` first: none of its links may be an
// edge of it), or nullptr for one drawn as TrainConfig::link says, with TrainConfig::seed.
LinkTaskGraph link_task_graph(const GraphData& input, const TrainConfig& cfg, const LinkSplit* held_out);

// The pairs of a run ordered in memory (ordered_in_memory, src/train/graph_shards.hpp) moved to
// the rows of its last layer's output (of `layers`), and LinkPairs::row_of_node set: the task
// moves the negatives it draws alike. Training and its plan's dry run both.
void move_to_output_rows(LinkPairs& links, const PreparedGraph& ordered, int layers);

// InputError unless `links` hold a training link to learn from (training's check, and its plan's).
void require_training_links(const LinkPairs& links);

}  // namespace plexus
