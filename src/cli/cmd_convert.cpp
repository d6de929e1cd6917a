// `plexus convert`: bring graphs from other formats into Plexus format v1.
#include <fmt/format.h>

#include <memory>

#include "plexus/io.hpp"
#include "src/cli/commands.hpp"

namespace plexus::cli {

namespace {
struct PlanetoidOptions {
  std::string dir, name = "cora", out;
  bool raw_features = false;
};
}  // namespace

void add_convert_command(CLI::App& app) {
  CLI::App* conv = app.add_subcommand("convert", "Convert a dataset into Plexus format v1 (HDF5)");
  conv->require_subcommand(1);
  auto o = std::make_shared<PlanetoidOptions>();
  CLI::App* pl = conv->add_subcommand("planetoid", "Planetoid raw files ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index}");
  pl->add_option("--dir", o->dir, "Directory holding the ind.NAME.* files")->required();
  pl->add_option("--name", o->name, "Dataset name")
      ->check(CLI::IsMember({"cora", "citeseer", "pubmed"}))
      ->capture_default_str();
  pl->add_flag("--raw-features", o->raw_features, "Keep features as published (default: row-normalized)");
  pl->add_option("--out,-o", o->out, "Output file")->required();
  pl->callback([o] {
    const GraphData g = read_planetoid(o->dir, o->name, !o->raw_features);
    write_graph_h5(g, o->out);
    fmt::print("{}: {} nodes, {} edges, {} features, {} classes\n", o->out, g.num_nodes, g.num_edges(), g.num_features,
               g.num_classes);
  });
}

}  // namespace plexus::cli
