// The GNN kind on the command line (src/cli/model_options.hpp): --model and the options of each
// kind parsed into a TrainConfig, an option of another kind refused naming it, predict's --model
// checked against the model file's kind, the kind shown as text and JSON, and a model file of
// the other family (GNN / GPT) named as such.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "scratch_dir.hpp"
#include "src/cli/model_options.hpp"

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

// The option and message of the InputError that `args` end with ("" when none).
std::string refusal(const std::vector<std::string>& args) {
  try {
    parsed(args);
  } catch (const InputError& e) {
    return e.message();
  }
  return "";
}

TEST(ModelOptions, DefaultIsTheGcnWithEveryKindsDefaults) {
  const TrainConfig c = parsed({});
  const TrainConfig d;
  EXPECT_EQ(c.model, GnnKind::Gcn);
  EXPECT_EQ(c.aggregator, d.aggregator);
  EXPECT_EQ(c.sage_normalize, d.sage_normalize);
  EXPECT_EQ(c.gin_eps, d.gin_eps);
  EXPECT_EQ(c.gin_train_eps, d.gin_train_eps);
  EXPECT_EQ(c.gat_heads, d.gat_heads);
  EXPECT_EQ(c.gat_out_heads, d.gat_out_heads);
  EXPECT_EQ(c.attn_dropout, d.attn_dropout);
  EXPECT_EQ(c.negative_slope, d.negative_slope);
  EXPECT_EQ(parsed({"--model", "gcn"}).model, GnnKind::Gcn);
}

TEST(ModelOptions, SageTakesItsAggregatorAndNormalisation) {
  TrainConfig c = parsed({"--model", "sage"});
  EXPECT_EQ(c.model, GnnKind::Sage);
  EXPECT_EQ(c.aggregator, SageAggregator::Mean);
  EXPECT_FALSE(c.sage_normalize);
  c = parsed({"--model", "sage", "--aggregator", "sum", "--normalize"});
  EXPECT_EQ(c.aggregator, SageAggregator::Sum);
  EXPECT_TRUE(c.sage_normalize);
  EXPECT_EQ(parsed({"--aggregator=mean", "--model=sage"}).aggregator, SageAggregator::Mean);  // any order
}

TEST(ModelOptions, GinTakesItsEpsilon) {
  TrainConfig c = parsed({"--model", "gin"});
  EXPECT_EQ(c.model, GnnKind::Gin);
  EXPECT_EQ(c.gin_eps, 0.0f);
  EXPECT_FALSE(c.gin_train_eps);
  c = parsed({"--model", "gin", "--gin-eps", "-0.25", "--train-eps"});
  EXPECT_EQ(c.gin_eps, -0.25f);
  EXPECT_TRUE(c.gin_train_eps);
  // Past float's range: infinite, which validate() refuses naming --gin-eps.
  c = parsed({"--model", "gin", "--gin-eps", "1e300"});
  try {
    validate(c);
    ADD_FAILURE() << "1e300 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--gin-eps");
  }
}

TEST(ModelOptions, GatTakesItsHeadsDropoutAndSlope) {
  TrainConfig c = parsed({"--model", "gat"});
  EXPECT_EQ(c.model, GnnKind::Gat);
  EXPECT_EQ(c.gat_heads, 8);  // PyG's GAT example on Cora: 8 heads, 1 output head
  EXPECT_EQ(c.gat_out_heads, 1);
  EXPECT_EQ(c.attn_dropout, 0.0f);
  EXPECT_EQ(c.negative_slope, 0.2f);
  c = parsed({"--model", "gat", "--heads", "4", "--out-heads", "3", "--attn-dropout", "0.6", "--negative-slope",
              "0.1"});
  EXPECT_EQ(c.gat_heads, 4);
  EXPECT_EQ(c.gat_out_heads, 3);
  EXPECT_EQ(c.attn_dropout, 0.6f);
  EXPECT_EQ(c.negative_slope, 0.1f);
  EXPECT_EQ(parsed({"--heads=2", "--model=gat"}).gat_heads, 2);  // any order
}

// validate()'s refusal of `args` (the option it names and its message; "" when none).
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
    return e.message();
  }
  return "";
}

TEST(ModelOptions, GatsBadValuesAreRefusedNamingTheOption) {
  EXPECT_EQ(invalid({"--model", "gat", "--heads", "0"}), "--heads: must be between 1 and 1024");
  EXPECT_EQ(invalid({"--model", "gat", "--out-heads", "-1"}), "--out-heads: must be between 1 and 1024");
  EXPECT_EQ(invalid({"--model", "gat", "--attn-dropout", "1"}), "--attn-dropout: must be in [0, 1)");
  EXPECT_EQ(invalid({"--model", "gat", "--attn-dropout", "nan"}), "--attn-dropout: must be in [0, 1)");
  EXPECT_EQ(invalid({"--model", "gat", "--negative-slope", "-0.2"}),
            "--negative-slope: must be a number between 0 and 1000");
  // Past float's range: infinite, refused as any other value out of range.
  EXPECT_EQ(invalid({"--model", "gat", "--negative-slope", "1e300"}),
            "--negative-slope: must be a number between 0 and 1000");
  // The hidden width is the hidden heads' features concatenated.
  EXPECT_EQ(invalid({"--model", "gat", "--hidden", "12", "--heads", "8"}).rfind("--hidden: must be a multiple of --heads (8)", 0),
            0u);
  EXPECT_EQ(invalid({"--model", "gat", "--hidden", "16", "--heads", "4"}), "");
  // One layer has no hidden layer: only its output heads count.
  EXPECT_EQ(invalid({"--model", "gat", "--layers", "1", "--hidden", "12", "--heads", "8"}), "");
}

TEST(ModelOptions, AnOptionOfAnotherKindIsRefusedNamingIt) {
  for (const std::string kind : {"gcn", "gin", "gat"}) {
    EXPECT_EQ(refusal({"--model", kind, "--aggregator", "mean"}), "--aggregator: only with --model sage");
    EXPECT_EQ(refusal({"--model", kind, "--normalize"}), "--normalize: only with --model sage");
  }
  for (const std::string kind : {"gcn", "sage", "gat"}) {
    EXPECT_EQ(refusal({"--model", kind, "--gin-eps", "0"}), "--gin-eps: only with --model gin");
    EXPECT_EQ(refusal({"--model", kind, "--train-eps"}), "--train-eps: only with --model gin");
  }
  for (const std::string kind : {"gcn", "sage", "gin"}) {
    EXPECT_EQ(refusal({"--model", kind, "--heads", "8"}), "--heads: only with --model gat");
    EXPECT_EQ(refusal({"--model", kind, "--out-heads", "1"}), "--out-heads: only with --model gat");
    EXPECT_EQ(refusal({"--model", kind, "--attn-dropout", "0.6"}), "--attn-dropout: only with --model gat");
    EXPECT_EQ(refusal({"--model", kind, "--negative-slope", "0.2"}), "--negative-slope: only with --model gat");
  }
  // Without --model the run is a GCN: the same.
  EXPECT_EQ(refusal({"--aggregator", "sum"}), "--aggregator: only with --model sage");
  EXPECT_EQ(refusal({"--gin-eps", "0.5"}), "--gin-eps: only with --model gin");
  EXPECT_EQ(refusal({"--heads", "8"}), "--heads: only with --model gat");
  // Even a value the other kind would refuse: the kind is the first thing wrong.
  EXPECT_EQ(refusal({"--model", "gin", "--aggregator", "max"}), "--aggregator: only with --model sage");
  EXPECT_EQ(refusal({"--model", "sage", "--heads", "0"}), "--heads: only with --model gat");
}

TEST(ModelOptions, BadValuesAreRefusedNamingTheOption) {
  EXPECT_EQ(refusal({"--model", "gpt"}), "--model: 'gpt' is not one of gcn, sage, gin, gat");
  EXPECT_EQ(refusal({"--model", "GCN"}), "--model: 'GCN' is not one of gcn, sage, gin, gat");
  EXPECT_EQ(refusal({"--model", "sage", "--aggregator", "max"}), "--aggregator: 'max' is not one of mean, sum");
  // Flags set false (a --config file's `normalize = false`) are not given.
  ModelOptions o;
  o.normalize = false;
  o.train_eps = false;
  TrainConfig c;
  EXPECT_NO_THROW(apply_model_options(o, c));
}

TEST(ModelOptions, PredictsModelMustBeTheFilesKind) {
  EXPECT_NO_THROW(require_model_kind(std::nullopt, GnnKind::Sage, "m.h5"));
  EXPECT_NO_THROW(require_model_kind(std::string("sage"), GnnKind::Sage, "m.h5"));
  try {
    require_model_kind(std::string("gcn"), GnnKind::Gin, "m.h5");
    ADD_FAILURE() << "gcn accepted for a gin model";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--model");
    const std::string what = e.what();
    EXPECT_NE(what.find("m.h5 holds a gin model, not gcn"), std::string::npos) << what;
  }
  try {
    require_model_kind(std::string("gin "), GnnKind::Gin, "m.h5");
    ADD_FAILURE() << "'gin ' accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message(), "--model: 'gin ' is not one of gcn, sage, gin, gat");
  }
  try {
    require_model_kind(std::string("gcn"), GnnKind::Gat, "m.h5");
    ADD_FAILURE() << "gcn accepted for a gat model";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("m.h5 holds a gat model, not gcn"), std::string::npos) << e.what();
  }
}

TEST(ModelOptions, TextAndJsonShowTheKindAndItsOptions) {
  TrainConfig c;
  EXPECT_EQ(model_text(c), "gcn");
  EXPECT_EQ(model_json(c).dump(), R"({"model":"gcn"})");
  c.model = GnnKind::Sage;
  EXPECT_EQ(model_text(c), "sage (mean aggregator)");
  c.aggregator = SageAggregator::Sum;
  c.sage_normalize = true;
  EXPECT_EQ(model_text(c), "sage (sum aggregator, normalized)");
  EXPECT_EQ(model_json(c).dump(), R"({"model":"sage","aggregator":"sum","normalize":true})");
  c.model = GnnKind::Gin;
  EXPECT_EQ(model_text(c), "gin (eps 0)");
  c.gin_eps = 0.1f;
  c.gin_train_eps = true;
  EXPECT_EQ(model_text(c), "gin (eps 0.1, trained)");
  EXPECT_EQ(model_json(c).dump(), R"({"model":"gin","gin_eps":0.1,"train_eps":true})");
  c.model = GnnKind::Gat;
  EXPECT_EQ(model_text(c), "gat (8 heads, 1 output head, attention dropout 0, slope 0.2)");
  EXPECT_EQ(model_json(c).dump(),
            R"({"model":"gat","heads":8,"out_heads":1,"attn_dropout":0.0,"negative_slope":0.2})");
  c.gat_heads = 1;
  c.gat_out_heads = 6;
  c.attn_dropout = 0.6f;
  c.negative_slope = 0.01f;
  EXPECT_EQ(model_text(c), "gat (1 head, 6 output heads, attention dropout 0.6, slope 0.01)");
  EXPECT_EQ(model_json(c).dump(),
            R"({"model":"gat","heads":1,"out_heads":6,"attn_dropout":0.6,"negative_slope":0.01})");
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

TEST(ModelOptions, AGatModelFileRecordsItsOptions) {
  plexus::testing::ScratchDir dir;
  TrainConfig options;
  options.model = GnnKind::Gat;
  options.layers = 1;
  options.gat_heads = 4;
  options.gat_out_heads = 3;
  options.attn_dropout = 0.6f;
  options.negative_slope = 0.1f;
  const std::string path = dir.file("gat.h5");
  write_gnn_model_h5(one_layer_state(), {2, 3}, options, path);
  const TrainConfig read = read_gnn_model_info_h5(path).config;
  EXPECT_EQ(read.model, GnnKind::Gat);
  EXPECT_EQ(read.gat_heads, 4);
  EXPECT_EQ(read.gat_out_heads, 3);
  EXPECT_EQ(read.attn_dropout, 0.6f);
  EXPECT_EQ(read.negative_slope, 0.1f);
  EXPECT_EQ(model_text(read), "gat (4 heads, 3 output heads, attention dropout 0.6, slope 0.1)");
  // Options a run would refuse are refused in the file too, naming the attribute: a model built
  // from them would not be the one the parameters belong to.
  const auto refusal_of = [&](const TrainConfig& bad) {
    write_gnn_model_h5(one_layer_state(), {2, 3}, bad, path);
    try {
      read_gnn_model_info_h5(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  TrainConfig bad = options;
  bad.gat_out_heads = 0;
  EXPECT_NE(refusal_of(bad).find("/options: attribute out_heads: 0 is out of range [1, 1024]"), std::string::npos)
      << refusal_of(bad);
  bad = options;
  bad.layers = 2;  // the file's layers come from its widths: hidden 16 with 3 heads
  bad.hidden = 16;
  bad.gat_heads = 3;
  write_gnn_model_h5(one_layer_state(), {2, 16, 3}, bad, path);
  try {
    read_gnn_model_info_h5(path);
    ADD_FAILURE() << "3 heads of hidden 16 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/options: attribute heads: 3 heads do not divide hidden 16"),
              std::string::npos)
        << e.what();
  }
  bad = options;
  bad.attn_dropout = 1.0f;
  EXPECT_NE(refusal_of(bad).find("/options: attribute attn_dropout"), std::string::npos) << refusal_of(bad);
}

TEST(ModelOptions, AModelFileOfTheOtherFamilyIsNamedAsSuch) {
  plexus::testing::ScratchDir dir;
  // A one-layer GNN model file of a sage run.
  const ModelState state = one_layer_state();
  TrainConfig options;
  options.layers = 1;
  options.model = GnnKind::Sage;
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
  EXPECT_EQ(read_gnn_model_info_h5(gnn).config.model, GnnKind::Sage);
  // Files of no Plexus kind are left to their reader, which says what is wrong with them.
  EXPECT_NO_THROW(require_model_file(dir.file("missing.h5"), ModelFamily::Gnn));
  EXPECT_NO_THROW(require_model_file(dir.write("text.h5", "not HDF5"), ModelFamily::Gpt));
  EXPECT_NO_THROW(require_model_file(dir.path().string(), ModelFamily::Gnn));
}

}  // namespace
}  // namespace plexus::cli
