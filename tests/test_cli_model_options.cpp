// The GNN kind on the command line (src/cli/model_options.hpp): --model and the options of each
// kind parsed into a TrainConfig, an option of another kind refused naming it, predict's --model
// checked against the model file's kind, the kind shown as text and JSON, and a model file of
// the other family (GNN / GPT) named as such.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <hdf5.h>

#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/gnn_model.hpp"
#include "scratch_dir.hpp"
#include "src/cli/model_options.hpp"
#include "src/cli/option_names.hpp"

namespace plexus::cli {
namespace {

// The TrainConfig that `args` (after the command name) give through the CLI's own options.
TrainConfig parsed(std::vector<std::string> args) {
  CLI::App app{"test"};
  ModelOptions o;
  add_model_options(&app, o, "The GNN");
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  TrainConfig cfg;
  apply_model_options(o, cfg);
  return cfg;
}

// The option and message of the InputError that `args` end with ("" when none), as the CLI
// prints it (the library's names as options: src/cli/option_names.hpp).
std::string refusal(const std::vector<std::string>& args) {
  try {
    parsed(args);
  } catch (const InputError& e) {
    return cli_message(e);
  }
  return "";
}

TEST(ModelOptions, DefaultIsTheGcn) {
  EXPECT_EQ(parsed({}).model, GnnSpec("gcn"));
  EXPECT_EQ(parsed({"--model", "gcn"}).model, GnnSpec());
}

// Every kind's options with their defaults, and the values given on the command line: all that
// the flags are made of is each kind's declaration.
TEST(ModelOptions, EveryKindTakesItsOwnOptions) {
  for (const GnnKindInfo& k : gnn_kinds()) {
    EXPECT_EQ(parsed({"--model", k.name}).model, GnnSpec(k.name)) << k.name;
    std::vector<std::string> args = {"--model", k.name};
    GnnSpec want(k.name);
    for (const GnnOptionInfo& o : k.options) {
      switch (o.type) {
        case GnnOptionType::Flag: args.push_back("--" + o.name); want.set(o.name, true); break;
        case GnnOptionType::Integer: args.insert(args.end(), {"--" + o.name, "3"}); want.set(o.name, 3); break;
        case GnnOptionType::Real: args.insert(args.end(), {"--" + o.name, "0.25"}); want.set(o.name, 0.25); break;
        case GnnOptionType::Choice:
          args.insert(args.end(), {"--" + o.name, o.choices.back()});
          want.set(o.name, o.choices.back());
          break;
      }
    }
    EXPECT_EQ(parsed(args).model, want) << k.name;
  }
}

TEST(ModelOptions, SageTakesItsAggregatorAndNormalisation) {
  TrainConfig c = parsed({"--model", "sage"});
  EXPECT_EQ(c.model.kind(), "sage");
  EXPECT_EQ(c.model.choice("aggregator"), "mean");
  EXPECT_FALSE(c.model.flag("normalize"));
  c = parsed({"--model", "sage", "--aggregator", "sum", "--normalize"});
  EXPECT_EQ(c.model.choice("aggregator"), "sum");
  EXPECT_TRUE(c.model.flag("normalize"));
  EXPECT_EQ(parsed({"--aggregator=mean", "--model=sage"}).model.choice("aggregator"), "mean");  // any order
}

TEST(ModelOptions, GinTakesItsEpsilon) {
  TrainConfig c = parsed({"--model", "gin"});
  EXPECT_EQ(c.model.real("gin-eps"), 0.0f);
  EXPECT_FALSE(c.model.flag("train-eps"));
  c = parsed({"--model", "gin", "--gin-eps", "-0.25", "--train-eps"});
  EXPECT_EQ(c.model.real("gin-eps"), -0.25f);
  EXPECT_TRUE(c.model.flag("train-eps"));
  // Past float's range: refused naming --gin-eps.
  EXPECT_EQ(refusal({"--model", "gin", "--gin-eps", "1e300"}), "--gin-eps: must be a number in [-1e+06, 1e+06]");
}

TEST(ModelOptions, GatTakesItsHeadsDropoutAndSlope) {
  TrainConfig c = parsed({"--model", "gat"});
  EXPECT_EQ(c.model.integer("heads"), 8);  // PyG's GAT example on Cora: 8 heads, 1 output head
  EXPECT_EQ(c.model.integer("out-heads"), 1);
  EXPECT_EQ(c.model.real("attn-dropout"), 0.0f);
  EXPECT_EQ(c.model.real("negative-slope"), 0.2f);
  c = parsed({"--model", "gat", "--heads", "4", "--out-heads", "3", "--attn-dropout", "0.6", "--negative-slope",
              "0.1"});
  EXPECT_EQ(c.model.integer("heads"), 4);
  EXPECT_EQ(c.model.integer("out-heads"), 3);
  EXPECT_EQ(c.model.real("attn-dropout"), 0.6f);
  EXPECT_EQ(c.model.real("negative-slope"), 0.1f);
  EXPECT_EQ(parsed({"--heads=2", "--model=gat"}).model.integer("heads"), 2);  // any order
}

// validate()'s refusal of `args` (the option it names and its message, as the CLI prints them;
// "" when none).
std::string invalid(std::vector<std::string> args) {
  CLI::App app{"test"};
  ModelOptions o;
  TrainConfig cfg;
  add_model_options(&app, o, "The GNN");
  app.add_option("--hidden", cfg.hidden);
  app.add_option("--layers", cfg.layers);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  try {
    apply_model_options(o, cfg);
    validate(cfg);
  } catch (const InputError& e) {
    return cli_message(e);
  }
  return "";
}

TEST(ModelOptions, GatsBadValuesAreRefusedNamingTheOption) {
  EXPECT_EQ(invalid({"--model", "gat", "--heads", "0"}), "--heads: must be between 1 and 1024");
  EXPECT_EQ(invalid({"--model", "gat", "--out-heads", "-1"}), "--out-heads: must be between 1 and 1024");
  EXPECT_EQ(invalid({"--model", "gat", "--heads", "x"}), "--heads: 'x' is not an integer");
  EXPECT_EQ(invalid({"--model", "gat", "--attn-dropout", "1"}), "--attn-dropout: must be a number in [0, 1)");
  EXPECT_EQ(invalid({"--model", "gat", "--attn-dropout", "nan"}), "--attn-dropout: must be a number in [0, 1)");
  EXPECT_EQ(invalid({"--model", "gat", "--negative-slope", "-0.2"}), "--negative-slope: must be a number in [0, 1000]");
  // Past float's range: infinite, refused as any other value out of range.
  EXPECT_EQ(invalid({"--model", "gat", "--negative-slope", "1e300"}), "--negative-slope: must be a number in [0, 1000]");
  // The hidden width is the hidden heads' features concatenated.
  EXPECT_EQ(invalid({"--model", "gat", "--hidden", "12", "--heads", "8"}).rfind("--hidden: must be a multiple of --heads (8)", 0),
            0u);
  EXPECT_EQ(invalid({"--model", "gat", "--hidden", "16", "--heads", "4"}), "");
  // One layer has no hidden layer: only its output heads count.
  EXPECT_EQ(invalid({"--model", "gat", "--layers", "1", "--hidden", "12", "--heads", "8"}), "");
}

// Every option of every kind, given with --model of any other kind that lacks it: refused,
// naming the option and the kinds that have it.
TEST(ModelOptions, AnOptionOfAnotherKindIsRefusedNamingIt) {
  for (const GnnKindInfo& owner : gnn_kinds())
    for (const GnnOptionInfo& o : owner.options) {
      const std::vector<std::string> kinds = kinds_with_option(o.name);
      std::string owners;  // "gin or gine": every kind that has it
      for (const std::string& k : kinds) owners += (owners.empty() ? "" : " or ") + k;
      EXPECT_NE(std::find(kinds.begin(), kinds.end(), owner.name), kinds.end()) << o.name;
      const std::string value = o.type == GnnOptionType::Choice ? o.choices.front() : "1";
      for (const GnnKindInfo& other : gnn_kinds()) {
        if (std::find(kinds.begin(), kinds.end(), other.name) != kinds.end()) continue;
        std::vector<std::string> args = {"--model", other.name, "--" + o.name};
        if (o.type != GnnOptionType::Flag) args.push_back(value);
        EXPECT_EQ(refusal(args), "--" + o.name + ": only with --model " + owners) << other.name;
      }
    }
  EXPECT_EQ(refusal({"--model", "gin", "--aggregator", "mean"}), "--aggregator: only with --model sage");
  EXPECT_EQ(refusal({"--model", "gat", "--normalize"}), "--normalize: only with --model sage");
  // Without --model the run is a GCN: the same.
  EXPECT_EQ(refusal({"--aggregator", "sum"}), "--aggregator: only with --model sage");
  EXPECT_EQ(refusal({"--gin-eps", "0.5"}), "--gin-eps: only with --model gin or gine");
  EXPECT_EQ(refusal({"--heads", "8"}), "--heads: only with --model gat");
  // Even a value the other kind would refuse: the kind is the first thing wrong.
  EXPECT_EQ(refusal({"--model", "gin", "--aggregator", "max"}), "--aggregator: only with --model sage");
  EXPECT_EQ(refusal({"--model", "sage", "--heads", "0"}), "--heads: only with --model gat");
}

TEST(ModelOptions, BadValuesAreRefusedNamingTheOption) {
  EXPECT_EQ(refusal({"--model", "gpt"}), "--model: 'gpt' is not one of " + gnn_kind_names());
  EXPECT_EQ(refusal({"--model", "GCN"}), "--model: 'GCN' is not one of " + gnn_kind_names());
  EXPECT_EQ(refusal({"--model", "sage", "--aggregator", "max"}), "--aggregator: 'max' is not one of mean, sum");
  // Flags set false (a --config file's `normalize = false`) are not given.
  ModelOptions o;
  o.options["normalize"].flag = false;
  o.options["train-eps"].flag = false;
  TrainConfig c;
  EXPECT_NO_THROW(apply_model_options(o, c));
}

TEST(ModelOptions, PredictsModelMustBeTheFilesKind) {
  EXPECT_NO_THROW(require_model_kind(std::nullopt, "sage", "m.h5"));
  EXPECT_NO_THROW(require_model_kind(std::string("sage"), "sage", "m.h5"));
  try {
    require_model_kind(std::string("gcn"), "gin", "m.h5");
    ADD_FAILURE() << "gcn accepted for a gin model";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--model");
    const std::string what = e.what();
    EXPECT_NE(what.find("m.h5 holds a gin model, not gcn"), std::string::npos) << what;
  }
  try {
    require_model_kind(std::string("gin "), "gin", "m.h5");
    ADD_FAILURE() << "'gin ' accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(cli_message(e), "--model: 'gin ' is not one of " + gnn_kind_names());
  }
  try {
    require_model_kind(std::string("gcn"), "gat", "m.h5");
    ADD_FAILURE() << "gcn accepted for a gat model";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("m.h5 holds a gat model, not gcn"), std::string::npos) << e.what();
  }
}

TEST(ModelOptions, TextAndJsonShowTheKindAndItsOptions) {
  TrainConfig c;
  EXPECT_EQ(model_text(c), "gcn");
  EXPECT_EQ(model_json(c).dump(), R"({"model":"gcn"})");
  c.model = GnnSpec("sage");
  EXPECT_EQ(model_text(c), "sage (aggregator mean, normalize off)");
  c.model.set("aggregator", "sum").set("normalize", true);
  EXPECT_EQ(model_text(c), "sage (aggregator sum, normalize on)");
  EXPECT_EQ(model_json(c).dump(), R"({"model":"sage","aggregator":"sum","normalize":true})");
  c.model = GnnSpec("gin");
  EXPECT_EQ(model_text(c), "gin (gin-eps 0, train-eps off)");
  c.model.set("gin-eps", 0.1).set("train-eps", true);
  EXPECT_EQ(model_text(c), "gin (gin-eps 0.1, train-eps on)");
  EXPECT_EQ(model_json(c).dump(), R"({"model":"gin","gin_eps":0.1,"train_eps":true})");
  c.model = GnnSpec("gat");
  EXPECT_EQ(model_text(c), "gat (heads 8, out-heads 1, attn-dropout 0, negative-slope 0.2, edge-features off)");
  EXPECT_EQ(model_json(c).dump(),
            R"({"model":"gat","heads":8,"out_heads":1,"attn_dropout":0.0,"negative_slope":0.2,"edge_features":false})");
  c.model.set("heads", 1).set("out-heads", 6).set("attn-dropout", 0.6).set("negative-slope", 0.01);
  EXPECT_EQ(model_text(c), "gat (heads 1, out-heads 6, attn-dropout 0.6, negative-slope 0.01, edge-features off)");
  EXPECT_EQ(model_json(c).dump(),
            R"({"model":"gat","heads":1,"out_heads":6,"attn_dropout":0.6,"negative_slope":0.01,"edge_features":false})");
  EXPECT_EQ(json_float(0.01f), 0.01);
}

// A one-layer GNN model's state (2 features, 3 classes) after one epoch: its options say the
// kind (model files are read here for what they say of it, not for its parameters).
ModelState one_layer_state() {
  ModelState state;
  for (const auto& [name, rows] : {std::pair<std::string, index_t>{"layer0/weight", 2}, {"layer0/bias", 1}}) {
    ParameterState p;
    p.name = name;
    p.rows = rows;
    p.cols = 3;
    p.value.assign(static_cast<std::size_t>(rows * 3), 0.5f);
    p.adam_m.assign(p.value.size(), 0.0f);
    p.adam_v.assign(p.value.size(), 0.0f);
    state.parameters.push_back(p);
  }
  state.epochs_done = 1;
  state.best.epoch = 0;
  return state;
}

// Overwrites attribute `name` of /options in the HDF5 file `path` with a scalar of `type`.
template <class T>
void put_option_attr(const std::string& path, const std::string& name, hid_t type, T value) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t g = H5Gopen2(f, "/options", H5P_DEFAULT);
  if (H5Aexists(g, name.c_str()) > 0) H5Adelete(g, name.c_str());
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(g, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(H5Awrite(a, type, &value), 0);
  H5Aclose(a);
  H5Sclose(space);
  H5Gclose(g);
  H5Fclose(f);
}

// Every kind's options, each set away from its default, come back from the model file.
TEST(ModelOptions, AModelFileRecordsEveryKindsOptions) {
  plexus::testing::ScratchDir dir;
  const std::string path = dir.file("m.h5");
  for (const GnnKindInfo& k : gnn_kinds()) {
    TrainConfig options;
    options.layers = 1;
    options.model = GnnSpec(k.name);
    for (const GnnOptionInfo& o : k.options) {
      switch (o.type) {
        case GnnOptionType::Flag: options.model.set(o.name, true); break;
        case GnnOptionType::Integer: options.model.set(o.name, 3); break;
        case GnnOptionType::Real: options.model.set(o.name, 0.375); break;
        case GnnOptionType::Choice: options.model.set(o.name, o.choices.back()); break;
      }
    }
    write_gnn_model_h5(one_layer_state(), {2, 3}, options, path);
    EXPECT_EQ(read_gnn_model_info_h5(path).config.model, options.model) << k.name;
  }
}

TEST(ModelOptions, AGatModelFileRecordsItsOptions) {
  plexus::testing::ScratchDir dir;
  TrainConfig options;
  options.model = GnnSpec("gat").set("heads", 4).set("out-heads", 3).set("attn-dropout", 0.6).set("negative-slope", 0.1);
  options.layers = 1;
  const std::string path = dir.file("gat.h5");
  write_gnn_model_h5(one_layer_state(), {2, 3}, options, path);
  const TrainConfig read = read_gnn_model_info_h5(path).config;
  EXPECT_EQ(read.model.kind(), "gat");
  EXPECT_EQ(read.model.integer("heads"), 4);
  EXPECT_EQ(read.model.integer("out-heads"), 3);
  EXPECT_EQ(read.model.real("attn-dropout"), 0.6f);
  EXPECT_EQ(read.model.real("negative-slope"), 0.1f);
  EXPECT_EQ(model_text(read), "gat (heads 4, out-heads 3, attn-dropout 0.6, negative-slope 0.1, edge-features off)");
  // Options a run would refuse are refused in the file too, naming the attribute: a model built
  // from them would not be the one the parameters belong to.
  const auto refusal_of_file = [&] {
    try {
      read_gnn_model_info_h5(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  put_option_attr<std::int32_t>(path, "out_heads", H5T_NATIVE_INT32, 0);
  EXPECT_NE(refusal_of_file().find("/options: attribute out_heads: must be between 1 and 1024"), std::string::npos)
      << refusal_of_file();
  write_gnn_model_h5(one_layer_state(), {2, 3}, options, path);
  put_option_attr<float>(path, "attn_dropout", H5T_NATIVE_FLOAT, 1.0f);
  EXPECT_NE(refusal_of_file().find("/options: attribute attn_dropout: must be a number in [0, 1)"), std::string::npos)
      << refusal_of_file();
  // The file's layers come from its widths: hidden 16 with 3 heads.
  TrainConfig two = options;
  two.layers = 2;
  two.hidden = 16;
  two.model.set("heads", 4);
  write_gnn_model_h5(one_layer_state(), {2, 16, 3}, two, path);
  put_option_attr<std::int32_t>(path, "heads", H5T_NATIVE_INT32, 3);
  EXPECT_NE(refusal_of_file().find("/options: TrainConfig.hidden: must be a multiple of GnnSpec.heads (3)"), std::string::npos)
      << refusal_of_file();
}

// Overwrites (or with `value` empty deletes) the string attribute `name` of /options.
void put_option_text(const std::string& path, const std::string& name, const std::string& value) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t g = H5Gopen2(f, "/options", H5P_DEFAULT);
  if (H5Aexists(g, name.c_str()) > 0) H5Adelete(g, name.c_str());
  if (!value.empty()) {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, value.size());
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate2(g, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(H5Awrite(a, type, value.data()), 0);
    H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
  }
  H5Gclose(g);
  H5Fclose(f);
}

// A model file whose kind or options disagree with the parameters it holds is refused, naming
// the first parameter of another model — never run as the model its attributes say with part of
// the parameters: a SAGE file without its kind (read as a GCN), a GAT relabelled gcn, a GIN with
// a trained epsilon marked fixed. The untouched files load.
TEST(ModelOptions, AModelFileWhoseParametersAreAnotherModelsIsRefusedNamingOne) {
  plexus::testing::ScratchDir dir;
  SbmOptions so;
  so.nodes = 40;
  so.classes = 3;
  so.features = 5;
  so.seed = 2;
  const GraphData g = generate_sbm(so);
  struct Case {
    GnnSpec model;
    std::string attr, value, parameter;
  };
  const std::vector<Case> cases{
      {GnnSpec("sage"), "model", "", "/value/layer0/root_weight: a parameter that a gcn model"},
      {GnnSpec("gat").set("heads", 2), "model", "gcn", "/value/layer0/"},
      {GnnSpec("gin").set("train-eps", true), "train_eps", "", "/value/layer0/eps: a parameter that a gin"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model.kind());
    TrainConfig cfg;
    cfg.model = c.model;
    cfg.layers = 2;
    cfg.hidden = 4;
    cfg.epochs = 1;
    auto be = make_cpu_backend(1);
    auto grid = ProcessGrid::single();
    GnnTrainer trainer(g, cfg, *be, *grid);
    trainer.epoch();
    const std::string path = dir.file(c.model.kind() + ".h5");
    trainer.save_model(path);
    EXPECT_NO_THROW(GnnModel::load(path).predict(g, *be, *grid));
    if (c.attr == "train_eps") {
      put_option_attr<std::uint8_t>(path, "train_eps", H5T_NATIVE_UINT8, 0);
    } else {
      put_option_text(path, c.attr, c.value);
    }
    try {
      GnnModel::load(path).predict(g, *be, *grid);
      ADD_FAILURE() << "the edited file was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.parameter), std::string::npos) << e.what();
    }
  }
}

TEST(ModelOptions, AModelFileOfTheOtherFamilyIsNamedAsSuch) {
  plexus::testing::ScratchDir dir;
  // A one-layer GNN model file of a sage run.
  const ModelState state = one_layer_state();
  TrainConfig options;
  options.layers = 1;
  options.model = GnnSpec("sage");
  const std::string gnn = dir.file("gnn.h5");
  write_gnn_model_h5(state, {2, 3}, options, gnn);
  EXPECT_NO_THROW(require_model_file(gnn, ModelFamily::Gnn));
  try {
    require_model_file(gnn, ModelFamily::Gpt);
    ADD_FAILURE() << "a GNN model file accepted as a GPT's";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), gnn);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("is a GNN model file (plexus train --save-model", 0), 0u) << what;
    EXPECT_NE(what.find("not a GPT model file"), std::string::npos) << what;
  }
  EXPECT_EQ(read_gnn_model_info_h5(gnn).config.model.kind(), "sage");
  // Files of no Plexus kind are left to their reader, which says what is wrong with them.
  EXPECT_NO_THROW(require_model_file(dir.file("missing.h5"), ModelFamily::Gnn));
  EXPECT_NO_THROW(require_model_file(dir.write("text.h5", "not HDF5"), ModelFamily::Gpt));
  EXPECT_NO_THROW(require_model_file(dir.path().string(), ModelFamily::Gnn));
}

}  // namespace
}  // namespace plexus::cli
