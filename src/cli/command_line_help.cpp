#include "src/cli/command_line_help.hpp"

#include <algorithm>
#include <numeric>

namespace plexus::cli {

namespace {

// Edits between two words, a swap of neighbours counting as one (optimal string alignment):
// "trian" is one edit from "train".
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// Options renamed so that one idea has one name in every subcommand (issue 15): the old
// spelling is pointed at the new one.
struct Renamed {
  const char* path;
  const char* old_name;
  const char* new_name;
};
constexpr Renamed kRenamed[] = {
    {"plexus prepare", "--seed", "--balance-seed"},
    {"plexus prepare", "--no-symmetrize", "--directed"},
    {"plexus inspect", "--seed", "--balance-seed"},
    {"plexus generate rmat", "--features", "--feature-width"},
    {"plexus generate sbm", "--features", "--feature-width"},
    {"plexus convert planetoid", "--dir", "--data"},
    {"plexus convert edgelist", "--seed", "--feature-seed"},
    {"plexus convert mtx", "--seed", "--feature-seed"},
};

std::vector<CLI::App*> subcommands_of(CLI::App* app) {
  return app->get_subcommands([](CLI::App*) { return true; });
}

// Where the words of the command line lead: the deepest subcommand they name, its path
// ("plexus gpt train") and the first word that is neither an option nor a subcommand of it.
struct Walk {
  CLI::App* app;
  std::string path = "plexus";
  std::string stray;  // empty when none
};
Walk walk(CLI::App& root, int argc, char** argv) {
  Walk w{&root, "plexus", ""};
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const auto subs = w.app->get_subcommands([&](CLI::App* s) { return s->check_name(word); });
    if (!subs.empty()) {
      w.app = subs.front();
      w.path += " " + word;
    } else if (w.stray.empty() && !word.starts_with("-") && !subcommands_of(w.app).empty() &&
               w.app->get_require_subcommand_min() > 0) {
      w.stray = word;
    }
  }
  return w;
}

// The long names of the options `app` takes (with its parents', which fall through to it).
std::vector<std::string> long_options(CLI::App* app) {
  std::vector<std::string> names;
  for (CLI::App* a = app; a; a = a->get_parent())
    for (const CLI::Option* opt : a->get_options())
      for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
  return names;
}

bool takes_option(CLI::App* app, const std::string& name) {
  for (CLI::App* a = app; a; a = a->get_parent())
    if (a->get_option_no_throw(name)) return true;
  return false;
}

std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string best = closest_spelling(word, candidates);
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

std::string renamed_to(const std::string& path, const std::string& word) {
  for (const Renamed& r : kRenamed)
    if (path == r.path && word == r.old_name) return std::string(" (now ") + r.new_name + ")";
  return "";
}

}  // namespace

std::string closest_spelling(const std::string& word, const std::vector<std::string>& candidates) {
  const std::size_t most = std::clamp<std::size_t>(word.size() / 3, 1, 2);
  std::string best;
  std::size_t best_distance = most + 1;
  for (const std::string& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (word.size() >= 5 && c.starts_with(word)) d = std::min<std::size_t>(d, 1);  // --hid for --hidden
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string explain_parse_error(CLI::App& app, int argc, char** argv, const CLI::ParseError& error) {
  const Walk w = walk(app, argc, argv);
  const std::string help = "; see " + w.path + " --help";
  if (!w.stray.empty()) {
    std::vector<std::string> names;
    for (CLI::App* s : subcommands_of(w.app)) names.push_back(s->get_name());
    return "unknown subcommand '" + w.stray + "' of " + w.path + suggestion(w.stray, names) + help;
  }
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--") break;
    if (!word.starts_with("--")) continue;
    word = word.substr(0, word.find('='));
    if (!takes_option(w.app, word)) {
      const std::string renamed = renamed_to(w.path, word);
      return "unknown option '" + word + "' of " + w.path +
             (renamed.empty() ? suggestion(word, long_options(w.app)) : renamed) + help;
    }
  }
  if (!subcommands_of(w.app).empty() && w.app->get_require_subcommand_min() > 0 && w.app->get_subcommands().empty())
    return w.path + " needs a subcommand" + help;
  return std::string(error.what()) + help;
}

}  // namespace plexus::cli
