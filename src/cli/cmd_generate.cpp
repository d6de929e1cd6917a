// `plexus generate rmat|sbm|road`: synthetic graphs for benchmarks (R-MAT, road-like) and accuracy
// tests (SBM).
#include <fmt/format.h>

#include <memory>

#include "io/files/safe_files.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "src/cli/named_choices.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/edge_split_option.hpp"

namespace plexus::cli {

void add_generate_command(CLI::App& app) {
  CLI::App* gen = app.add_subcommand("generate", "Generate a synthetic graph dataset");
  gen->require_subcommand(1);
  auto opt = std::make_shared<RmatOptions>();
  auto out = std::make_shared<std::string>();
  CLI::App* rmat = gen->add_subcommand("rmat", "Graph500 R-MAT graph (a=0.57 b=0.19 c=0.19) with random features");
  rmat->add_option("--scale", opt->scale, "2^scale nodes")->capture_default_str();
  rmat->add_option("--edge-factor", opt->edge_factor, "Edges per node (before symmetrizing)")->capture_default_str();
  rmat->add_option("--feature-width", opt->features, "Feature width")->capture_default_str();
  rmat->add_option("--classes", opt->classes, "Number of classes")->capture_default_str();
  rmat->add_option("--seed", opt->seed, "Random seed")->capture_default_str();
  rmat->add_option("--out,-o", *out, "Output file (format v1 HDF5)")->required();
  rmat->callback([opt, out] {
    io::check_output(*out, io::OutputNeeds::Seekable);  // before the work, not after it
    const GraphData g = generate_rmat(*opt);
    write_graph_h5(g, *out);
    fmt::print("{}: {} nodes, {} edges, {} features, {} classes\n", *out, g.num_nodes, g.num_edges(), g.num_features,
               g.num_classes);
  });

  auto sbm = std::make_shared<SbmOptions>();
  auto sbm_out = std::make_shared<std::string>();
  CLI::App* sc = gen->add_subcommand(
      "sbm", "Stochastic block model: planted classes, homophilous edges, features = class centroid + noise");
  sc->add_option("--nodes", sbm->nodes, "Number of nodes")->capture_default_str();
  sc->add_option("--classes", sbm->classes, "Number of planted classes")->capture_default_str();
  sc->add_option("--communities", sbm->communities,
                 "Number of planted communities, each node's class its community mod --classes (0: one per class)")
      ->capture_default_str();
  sc->add_option("--avg-degree", sbm->avg_degree, "Mean degree (after symmetrizing)")->capture_default_str();
  sc->add_option("--homophily", sbm->homophily, "Probability that an edge stays within its class")->capture_default_str();
  sc->add_option("--feature-width", sbm->features, "Feature width")->capture_default_str();
  sc->add_option("--feature-signal", sbm->feature_signal,
                 "Centroid scale relative to unit noise (0 = features carry no class signal)")
      ->capture_default_str();
  sc->add_option("--train-fraction", sbm->train_fraction, "Fraction of nodes in the train mask")->capture_default_str();
  sc->add_option("--val-fraction", sbm->val_fraction, "Fraction of nodes in the val mask (the rest: test)")
      ->capture_default_str();
  sc->add_option("--seed", sbm->seed, "Random seed")->capture_default_str();
  sc->add_option("--out,-o", *sbm_out, "Output file (format v1 HDF5)")->required();
  auto task = std::make_shared<std::string>("node");
  auto edge_split = std::make_shared<std::string>();
  sc->add_option("--task", *task,
                 "node: planted classes to learn (masks); link: the same graph with its links split for plexus train "
                 "--task link (/links: held-out links between and within the planted communities)")
      ->check(CLI::IsMember(choice_names(gnn_tasks())))
      ->capture_default_str();
  sc->add_option("--edge-split", *edge_split,
                 "--task link: TRAIN,VAL,TEST shares of the links (default 0.85,0.05,0.1; drawn with --seed)");
  sc->callback([sbm, sbm_out, task, edge_split] {
    const bool link = parse_gnn_task(*task) == GnnTask::Link;
    if (!link && !edge_split->empty()) throw InputError("--edge-split", "splits the links of --task link");
    const SplitFractions shares = parse_edge_split(edge_split->empty() ? "0.85,0.05,0.1" : *edge_split);
    io::check_output(*sbm_out, io::OutputNeeds::Seekable);
    GraphData g = generate_sbm(*sbm);
    if (link) {
      const LinkSplit held_out = draw_edge_split(g, shares, sbm->seed, "the generated graph");
      write_with_link_split(g, NodeNames{}, held_out, *sbm_out);
    } else {
      write_graph_h5(g, *sbm_out);
    }
    fmt::print("{}: {} nodes, {} edges, {} features, {} classes\n", *sbm_out, g.num_nodes, g.num_edges(),
               g.num_features, g.num_classes);
  });

  auto road = std::make_shared<RoadOptions>();
  auto road_out = std::make_shared<std::string>();
  CLI::App* rc = gen->add_subcommand(
      "road", "Road-like graph: a lattice with missing streets, numbered row by row (neighbours near in the order)");
  rc->add_option("--nodes", road->nodes, "Number of nodes")->capture_default_str();
  rc->add_option("--classes", road->classes, "Districts (rectangles of the map) as classes")->capture_default_str();
  rc->add_option("--avg-degree", road->avg_degree, "Mean degree, at most 4 (each lattice link kept with avg-degree/4)")
      ->capture_default_str();
  rc->add_option("--feature-width", road->features, "Feature width")->capture_default_str();
  rc->add_option("--feature-signal", road->feature_signal, "Scale of the class centroid in the features")
      ->capture_default_str();
  rc->add_option("--train-fraction", road->train_fraction, "Fraction of nodes in the train mask")->capture_default_str();
  rc->add_option("--val-fraction", road->val_fraction, "Fraction of nodes in the val mask (the rest: test)")
      ->capture_default_str();
  rc->add_option("--seed", road->seed, "Random seed")->capture_default_str();
  rc->add_option("--out,-o", *road_out, "Output file (format v1 HDF5)")->required();
  rc->callback([road, road_out] {
    io::check_output(*road_out, io::OutputNeeds::Seekable);
    const GraphData g = generate_road(*road);
    write_graph_h5(g, *road_out);
    fmt::print("{}: {} nodes, {} edges, {} features, {} classes\n", *road_out, g.num_nodes, g.num_edges(),
               g.num_features, g.num_classes);
  });
}

}  // namespace plexus::cli
