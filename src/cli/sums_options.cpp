// --sparse-comm and --wire (src/cli/sums_options.hpp).
#include "src/cli/sums_options.hpp"

#include "src/cli/named_choices.hpp"

namespace plexus::cli {

void add_sums_options(CLI::App* cmd, SumsOptions& o, bool dry_run) {
  cmd->add_option("--sparse-comm", o.sparse_comm,
                  "How the aggregations' all-reduces sum on the CPU backend (docs/communication.md, \"Row-sparse "
                  "sums\"): " + choices_text(sparse_comms()) +
                      (dry_run ? ". Auto's bytes are exact where the graph's table of held rows cuts the grid "
                                 "(docs/dry-run.md), else the dense form's, an upper bound"
                               : ""))
      ->check(CLI::IsMember(choice_names(sparse_comms())))
      ->capture_default_str();
  cmd->add_option("--wire", o.wire,
                  "How the layers' activation-sized sums travel on the CPU backend (docs/communication.md, \"Low-bit "
                  "wire\"): " + choices_text(wires()) +
                      (dry_run ? ". Their bytes are exact: a row's bytes do not depend on its values" : ""))
      ->check(CLI::IsMember(choice_names(wires())))
      ->capture_default_str();
}

void apply_sums_options(const SumsOptions& o, TrainConfig& cfg) {
  cfg.sparse_comm = parse_sparse_comm(o.sparse_comm);
  cfg.wire = parse_wire(o.wire);
}

}  // namespace plexus::cli
