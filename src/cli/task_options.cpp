// --task and the link task's options (task_options.hpp).
#include "src/cli/task_options.hpp"

#include <charconv>

#include "plexus/error.hpp"
#include "src/cli/named_choices.hpp"

namespace plexus::cli {

namespace {
// --link-split VAL,TEST: the held-out shares of the links (LinkConfig::val, test).
void parse_link_split(const std::string& text, LinkConfig& l) {
  const auto comma = text.find(',');
  const auto number = [&](const std::string& s) {
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
      throw InputError("--link-split", "'" + text + "' is not VAL,TEST (two shares of the links, e.g. 0.05,0.1)");
    return v;
  };
  if (comma == std::string::npos) number("");
  l.val = number(text.substr(0, comma));
  l.test = number(text.substr(comma + 1));
}
}  // namespace

void add_task_options(CLI::App* cmd, TaskOptions& o, TrainConfig& c) {
  cmd->add_option("--task", o.task, "What the GNN learns: " + choices_text(gnn_tasks()))
      ->check(CLI::IsMember(choice_names(gnn_tasks())))
      ->capture_default_str();
  cmd->add_option("--embedding-width", c.link.embedding_width,
                  "--task link: the width of the last layer, the embeddings scored (0 = --hidden)")
      ->capture_default_str();
  cmd->add_option("--decoder", o.decoder,
                  "--task link: how a pair is scored from its two embeddings: " + choices_text(link_decoders()))
      ->check(CLI::IsMember(choice_names(link_decoders())))
      ->capture_default_str();
  for (const LinkCountOption& l : link_count_options())
    cmd->add_option(std::string("--") + l.name, c.link.*l.field,
                    std::string("--task link: ") + l.help + "; 0 = " + l.off)
        ->capture_default_str();
  cmd->add_option("--link-split", o.link_split,
                  "--task link: the shares of the links held out for validation and test, VAL,TEST (default "
                  "0.05,0.1; PyG's RandomLinkSplit); message passing sees the rest only");
}

void apply_task_options(const TaskOptions& o, TrainConfig& cfg) {
  cfg.task = parse_gnn_task(o.task);
  cfg.link.decoder = parse_link_decoder(o.decoder);
  if (!o.link_split.empty()) parse_link_split(o.link_split, cfg.link);
}

}  // namespace plexus::cli
