#include "plexus/process_grid.hpp"

#include <algorithm>
#include <charconv>

#include "plexus/error.hpp"
#include "plexus/sizes.hpp"

namespace plexus {

const char* axis_name(Axis a) { return a == Axis::X ? "x" : a == Axis::Y ? "y" : a == Axis::Z ? "z" : "d"; }

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
      throw InputError("GridShape", "expected XxYxZ with positive integers (e.g. 2x2x2), got '" + text + "'");
    p = next + 1;
  }
  // The product is checked (3x3x954437177 must not wrap to one rank) and bounded: tables per
  // rank or per block (plan, inspect, METIS parts) must stay small.
  const std::int64_t ranks = checked_product({g.x, g.y, g.z}, "GridShape", "the rank count of " + text);
  if (ranks > kMaxGridRanks)
    throw InputError("GridShape", text + " has " + std::to_string(ranks) + " ranks, more than the " +
                                   std::to_string(kMaxGridRanks) + " a grid may have");
  return g;
}

int grid_ranks(GridShape shape, int dp) {
  if (dp < 1) throw InputError("grid_ranks(dp)", "must be at least 1");
  const std::int64_t ranks = checked_mul(dp, shape.size(), "grid_ranks(dp)", "the rank count of the replicas");
  if (ranks > kMaxGridRanks)
    throw InputError("grid_ranks(dp)", std::to_string(dp) + " replicas of " + shape.str() + " have " + std::to_string(ranks) +
                                 " ranks, more than the " + std::to_string(kMaxGridRanks) + " a grid may have");
  return static_cast<int>(ranks);
}

std::array<int, 4> grid_coords(GridShape shape, int rank) {
  const int t = rank % shape.size();
  return {(t / shape.y) % shape.x, t % shape.y, t / (shape.x * shape.y), rank / shape.size()};
}

namespace {
// Layer l's roles from layer l-1's (`p`) and the two layers' orders.
LayerRoles next_roles(const LayerRoles& p, bool prev_transform_first, bool transform_first) {
  // Layer l-1's output: rows over its d; features over its o (aggregate first) or i
  // (transform first); replicated over the remaining axis.
  const Axis rows = p.d, feat = prev_transform_first ? p.i : p.o, repl = prev_transform_first ? p.o : p.i;
  return transform_first ? LayerRoles{rows, repl, feat} : LayerRoles{rows, feat, repl};
}
bool transform_first_at(const std::vector<bool>& transform_first, int l) {
  return l < static_cast<int>(transform_first.size()) && transform_first[static_cast<std::size_t>(l)];
}
}  // namespace

std::vector<LayerRoles> layer_roles(int layers, const std::vector<bool>& transform_first) {
  std::vector<LayerRoles> roles;
  roles.reserve(static_cast<std::size_t>(std::max(layers, 0)));
  for (int l = 0; l < layers; ++l)
    roles.push_back(l == 0 ? LayerRoles{Axis::X, Axis::Y, Axis::Z}
                           : next_roles(roles.back(), transform_first_at(transform_first, l - 1),
                                        transform_first_at(transform_first, l)));
  return roles;
}

LayerRoles layer_roles_at(int layer, const std::vector<bool>& transform_first) {
  LayerRoles r{Axis::X, Axis::Y, Axis::Z};
  for (int l = 1; l <= layer; ++l)
    r = next_roles(r, transform_first_at(transform_first, l - 1), transform_first_at(transform_first, l));
  return r;
}

ProcessGrid::ProcessGrid(GridShape shape, int dp, int rank, std::array<std::unique_ptr<Communicator>, 4> axes,
                         std::unique_ptr<Communicator> replica, std::unique_ptr<Communicator> world,
                         MPI_Comm mpi_comm)
    : shape_(shape), dp_(dp), rank_(rank), coords_(grid_coords(shape, rank)), axes_(std::move(axes)),
      replica_(std::move(replica)), world_(std::move(world)), mpi_comm_(mpi_comm) {}

std::unique_ptr<ProcessGrid> ProcessGrid::single() {
  return std::make_unique<ProcessGrid>(
      GridShape{}, 1, 0,
      std::array<std::unique_ptr<Communicator>, 4>{make_self_communicator(), make_self_communicator(),
                                                   make_self_communicator(), make_self_communicator()},
      make_self_communicator(), make_self_communicator());
}

void ProcessGrid::stage_through_host(Backend& device, std::function<bool(const void*)> on_device) {
  for (auto& c : axes_) c = make_staging_communicator(std::move(c), device, on_device);
  replica_ = make_staging_communicator(std::move(replica_), device, on_device);
  world_ = make_staging_communicator(std::move(world_), device, on_device);
}

void ProcessGrid::use_device_copies(Backend& device, std::function<bool(const void*)> on_device) {
  if (size() != 1 || copies_by_ == &device) return;
  // The axes carry the layers' tensors: plain copies. The replica and the world keep an MPI
  // communicator of one process where they have one (HDF5 opens files through the world's),
  // staged (their few tensors, norms and gathers, are small).
  for (auto& c : axes_) c = make_self_communicator(&device, on_device);
  for (auto* c : {&replica_, &world_})
    *c = (*c)->mpi_comm() != MPI_COMM_NULL ? make_staging_communicator(std::move(*c), device, on_device)
                                           : make_self_communicator(&device, on_device);
  copies_by_ = &device;
}

void ProcessGrid::use_device_communicators(Backend& device, const DeviceCommFactory& make) {
  if (device_comms_) return;
  // Every device communicator is made before any axis changes, so a failure leaves the grid as
  // it was.
  std::array<std::unique_ptr<Communicator>, 4> made;
  for (Axis a : kAllAxes)
    if (axes_[static_cast<int>(a)]->size() > 1) made[static_cast<int>(a)] = make(*axes_[static_cast<int>(a)]);
  device_comms_ = true;
  for (Axis a : kAllAxes) {
    const int k = static_cast<int>(a);
    if (made[k]) {
      host_axes_[k] = std::move(axes_[k]);
      axes_[k] = std::move(made[k]);
    } else {
      axes_[k] = make_staging_communicator(std::move(axes_[k]), device);
    }
  }
  // The replica's and the world's collectives carry host values (norms, metrics); staged all
  // the same, so that a device buffer given to them never reaches MPI.
  replica_ = make_staging_communicator(std::move(replica_), device);
  world_ = make_staging_communicator(std::move(world_), device);
}

void ProcessGrid::use_nccl(Backend& device) {
  use_device_communicators(device, [&](Communicator& host) { return make_nccl_communicator(host, device); });
}

CommStats ProcessGrid::axis_stats(Axis a) const {
  CommStats s = axes_[static_cast<int>(a)]->stats();
  if (const auto& h = host_axes_[static_cast<int>(a)]) {
    const CommStats& hs = h->stats();
    s.calls += hs.calls;
    s.bytes += hs.bytes;
    s.seconds += hs.seconds;
  }
  return s;
}

void ProcessGrid::reset_stats() {
  for (auto& c : axes_) c->reset_stats();
  for (auto& c : host_axes_)
    if (c) c->reset_stats();
  replica_->reset_stats();
  world_->reset_stats();
}

}  // namespace plexus
