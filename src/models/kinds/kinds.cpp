// The table of GNN kinds: a new kind is its layer (src/pmm/), its file here and one line below
// (docs/architecture.md, "How to add a layer").
#include <stdexcept>

#include "models/kinds/kinds.hpp"

namespace plexus {

const std::vector<const KindSpec*>& kind_specs() {
  static const std::vector<const KindSpec*> table = {
      &gcn_kind(),  // the default
      &sage_kind(),
      &gin_kind(),
      &gat_kind(),
      &appnp_kind(),
      &gine_kind(),
  };
  return table;
}

const KindSpec& kind_spec(const std::string& name) {
  for (const KindSpec* k : kind_specs())
    if (k->info.name == name) return *k;
  throw std::invalid_argument("kind_spec: no GNN kind '" + name + "'");
}

GnnOptionInfo flag_option(std::string name, std::string help) {
  GnnOptionInfo o;
  o.name = std::move(name);
  o.type = GnnOptionType::Flag;
  o.help = std::move(help);
  o.default_value = false;
  return o;
}

GnnOptionInfo integer_option(std::string name, std::string help, std::int64_t default_value, std::int64_t min,
                             std::int64_t max) {
  GnnOptionInfo o;
  o.name = std::move(name);
  o.type = GnnOptionType::Integer;
  o.help = std::move(help);
  o.default_value = default_value;
  o.min = static_cast<double>(min);
  o.max = static_cast<double>(max);
  return o;
}

GnnOptionInfo real_option(std::string name, std::string help, double default_value, double min, double max,
                          bool max_excluded) {
  GnnOptionInfo o;
  o.name = std::move(name);
  o.type = GnnOptionType::Real;
  o.help = std::move(help);
  o.default_value = static_cast<double>(static_cast<float>(default_value));  // a float option
  o.min = min;
  o.max = max;
  o.max_excluded = max_excluded;
  return o;
}

GnnOptionInfo choice_option(std::string name, std::string help, std::vector<std::string> choices) {
  GnnOptionInfo o;
  o.name = std::move(name);
  o.type = GnnOptionType::Choice;
  o.help = std::move(help);
  o.default_value = choices.front();
  o.choices = std::move(choices);
  return o;
}

}  // namespace plexus
