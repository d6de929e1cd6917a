#pragma once
// The engine names an in-memory graph "graph" in its errors (InputError("graph", "/graph/values:
// ...")); a command knows which file the graph came from and names that instead.
#include <string>
#include <utility>

#include "plexus/error.hpp"

namespace plexus::cli {

// Runs f(); an InputError about "graph" is raised again about `path`.
template <class F>
decltype(auto) about_file(const std::string& path, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const InputError& e) {
    if (e.where() != "graph") throw;
    throw InputError(path, e.what());
  }
}

}  // namespace plexus::cli
