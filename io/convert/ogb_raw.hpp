#pragma once
// The parts of OGB's dataset layout that its node- and link-property readers share
// (io/convert/ogb.cpp, io/convert/ogb_links.cpp).
#include <filesystem>
#include <string>

#include "plexus/convert.hpp"

namespace plexus::ogb {

// The graph of an OGB dataset directory (DIR/raw/): nodes, features, labels, edges, checked;
// `n_source` says where the node count came from, for the split readers' messages.
GraphData read_ogb_graph(const std::string& dir, const OgbOptions& opt, std::string& n_source);

// DIR/split/<name>: the one OgbOptions::split names, else the only one there; empty when DIR has
// no split. InputError for a named split that is missing or several to choose from.
std::filesystem::path ogb_split_dir(const std::filesystem::path& dir, const OgbOptions& opt);

}  // namespace plexus::ogb
