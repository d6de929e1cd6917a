#include "plexus/process_grid.hpp"

#include <charconv>

#include "plexus/error.hpp"

namespace plexus {

const char* axis_name(Axis a) { return a == Axis::X ? "x" : a == Axis::Y ? "y" : "z"; }

std::string GridShape::str() const {
  return std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
}

GridShape parse_grid(const std::string& text) {
  GridShape g;
  int* dims[3] = {&g.x, &g.y, &g.z};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int k = 0; k < 3; ++k) {
    auto [next, ec] = std::from_chars(p, end, *dims[k]);
    if (ec != std::errc() || *dims[k] < 1 || (k < 2 && (next == end || *next != 'x')) || (k == 2 && next != end))
      throw InputError("--grid", "expected XxYxZ with positive integers (e.g. 2x2x2), got '" + text + "'");
    p = next + 1;
  }
  return g;
}

LayerRoles roles_for_layer(int layer) {
  switch (layer % 3) {
    case 0: return {Axis::X, Axis::Y, Axis::Z};
    case 1: return {Axis::Z, Axis::X, Axis::Y};
    default: return {Axis::Y, Axis::Z, Axis::X};
  }
}

ProcessGrid::ProcessGrid(GridShape shape, int rank, std::array<std::unique_ptr<Communicator>, 3> axes,
                         std::unique_ptr<Communicator> world)
    : shape_(shape), rank_(rank), axes_(std::move(axes)), world_(std::move(world)) {
  // rank = z·(X·Y) + x·Y + y
  coords_[static_cast<int>(Axis::Z)] = rank / (shape.x * shape.y);
  coords_[static_cast<int>(Axis::X)] = (rank / shape.y) % shape.x;
  coords_[static_cast<int>(Axis::Y)] = rank % shape.y;
}

std::unique_ptr<ProcessGrid> ProcessGrid::single() {
  return std::make_unique<ProcessGrid>(
      GridShape{}, 0,
      std::array<std::unique_ptr<Communicator>, 3>{make_self_communicator(), make_self_communicator(),
                                                   make_self_communicator()},
      make_self_communicator());
}

void ProcessGrid::reset_stats() {
  for (auto& c : axes_) c->reset_stats();
  world_->reset_stats();
}

}  // namespace plexus
