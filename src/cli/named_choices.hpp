#pragma once
// A table of named choices (NamedChoice, plexus/train.hpp: gnn_tasks(), link_decoders()) as a CLI
// option takes it: its accepted names and its help, "a (what a does) or b (...)".
#include <cstddef>
#include <string>
#include <vector>

#include "plexus/train.hpp"

namespace plexus::cli {

template <class Kind>
std::vector<std::string> choice_names(const std::vector<NamedChoice<Kind>>& all) {
  std::vector<std::string> names;
  for (const auto& c : all) names.emplace_back(c.name);
  return names;
}

template <class Kind>
std::string choices_text(const std::vector<NamedChoice<Kind>>& all) {
  std::string text;
  for (std::size_t k = 0; k < all.size(); ++k)
    text += std::string(k == 0 ? "" : k + 1 == all.size() ? " or " : ", ") + all[k].name + " (" + all[k].help + ")";
  return text;
}

}  // namespace plexus::cli
