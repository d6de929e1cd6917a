// The link task's graph and pairs (link_task_graph.hpp).
#include "train/tasks/link_task_graph.hpp"

#include <utility>

#include "core/shard_layout.hpp"
#include "plexus/balance.hpp"
#include "plexus/error.hpp"

namespace plexus {

namespace {
// The link task's pairs: the held-out ones of `s`, and the training positives, each link of
// `graph` (the training links only) once (u < v in an undirected graph), without self-loops.
LinkPairs link_pairs(const GraphData& graph, LinkSplit s) {
  LinkPairs p;
  p.val_pos = std::move(s.val_pos);
  p.val_neg = std::move(s.val_neg);
  p.test_pos = std::move(s.test_pos);
  p.test_neg = std::move(s.test_neg);
  p.negatives_per_link = s.negatives_per_link;
  for (index_t u = 0; u < graph.num_nodes; ++u)
    for (index_t k = graph.indptr[static_cast<std::size_t>(u)]; k < graph.indptr[static_cast<std::size_t>(u) + 1]; ++k) {
      const index_t v = graph.indices[static_cast<std::size_t>(k)];
      if (v == u || (!graph.directed && v < u)) continue;
      p.train.u.push_back(u);
      p.train.v.push_back(v);
    }
  return p;
}
}  // namespace

LinkTaskGraph link_task_graph(const GraphData& input, const TrainConfig& cfg, const LinkSplit* held_out) {
  LinkTaskGraph t;
  if (held_out) {
    validate_link_split(input, *held_out, "graph");
    t.links = link_pairs(input, *held_out);
    return t;
  }
  t.drawn = input;
  t.links = link_pairs(*t.drawn, random_link_split(*t.drawn, cfg.link.val, cfg.link.test, cfg.seed));
  return t;
}

void move_to_output_rows(LinkPairs& links, const PreparedGraph& ordered, int layers) {
  links.row_of_node =
      inverse_permutation(output_order(layers, ordered.two_orders()) == 1 ? ordered.node_id_p : ordered.node_id_p2);
  for (NodePairList* l : {&links.train, &links.val_pos, &links.val_neg, &links.test_pos, &links.test_neg})
    *l = renumbered(std::move(*l), links.row_of_node);
}

void require_training_links(const LinkPairs& links) {
  if (links.train.size() == 0)
    throw InputError("graph", "has no training link for the link task (every link held out, or no edge)");
}

}  // namespace plexus
