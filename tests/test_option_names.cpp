// The library's errors name what its user set (TrainConfig.class_weights, GridShape,
// SbmOptions.nodes, ...), not the CLI's options; the CLI prints each name as the option that sets
// it (src/cli/option_names.cpp), so that its messages stay "--class-weights: ...". And the table
// the CLI translates with covers every name the library's sources use, so the two cannot drift.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_spec.hpp"
#include "plexus/gpt.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "src/cli/option_names.hpp"

namespace plexus::cli {
namespace {

namespace fs = std::filesystem;

InputError refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return InputError("", "");
}

// The library names the field (in `where` and in the text), never an option; the CLI prints the
// option, exactly as before the library named fields.
void expect_names(const std::function<void()>& misuse, const std::string& library, const std::string& cli) {
  const InputError e = refusal(misuse);
  EXPECT_EQ(e.message(), library);
  EXPECT_EQ(e.message().find("--"), std::string::npos) << e.message();
  EXPECT_EQ(cli_message(e), cli);
}

TEST(OptionNames, TrainConfigsFieldsNamed) {
  TrainConfig bad;
  bad.class_weights = {1.0f, -1.0f};
  expect_names([&] { validate(bad); }, "TrainConfig.class_weights: weight -1.000000 of class 1 is not a finite number >= 0",
               "--class-weights: weight -1.000000 of class 1 is not a finite number >= 0");
  expect_names([] { parse_class_weights("1,x"); },
               "TrainConfig.class_weights: expected auto or numbers separated by commas (one per class), got '1,x'",
               "--class-weights: expected auto or numbers separated by commas (one per class), got '1,x'");
  TrainConfig gat;
  gat.model = GnnSpec("gat").set("heads", 8);
  gat.hidden = 12;
  expect_names([&] { validate(gat); }, "TrainConfig.hidden: must be a multiple of GnnSpec.heads (8) for TrainConfig.model gat",
               "--hidden: must be a multiple of --heads (8) for --model gat");
  expect_names([] { GnnSpec("gcn").set("heads", 8); }, "GnnSpec.heads: only with GnnSpec.kind gat",
               "--heads: only with --model gat");
  expect_names([] { GnnSpec("gat").set("attn-dropout", 1.0); }, "GnnSpec.attn-dropout: must be a number in [0, 1)",
               "--attn-dropout: must be a number in [0, 1)");
  expect_names([] { parse_selection("recall:x"); }, "TrainConfig.select_by: 'recall:x': recall:K needs a class number K >= 0",
               "--select-by: 'recall:x': recall:K needs a class number K >= 0");
}

TEST(OptionNames, GridNamed) {
  expect_names([] { parse_grid("2x2"); }, "GridShape: expected XxYxZ with positive integers (e.g. 2x2x2), got '2x2'",
               "--grid: expected XxYxZ with positive integers (e.g. 2x2x2), got '2x2'");
  expect_names([] { grid_ranks(GridShape{}, 0); }, "grid_ranks(dp): must be at least 1", "--dp: must be at least 1");
}

TEST(OptionNames, GptTrainConfigsFieldsNamed) {
  GptTrainConfig c;
  c.lr = 0;
  expect_names([&] { validate(c); }, "GptTrainConfig.lr: must be a positive number", "--lr: must be a positive number");
  c = GptTrainConfig{};
  c.min_lr = 2 * c.lr;
  expect_names([&] { validate(c); }, "GptTrainConfig.min_lr: must be in [0, GptTrainConfig.lr]", "--min-lr: must be in [0, --lr]");
  c = GptTrainConfig{};
  c.zero_stage = 4;
  expect_names([&] { validate(c); }, "GptTrainConfig.zero_stage: must be 0, 1, 2 or 3", "--zero: must be 0, 1, 2 or 3");
  c = GptTrainConfig{};
  c.model.embed = 10;
  c.model.heads = 3;
  expect_names([&] { validate(c); }, "GptConfig.embed: 10 is not divisible by GptConfig.heads 3",
               "--embed: 10 is not divisible by --heads 3");
}

TEST(OptionNames, GeneratorsAndConvertersOptionsNamed) {
  SbmOptions sbm;
  sbm.nodes = 0;
  expect_names([&] { generate_sbm(sbm); }, "SbmOptions.nodes: must be in 1..2^36, got 0", "--nodes: must be in 1..2^36, got 0");
  sbm = SbmOptions{};
  sbm.avg_degree = -1;
  expect_names([&] { generate_sbm(sbm); }, "SbmOptions.avg_degree: must be in [0, 100000]", "--avg-degree: must be in [0, 100000]");
  RmatOptions rmat;
  rmat.features = 0;
  expect_names([&] { generate_rmat(rmat); }, "RmatOptions.features: must be at least 1, got 0",
               "--feature-width: must be at least 1, got 0");
  expect_names([] { parse_split_fractions("0.6,0.2"); },
               "SplitFractions: expected three fractions TRAIN,VAL,TEST, got 2 in '0.6,0.2'",
               "--split: expected three fractions TRAIN,VAL,TEST, got 2 in '0.6,0.2'");
}

TEST(OptionNames, WholeNamesOnly) {
  // A name inside a longer one is not that name: GptTrainConfig.lr holds TrainConfig.lr.
  EXPECT_EQ(with_option_names("GptTrainConfig.lr and TrainConfig.lr"), "--lr and --lr");
  EXPECT_EQ(with_option_names("TrainConfig.layer_order, TrainConfig.layers."), "--layer-order, --layers.");
  EXPECT_EQ(with_option_names("TrainConfig.lrx TrainConfig.lr_ x.TrainConfig.lr"), "TrainConfig.lrx TrainConfig.lr_ x.TrainConfig.lr");
  EXPECT_EQ(with_option_names("MyTrainConfig.lr my_GridShape 2GridShape"), "MyTrainConfig.lr my_GridShape 2GridShape");
  // Paths and file names keep their text.
  EXPECT_EQ(with_option_names("/data/GridShape.h5: GridShape"), "/data/GridShape.h5: --grid");
  EXPECT_EQ(with_option_names("GridShape/x GridShape-1"), "GridShape/x GridShape-1");
  // Phrases: an option that is the field's negation.
  EXPECT_EQ(with_option_names("was trained with GptConfig.tied true, this run has GptConfig.tied false"),
            "was trained with --untie off, this run has --untie on");
  // Names no option sets are printed as they are.
  EXPECT_EQ(with_option_names("PassOptions.passes: must be at least 1"), "PassOptions.passes: must be at least 1");
  EXPECT_EQ(with_option_names("no name here: --lr 0.1"), "no name here: --lr 0.1");
}

// ---- the table against the sources --------------------------------------------------------

const fs::path kRoot = fs::path(PLEXUS_TEST_DIR).parent_path();

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The string literals of C++ source `text` (comments and character literals skipped; raw
// strings are not used where errors are thrown), each with what precedes it on its line.
struct Literal {
  std::string text, before;
  std::string file;
};
void literals(const std::string& text, const std::string& file, std::vector<Literal>& out) {
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') line_start = i + 1;
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      line_start = i + 1;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      i = end == std::string::npos ? text.size() : end + 1;
    } else if (c == '\'') {
      for (++i; i < text.size() && text[i] != '\''; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '"') {
      Literal l{{}, text.substr(line_start, i - line_start), file};
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i) {
        if (text[i] == '\\') ++i;
        if (i < text.size()) l.text += text[i];
      }
      out.push_back(std::move(l));
    }
  }
}

// Every name the library's sources put in a string (a field "Struct.field", a function's argument
// "f(arg)", or a bare type named where an InputError is thrown, "GridShape"), with a file it is in.
std::map<std::string, std::string> library_names() {
  std::vector<Literal> all;
  for (const char* dir : {"src", "io", "partition", "kernels"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / dir)) {
      const fs::path& p = entry.path();
      const std::string ext = p.extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
      const std::string rel = fs::relative(p, kRoot).string();
      if (rel.rfind("src/cli/", 0) == 0) continue;  // the CLI names its own options
      literals(read_file(p), rel, all);
    }
  }
  static const std::regex field(R"((^|[^A-Za-z0-9_./:-])([A-Z][A-Za-z0-9]*(::[a-z_]+)?(\.[a-z][a-z0-9_]*)+))");
  static const std::regex argument(R"((^|[^A-Za-z0-9_./:-])([A-Za-z_][A-Za-z0-9_:]*\([a-z_][a-z0-9_]*\)))");
  static const std::regex bare(R"(^[A-Z][A-Za-z0-9]*$)");
  std::map<std::string, std::string> names;
  for (const Literal& l : all) {
    for (const std::regex* r : {&field, &argument})
      for (auto it = std::sregex_iterator(l.text.begin(), l.text.end(), *r); it != std::sregex_iterator(); ++it)
        names.emplace((*it)[2].str(), l.file);
    if (std::regex_match(l.text, bare) && l.before.size() >= 11 &&
        l.before.compare(l.before.size() - 11, 11, "InputError(") == 0)
      names.emplace(l.text, l.file);
  }
  return names;
}

// Names of the user's data rather than of a setting (GraphData.labels: the graph given), and
// text of kernels that only looks like a name ("A.rows"): no option sets them.
bool data_name(const std::string& name) {
  for (const char* prefix : {"GraphData.", "GraphSlice.", "GraphRowSource.", "EdgeArrays.", "NodeArrays.", "Predictions.",
                             "PredictionsFileOptions.", "A.", "B.", "enum("})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(OptionNames, EveryLibraryNameHasAnEntry) {
  const std::map<std::string, std::string> names = library_names();
  ASSERT_GT(names.size(), 50u) << "the scan found too little: is " << kRoot << " the source tree?";
  std::set<std::string> table;
  for (const OptionName& n : option_names()) table.insert(n.library.substr(0, n.library.find(' ')));
  for (const auto& [name, file] : names) {
    if (data_name(name)) continue;
    // The stem the link task's count options are named from ("TrainConfig.link." + key).
    if (name + "." + link_count_options().front().key() == link_count_options().front().field_name()) continue;
    EXPECT_TRUE(table.count(name)) << name << " (" << file << ") has no entry in src/cli/option_names.cpp";
  }
}

TEST(OptionNames, EveryEntryIsUsedAndEveryOptionDeclared) {
  const std::map<std::string, std::string> names = library_names();
  // The options the CLI declares (a name given to add_option or add_flag, as a string).
  std::string cli;
  for (const auto& entry : fs::directory_iterator(kRoot / "src/cli"))
    if (entry.path().extension() == ".cpp" && entry.path().filename() != "option_names.cpp") cli += read_file(entry.path());
  for (const GnnKindInfo& k : gnn_kinds())
    for (const GnnOptionInfo& o : k.options) cli += "\"--" + o.name + "\"";  // (declared by model_options.cpp)
  for (const LinkCountOption& o : link_count_options()) cli += std::string("\"--") + o.name + "\"";  // (by cmd_train.cpp)
  // Names the library makes from a table rather than writes (the kinds' options, the link task's counts).
  const auto tabled = [](const std::string& name) {
    if (name.rfind("GnnSpec.", 0) == 0 && name != "GnnSpec.kind") return true;
    for (const LinkCountOption& o : link_count_options())
      if (name == o.field_name()) return true;
    return false;
  };
  for (const OptionName& n : option_names()) {
    const std::string name = n.library.substr(0, n.library.find(' '));
    if (!tabled(name)) {
      EXPECT_TRUE(names.count(name)) << name << ": an entry of src/cli/option_names.cpp no library error uses";
    }
    if (n.option.empty()) continue;
    const std::string flag = n.option.substr(0, n.option.find(' '));
    EXPECT_TRUE(cli.find("\"" + flag + "\"") != std::string::npos || cli.find("\"" + flag + ",") != std::string::npos)
        << n.library << ": " << flag << " is no option of the CLI";
  }
}

// The library's own errors name no option: no InputError of the library's sources is thrown
// with a `where` of "--...".
TEST(OptionNames, NoLibraryErrorWhereIsAnOption) {
  for (const char* dir : {"src", "io", "partition", "kernels"})
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / dir)) {
      const std::string rel = fs::relative(entry.path(), kRoot).string();
      if (!entry.is_regular_file() || rel.rfind("src/cli/", 0) == 0) continue;
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp" && ext != ".cu") continue;
      std::vector<Literal> lits;
      literals(read_file(entry.path()), rel, lits);
      for (const Literal& l : lits)
        if (l.text.rfind("--", 0) == 0 && l.before.size() >= 11 && l.before.compare(l.before.size() - 11, 11, "InputError(") == 0)
          ADD_FAILURE() << rel << ": InputError(\"" << l.text << "\", ...)";
    }
}

}  // namespace
}  // namespace plexus::cli
