// `plexus convert`: bring graphs from other formats into Plexus format v1.
#include <fmt/format.h>

#include <memory>

#include "io/files.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "src/cli/commands.hpp"

namespace plexus::cli {

namespace {
struct PlanetoidOptions {
  std::string dir, name = "cora", out;
  bool raw_features = false;
};

struct TextOptions {
  std::string input, out;
  bool directed = false;
  std::string features = "degree";
  EdgeListOptions opt;
};

void report(const GraphData& g, const std::string& out) {
  fmt::print("{}: {} nodes, {} edges, {} features, {} classes{}\n", out, g.num_nodes, g.num_edges(), g.num_features,
             g.num_classes, g.directed ? " (directed)" : "");
}

// Options shared by `edgelist` and `mtx`.
void add_text_options(CLI::App* cmd, TextOptions& o) {
  cmd->add_flag("--directed", o.directed, "Keep edge directions (rows = out-neighbours); default: symmetrize");
  cmd->add_option("--features", o.features,
                  "Synthetic node features (the format has none): degree = log(1 + degree), ones, or random = "
                  "--feature-width uniform [0,1) columns")
      ->check(CLI::IsMember({"degree", "ones", "random"}))
      ->capture_default_str();
  cmd->add_option("--feature-width", o.opt.feature_width, "Width of --features random")->capture_default_str();
  cmd->add_option("--classes", o.opt.classes, "num_classes to record (labels are all -1: the format has none)")
      ->capture_default_str();
  cmd->add_option("--seed", o.opt.seed, "Seed of --features random")->capture_default_str();
  cmd->add_option("--out,-o", o.out, "Output file (format v1 HDF5)")->required();
}

EdgeListOptions text_options(const TextOptions& o) {
  EdgeListOptions e = o.opt;
  e.symmetrize = !o.directed;
  e.features = o.features == "random" ? SyntheticFeatures::kRandom
               : o.features == "ones" ? SyntheticFeatures::kOnes
                                      : SyntheticFeatures::kDegree;
  return e;
}
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
    io::check_output(o->out, io::OutputNeeds::Seekable);  // the inputs read are refused again at the rename
    const GraphData g = read_planetoid(o->dir, o->name, !o->raw_features);
    write_graph_h5(g, o->out);
    report(g, o->out);
  });

  auto el = std::make_shared<TextOptions>();
  CLI::App* ec = conv->add_subcommand(
      "edgelist",
      "SNAP-style edge list 'u v [weight]' per line (plain or gzip; '#'/'%' comments; space, tab or comma "
      "separated). Without --num-nodes the ids that occur are relabelled 0..n-1 in increasing order.");
  ec->add_option("input", el->input, "Edge list file")->required();
  ec->add_option("--num-nodes", el->opt.num_nodes,
                 "Keep ids as they are (minus --base); they must be below this count (0 = relabel)")
      ->capture_default_str();
  ec->add_option("--base", el->opt.base, "Id of the first node: 0 or 1")->capture_default_str();
  add_text_options(ec, *el);
  ec->callback([el] {
    io::check_output(el->out, io::OutputNeeds::Seekable, {el->input});
    const GraphData g = read_edge_list(el->input, text_options(*el));
    write_graph_h5(g, el->out);
    report(g, el->out);
  });

  auto mm = std::make_shared<TextOptions>();
  CLI::App* mc = conv->add_subcommand(
      "mtx", "MatrixMarket 'matrix coordinate real|integer|pattern general|symmetric' (plain or gzip); "
             "symmetric files are expanded, values become edge weights");
  mc->add_option("input", mm->input, "MatrixMarket file")->required();
  add_text_options(mc, *mm);
  mc->callback([mm] {
    io::check_output(mm->out, io::OutputNeeds::Seekable, {mm->input});
    const GraphData g = read_matrix_market(mm->input, text_options(*mm));
    write_graph_h5(g, mm->out);
    report(g, mm->out);
  });

  auto og = std::make_shared<OgbOptions>();
  auto og_dir = std::make_shared<std::string>();
  auto og_out = std::make_shared<std::string>();
  auto og_directed = std::make_shared<bool>(false);
  CLI::App* oc = conv->add_subcommand(
      "ogb", "OGB node-property raw layout: DIR/raw/{edge,num-node-list,node-feat,node-label}.csv.gz and "
             "DIR/split/<split>/{train,valid,test}.csv.gz");
  oc->add_option("dir", *og_dir, "Dataset directory (holding raw/ and split/)")->required();
  oc->add_option("--split", og->split, "Split directory name under split/ (default: the only one)");
  oc->add_flag("--directed", *og_directed, "Keep edge directions; default: symmetrize (as GCN setups do)");
  oc->add_option("--out,-o", *og_out, "Output file (format v1 HDF5)")->required();
  oc->callback([og, og_dir, og_out, og_directed] {
    OgbOptions opt = *og;
    opt.symmetrize = !*og_directed;
    io::check_output(*og_out, io::OutputNeeds::Seekable);
    const GraphData g = read_ogb(*og_dir, opt);
    write_graph_h5(g, *og_out);
    report(g, *og_out);
  });
}

}  // namespace plexus::cli
