// GnnSpec (include/plexus/gnn_spec.hpp): a kind and its options, every value checked against
// the kind's declaration (src/models/kinds/): types, ranges, options of other kinds, text.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "plexus/error.hpp"
#include "plexus/gnn_spec.hpp"

namespace plexus {
namespace {

// The option and message of the InputError `f` throws ("" when none).
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.message();
  }
  return "";
}

TEST(GnnSpec, EveryKindStartsAtItsDeclaredDefaults) {
  EXPECT_EQ(GnnSpec().kind(), gnn_kinds().front().name);
  EXPECT_EQ(GnnSpec().kind(), "gcn");
  for (const GnnKindInfo& k : gnn_kinds()) {
    const GnnSpec s(k.name);
    EXPECT_EQ(s.kind(), k.name);
    EXPECT_EQ(s.info().options.size(), k.options.size());
    for (const GnnOptionInfo& o : k.options) EXPECT_EQ(s.value(o.name), o.default_value) << k.name << " " << o.name;
  }
  EXPECT_EQ(gnn_kind_names().rfind("gcn, sage, gin, gat", 0), 0u);  // the table's order, gcn first
  EXPECT_EQ(refusal([] { GnnSpec("GAT"); }), "GnnSpec.kind: 'GAT' is not one of " + gnn_kind_names());
}

TEST(GnnSpec, ValuesAreTypedAsDeclared) {
  GnnSpec gat("gat");
  gat.set("heads", 4).set("attn-dropout", 0.5).set("negative-slope", 1);  // an integer is a number too
  EXPECT_EQ(gat.integer("heads"), 4);
  EXPECT_EQ(gat.real("attn-dropout"), 0.5f);
  EXPECT_EQ(gat.real("negative-slope"), 1.0f);
  EXPECT_EQ(refusal([&] { gat.set("heads", 2.5); }), "GnnSpec.heads: must be an integer");
  EXPECT_EQ(refusal([&] { gat.set("heads", "4"); }), "GnnSpec.heads: must be an integer");
  EXPECT_EQ(refusal([&] { gat.set("negative-slope", true); }), "GnnSpec.negative-slope: must be a number");
  GnnSpec sage("sage");
  EXPECT_EQ(refusal([&] { sage.set("normalize", 1); }), "GnnSpec.normalize: is a flag: on or off");
  EXPECT_EQ(refusal([&] { sage.set("aggregator", 1); }), "GnnSpec.aggregator: must be one of mean, sum");
  // A refused value leaves the one before.
  EXPECT_EQ(gat.integer("heads"), 4);
  // A Real option is a float: the double it reads as is the float it rounds to.
  GnnSpec gin("gin");
  gin.set("gin-eps", 0.1);
  EXPECT_EQ(std::get<double>(gin.value("gin-eps")), static_cast<double>(0.1f));
  EXPECT_EQ(gin.real("gin-eps"), 0.1f);
}

TEST(GnnSpec, RangesAreTheDeclaredOnes) {
  GnnSpec gat("gat");
  EXPECT_EQ(refusal([&] { gat.set("heads", 0); }), "GnnSpec.heads: must be between 1 and 1024");
  EXPECT_EQ(refusal([&] { gat.set("heads", 1025); }), "GnnSpec.heads: must be between 1 and 1024");
  EXPECT_NO_THROW(gat.set("heads", 1024).set("heads", 1));
  EXPECT_EQ(refusal([&] { gat.set("attn-dropout", 1.0); }), "GnnSpec.attn-dropout: must be a number in [0, 1)");
  EXPECT_NO_THROW(gat.set("attn-dropout", 0.0).set("attn-dropout", 0.999));
  EXPECT_EQ(refusal([&] { gat.set("negative-slope", -1e-9); }), "GnnSpec.negative-slope: must be a number in [0, 1000]");
  EXPECT_NO_THROW(gat.set("negative-slope", 1000.0));
  EXPECT_EQ(refusal([&] { gat.set("negative-slope", 1e300); }), "GnnSpec.negative-slope: must be a number in [0, 1000]");
  EXPECT_EQ(refusal([&] { gat.set("negative-slope", std::nan("")); }), "GnnSpec.negative-slope: must be a number in [0, 1000]");
  GnnSpec sage("sage");
  EXPECT_EQ(refusal([&] { sage.set("aggregator", "max"); }), "GnnSpec.aggregator: 'max' is not one of mean, sum");
}

TEST(GnnSpec, AnOptionOfAnotherKindIsRefusedNamingItsKind) {
  EXPECT_EQ(refusal([] { GnnSpec("gcn").set("heads", 8); }), "GnnSpec.heads: only with GnnSpec.kind gat");
  EXPECT_EQ(refusal([] { GnnSpec("gat").set_text("aggregator", "sum"); }), "GnnSpec.aggregator: only with GnnSpec.kind sage");
  EXPECT_EQ(kinds_with_option("gin-eps"), (std::vector<std::string>{"gin", "gine"}));
  EXPECT_EQ(refusal([] { GnnSpec("sage").set("train-eps", true); }), "GnnSpec.train-eps: only with GnnSpec.kind gin or gine");
  EXPECT_TRUE(kinds_with_option("epochs").empty());
  // Asking a value a kind does not have is a programming error, not an input one.
  EXPECT_THROW((void)GnnSpec("gcn").integer("heads"), std::invalid_argument);
  EXPECT_THROW((void)GnnSpec("gat").real("heads"), std::bad_variant_access);
}

TEST(GnnSpec, TextReadsAsTheCommandLineWritesIt) {
  GnnSpec s("sage");
  s.set_text("normalize", "on");
  EXPECT_TRUE(s.flag("normalize"));
  EXPECT_EQ(s.text("normalize"), "on");
  for (const char* off : {"off", "false", "0"}) EXPECT_FALSE(s.set_text("normalize", off).flag("normalize")) << off;
  for (const char* on : {"on", "true", "1"}) EXPECT_TRUE(s.set_text("normalize", on).flag("normalize")) << on;
  EXPECT_EQ(refusal([&] { s.set_text("normalize", "yes"); }), "GnnSpec.normalize: 'yes' is not on or off");
  GnnSpec gat("gat");
  EXPECT_EQ(gat.set_text("heads", "12").integer("heads"), 12);
  EXPECT_EQ(refusal([&] { gat.set_text("heads", "12x"); }), "GnnSpec.heads: '12x' is not an integer");
  EXPECT_EQ(refusal([&] { gat.set_text("heads", ""); }), "GnnSpec.heads: '' is not an integer");
  EXPECT_EQ(gat.set_text("negative-slope", "0.01").text("negative-slope"), "0.01");
  EXPECT_EQ(refusal([&] { gat.set_text("negative-slope", "0.1.2"); }), "GnnSpec.negative-slope: '0.1.2' is not a number");
  EXPECT_EQ(refusal([&] { gat.set_text("negative-slope", "1e400"); }), "GnnSpec.negative-slope: must be a number in [0, 1000]");
  // Every option's text reads back as the same value.
  for (const GnnKindInfo& k : gnn_kinds()) {
    GnnSpec a(k.name);
    for (const GnnOptionInfo& o : k.options) {
      GnnSpec b(k.name);
      b.set_text(o.name, a.text(o.name));
      EXPECT_EQ(b.value(o.name), a.value(o.name)) << k.name << " " << o.name;
    }
  }
}

TEST(GnnSpec, DescribeAndEquality) {
  EXPECT_EQ(GnnSpec().describe(), "gcn");
  EXPECT_EQ(GnnSpec("gin").set("train-eps", true).describe(), "gin (gin-eps 0, train-eps on)");
  EXPECT_EQ(GnnSpec("gat"), GnnSpec("gat"));
  EXPECT_NE(GnnSpec("gat"), GnnSpec("gat").set("heads", 2));
  EXPECT_NE(GnnSpec("gcn"), GnnSpec("sage"));
  EXPECT_EQ(gnn_option_key("negative-slope"), "negative_slope");
}

}  // namespace
}  // namespace plexus
