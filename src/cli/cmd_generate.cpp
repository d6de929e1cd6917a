// `plexus generate rmat`: synthetic graphs for benchmarks.
#include <fmt/format.h>

#include <memory>

#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "src/cli/commands.hpp"

namespace plexus::cli {

void add_generate_command(CLI::App& app) {
  CLI::App* gen = app.add_subcommand("generate", "Generate a synthetic graph dataset");
  gen->require_subcommand(1);
  auto opt = std::make_shared<RmatOptions>();
  auto out = std::make_shared<std::string>();
  CLI::App* rmat = gen->add_subcommand("rmat", "Graph500 R-MAT graph (a=0.57 b=0.19 c=0.19) with random features");
  rmat->add_option("--scale", opt->scale, "2^scale nodes")->capture_default_str();
  rmat->add_option("--edge-factor", opt->edge_factor, "Edges per node (before symmetrizing)")->capture_default_str();
  rmat->add_option("--features", opt->features, "Feature width")->capture_default_str();
  rmat->add_option("--classes", opt->classes, "Number of classes")->capture_default_str();
  rmat->add_option("--seed", opt->seed, "Random seed")->capture_default_str();
  rmat->add_option("--out,-o", *out, "Output file (format v1 HDF5)")->required();
  rmat->callback([opt, out] {
    const GraphData g = generate_rmat(*opt);
    write_graph_h5(g, *out);
    fmt::print("{}: {} nodes, {} edges, {} features, {} classes\n", *out, g.num_nodes, g.num_edges(), g.num_features,
               g.num_classes);
  });
}

}  // namespace plexus::cli
