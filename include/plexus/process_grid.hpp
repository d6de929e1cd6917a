#pragma once
// The D×X×Y×Z grid of ranks and the communicators of its axes (AxoNN style: this one object
// builds and owns every process group; the rest of the engine asks it for an axis).
//
// X, Y and Z are the tensor-parallel axes of one model replica; D (data parallelism) joins the
// D replicas' ranks that hold the same shards. rank = d·(X·Y·Z) + z·(X·Y) + x·Y + y, so a
// replica's ranks are contiguous (one node when they fit: tensor parallelism moves the most
// bytes) and within a replica the Y axis is contiguous. Layer l of a GNN gives the axes roles
// (o, i, d) (layer_roles): layer 0 takes (X, Y, Z), and each later layer the roles that make its
// input layout exactly layer l-1's output layout.
#include <mpi.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "plexus/comm.hpp"

namespace plexus {

enum class Axis { X = 0, Y = 1, Z = 2, D = 3 };
const char* axis_name(Axis a);  // "x", "y", "z", "d"
inline constexpr Axis kAllAxes[] = {Axis::X, Axis::Y, Axis::Z, Axis::D};

struct GridShape {
  int x = 1, y = 1, z = 1;
  int size() const { return x * y * z; }
  int dim(Axis a) const { return a == Axis::X ? x : a == Axis::Y ? y : z; }
  std::string str() const;  // "XxYxZ"
};
// The most ranks a grid may have (X·Y·Z, and D·X·Y·Z with data parallelism): 2^24, so that
// rank counts fit an int and per-rank or per-block tables stay small.
inline constexpr int kMaxGridRanks = 1 << 24;
// Parses "XxYxZ" (e.g. "2x2x2"); throws InputError("GridShape", ...) when malformed or when
// X·Y·Z exceeds kMaxGridRanks.
GridShape parse_grid(const std::string& text);
// The ranks of `dp` replicas of `shape`: InputError("grid_ranks(dp)", ...) when dp < 1 or the product
// exceeds kMaxGridRanks.
int grid_ranks(GridShape shape, int dp);

// The place on each axis (x, y, z, d) of `rank` among dp replicas of `shape`:
// rank = d·(X·Y·Z) + z·(X·Y) + x·Y + y.
std::array<int, 4> grid_coords(GridShape shape, int rank);

// The roles of a layer's axes, named after its aggregation: its Â block is [rows of N over d ×
// columns of N over o], replicated over i, and the aggregation's SpMM sums over o. Where the
// layer's dense tensors live depends on its order (docs/gcn-model.md, "Layer order"):
//   aggregate first  input (rows o, features i, replicated over d)
//                    → output (rows d, features o, replicated over i)
//   transform first  input (rows o, features d, replicated over i)
//                    → output (rows d, features i, replicated over o)
struct LayerRoles {
  Axis o, i, d;  // rows of H / cols of Â (o), the third axis (i), rows of Â (d)
  bool operator==(const LayerRoles&) const = default;
};
// The roles of layers 0..layers-1, layer l transforming first where transform_first[l] (entries
// past the end: aggregate first). Layer 0 takes (X, Y, Z); layer l+1 takes the roles whose input
// layout is layer l's output layout (rows, features, replicated): (o, i, d) = (rows, features,
// replicated) if it aggregates first, (o, d, i) = (rows, features, replicated) if it transforms
// first. All aggregating first, the roles rotate with period 3: (X,Y,Z), (Z,X,Y), (Y,Z,X).
std::vector<LayerRoles> layer_roles(int layers, const std::vector<bool>& transform_first = {});
// Layer `layer`'s roles alone: layer_roles(layer + 1, transform_first)[layer], with no list (a
// plan asks for them for every layer of every rank of every grid).
LayerRoles layer_roles_at(int layer, const std::vector<bool>& transform_first = {});

class ProcessGrid {
 public:
  // A 1×1×1 grid on this process alone.
  static std::unique_ptr<ProcessGrid> single();
  // The grid over the ranks of `comm` (the size of `comm` must equal dp·shape.size(), else
  // InputError("GridShape", ...)). MPI must be initialised and not finalised, else
  // InputError("ProcessGrid::from_mpi", ...). The grid works on its own duplicate of `comm`, so
  // its messages never mix with the caller's; collective over `comm`.
  static std::unique_ptr<ProcessGrid> from_mpi(GridShape shape, int dp = 1, MPI_Comm comm = MPI_COMM_WORLD);
  // This rank's place on its node (MPI_Comm_split_type SHARED): its index among the job's
  // ranks there and how many there are (0 and 1 without MPI). The index picks the GPU; the
  // default thread count divides the node's cores among the ranks.
  struct NodePlacement {
    int local_rank = 0, local_ranks = 1;
  };
  static NodePlacement node_placement(MPI_Comm comm = MPI_COMM_WORLD);
  static int ranks_on_this_node() { return node_placement().local_ranks; }
  // from_mpi when MPI is initialised, else single() (which then requires a 1x1x1 shape).
  static std::unique_ptr<ProcessGrid> create(GridShape shape, int dp = 1);
  // Builds the grid over existing communicators (used by the MPI factory): one per axis
  // (X, Y, Z, D), the replica's ranks, all ranks; `mpi_comm`: the MPI communicator of all
  // ranks behind `world` (MPI_COMM_NULL when there is none).
  ProcessGrid(GridShape shape, int dp, int rank, std::array<std::unique_ptr<Communicator>, 4> axes,
              std::unique_ptr<Communicator> replica, std::unique_ptr<Communicator> world,
              MPI_Comm mpi_comm = MPI_COMM_NULL);

  // The tensor-parallel grid of one replica.
  const GridShape& shape() const { return shape_; }
  int rank() const { return rank_; }
  int size() const { return dp_ * shape_.size(); }
  int dp() const { return dp_; }
  int coord(Axis a) const { return coords_[static_cast<int>(a)]; }
  int dim(Axis a) const { return a == Axis::D ? dp_ : shape_.dim(a); }
  // Whether all the grid's ranks share one node (its memory): from_mpi asks MPI
  // (MPI_COMM_TYPE_SHARED), a plan's dry run sets its machine model's (--ranks-per-node), a grid
  // without MPI is one. --sparse-comm auto takes its forms by it (TrainConfig::sparse_comm).
  bool one_node() const { return one_node_; }
  void set_one_node(bool one) { one_node_ = one; }
  // The tensor collectives of axis a. With device communicators (use_device_communicators)
  // they take the backend's device buffers only; host values (scalars, counts, the loss) go
  // through host_comm(a), the axis's MPI communicator. Without them both are the same object.
  Communicator& comm(Axis a) { return *axes_[static_cast<int>(a)]; }
  Communicator& host_comm(Axis a) {
    const auto& h = host_axes_[static_cast<int>(a)];
    return h ? *h : comm(a);
  }
  // What axis a moved: its tensor and host communicators together.
  CommStats axis_stats(Axis a) const;
  // The X·Y·Z ranks of this rank's replica (reductions over the whole model: norms, gathers).
  Communicator& replica() { return *replica_; }
  Communicator& world() { return *world_; }
  // The MPI communicator of all the grid's ranks, or MPI_COMM_NULL for a grid without MPI. Owned
  // by the grid. Collective I/O takes world() instead (whose mpi_comm() hands this one to HDF5
  // when there are several ranks); this stays for the model file's writer.
  MPI_Comm mpi_comm() const { return mpi_comm_; }
  void reset_stats();
  // Every communicator from now on stages `device`'s buffers through host memory
  // (make_staging_communicator): a device backend's tensors over host MPI.
  // `on_device`: which buffers (default: device.is_device_pointer).
  void stage_through_host(Backend& device, std::function<bool(const void*)> on_device = {});
  // A grid of one rank: its collectives are copies, made by `device` where a buffer is on it
  // (make_self_communicator). Nothing on a grid of several ranks (stage_through_host, use_nccl).
  // Every model binds its grid so (GnnNetwork, GptModel), as does make_node_backend; again with
  // the same backend does nothing.
  void use_device_copies(Backend& device, std::function<bool(const void*)> on_device = {});
  // Every axis of more than one rank gets a device communicator made by `make` from the axis's
  // host communicator (kept, as host_comm, for host values); one-rank axes, the replica and the
  // world stage device buffers through host memory. use_nccl passes make_nccl_communicator
  // (comm.hpp). Called once, before any collective (later calls do nothing).
  using DeviceCommFactory = std::function<std::unique_ptr<Communicator>(Communicator& host)>;
  void use_device_communicators(Backend& device, const DeviceCommFactory& make);
  void use_nccl(Backend& device);

 private:
  GridShape shape_;
  int dp_ = 1;
  int rank_ = 0;
  std::array<int, 4> coords_{};
  std::array<std::unique_ptr<Communicator>, 4> axes_;
  std::array<std::unique_ptr<Communicator>, 4> host_axes_;  // set by use_device_communicators
  bool device_comms_ = false;
  bool one_node_ = true;
  const Backend* copies_by_ = nullptr;  // set by use_device_copies
  std::unique_ptr<Communicator> replica_;
  std::unique_ptr<Communicator> world_;
  MPI_Comm mpi_comm_ = MPI_COMM_NULL;
};

}  // namespace plexus
