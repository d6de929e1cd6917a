#pragma once
// The X×Y×Z grid of ranks and the communicators of its axes (AxoNN style: this one object
// builds and owns every process group; the rest of the engine asks it for an axis).
//
// rank = z·(X·Y) + x·Y + y, so the Y axis is contiguous (intra-node when ranks are placed by
// node). Layer l of a GCN gives the axes roles (o, i, d) that rotate with period 3:
//   l % 3 == 0 → (X, Y, Z);   1 → (Z, X, Y);   2 → (Y, Z, X)
// so that layer l's output layout is exactly layer l+1's input layout.
#include <array>
#include <memory>
#include <string>

#include "plexus/comm.hpp"

namespace plexus {

enum class Axis { X = 0, Y = 1, Z = 2 };
const char* axis_name(Axis a);

struct GridShape {
  int x = 1, y = 1, z = 1;
  int size() const { return x * y * z; }
  int dim(Axis a) const { return a == Axis::X ? x : a == Axis::Y ? y : z; }
  std::string str() const;  // "XxYxZ"
};
// Parses "XxYxZ" (e.g. "2x2x2"); throws InputError("--grid", ...) when malformed.
GridShape parse_grid(const std::string& text);

struct LayerRoles {
  Axis o, i, d;  // rows of H / cols of Â (o), cols of H (i), rows of Â (d)
};
LayerRoles roles_for_layer(int layer);

class ProcessGrid {
 public:
  // A 1×1×1 grid on this process alone.
  static std::unique_ptr<ProcessGrid> single();
  // The grid over MPI_COMM_WORLD (MPI must be initialised; its size must equal shape.size()).
  static std::unique_ptr<ProcessGrid> from_mpi(GridShape shape);
  // Ranks of this job on this node (1 without MPI): the default thread count divides the
  // node's cores among them.
  static int ranks_on_this_node();
  // from_mpi when MPI is initialised, else single() (which then requires a 1x1x1 shape).
  static std::unique_ptr<ProcessGrid> create(GridShape shape);
  // Builds the grid over an existing set of per-axis communicators (used by the MPI factory).
  ProcessGrid(GridShape shape, int rank, std::array<std::unique_ptr<Communicator>, 3> axes,
              std::unique_ptr<Communicator> world);

  const GridShape& shape() const { return shape_; }
  int rank() const { return rank_; }
  int size() const { return shape_.size(); }
  int coord(Axis a) const { return coords_[static_cast<int>(a)]; }
  int dim(Axis a) const { return shape_.dim(a); }
  Communicator& comm(Axis a) { return *axes_[static_cast<int>(a)]; }
  Communicator& world() { return *world_; }
  void reset_stats();

 private:
  GridShape shape_;
  int rank_ = 0;
  std::array<int, 3> coords_{};
  std::array<std::unique_ptr<Communicator>, 3> axes_;
  std::unique_ptr<Communicator> world_;
};

}  // namespace plexus
