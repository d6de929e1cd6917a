// The non-blocking collectives over float and bfloat16, on the MPI communicator and on the
// single-rank one, checked for values and for the bytes they count. Its main initialises
// MPI (tests/mpi_test_main.cpp); tests/CMakeLists.txt runs it under mpirun on 1, 2, 3 and 4 ranks (mpi_comm_np*).
//
// The values are small integers: bf16 holds every integer up to 256 exactly, so every sum is
// exact whatever order MPI combines the ranks in. Rounding at a combine is checked with one
// non-trivial combine (two ranks hold values, the others zeros, and adding 0 is exact).
//
// Every rank runs every collective in the same order: checks are EXPECTs (an ASSERT would return
// early on one rank and leave the others waiting).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "host_collectives_checks.hpp"
#include "plexus/backend.hpp"
#include "plexus/comm.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/profiling.hpp"

namespace plexus {
namespace {

template <class T>
T from_float(float v);
template <>
float from_float<float>(float v) {
  return v;
}
template <>
bf16 from_float<bf16>(float v) {
  return float_to_bf16(v);
}
float to_float(float v) { return v; }
float to_float(bf16 v) { return bf16_to_float(v); }

// The communicators under test, over every rank of the job: MPI's world, the one-rank one, and
// MPI's world staging every buffer through host copies (make_staging_communicator, as a device
// backend's buffers go: here the "device" is a CPU backend, whose copies the profiler counts).
struct Comms {
  std::unique_ptr<ProcessGrid> grid, staged_grid;
  std::unique_ptr<Communicator> self = make_self_communicator();
  std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  KernelProfiler profile{*cpu};
  Comms() {
    int p = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    grid = ProcessGrid::from_mpi(GridShape{p, 1, 1});
    staged_grid = ProcessGrid::from_mpi(GridShape{p, 1, 1});
    staged_grid->stage_through_host(*cpu, [](const void*) { return true; });
  }
  std::vector<Communicator*> all() { return {&grid->world(), self.get(), &staged_grid->world()}; }
  bool is_self(const Communicator* c) const { return c == self.get(); }
  // Copies the staging made so far (to the host and back).
  std::uint64_t copies() const {
    std::uint64_t n = 0;
    for (const char* k : {"copy_to_host", "copy_from_host"})
      if (profile.entries().count(k)) n += profile.entries().at(k).calls;
    return n;
  }
};

// Uneven counts per rank, one of them zero where there are two ranks or more.
std::vector<std::vector<std::size_t>> count_sets(int p) {
  const std::vector<std::vector<std::size_t>> patterns = {{2, 0, 3, 1}, {0, 5, 1, 4}, {1000, 3, 0, 17}};
  std::vector<std::vector<std::size_t>> sets;
  for (const auto& f : patterns) {
    sets.emplace_back();
    for (int r = 0; r < p; ++r) sets.back().push_back(f[static_cast<std::size_t>(r) % f.size()]);
  }
  return sets;
}
// Small integers around zero: (i mod period) - period/2.
float ramp(std::size_t i, int period) { return static_cast<float>(static_cast<int>(i % period) - period / 2); }
std::size_t total_of(const std::vector<std::size_t>& c) { return std::accumulate(c.begin(), c.end(), std::size_t{0}); }
std::size_t offset_of(const std::vector<std::size_t>& c, int r) {
  return std::accumulate(c.begin(), c.begin() + r, std::size_t{0});
}

// The bytes a call must count: the ring model of comm.hpp with sizeof(T)-byte elements (2 for
// bf16); the single-rank communicator counts none.
double all_reduce_bytes(const Communicator& c, std::size_t n, std::size_t elem) {
  return 2.0 * (c.size() - 1) / c.size() * static_cast<double>(n * elem);
}
double others_bytes(const Communicator& c, const std::vector<std::size_t>& counts, std::size_t elem) {
  return static_cast<double>((total_of(counts) - counts[static_cast<std::size_t>(c.rank())]) * elem);
}

// Waits for a request, polling it first as the training loop does.
void finish(Communicator::Request& r) {
  for (int i = 0; i < 3; ++i)
    if (r.test()) break;
  r.wait();
}

template <class T>
class Collectives : public ::testing::Test {
 protected:
  Comms comms;
};
using ElementTypes = ::testing::Types<float, bf16>;
TYPED_TEST_SUITE(Collectives, ElementTypes);

// Rank r holds ramp(i)·(r + 1): the sum over p ranks is ramp(i)·p(p+1)/2, at most 60 in size.
TYPED_TEST(Collectives, AllReduceSums) {
  using T = TypeParam;
  for (Communicator* c : this->comms.all()) {
    const int p = c->size(), r = c->rank();
    const auto ranks_sum = static_cast<float>(p * (p + 1) / 2);
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1001}}) {
      SCOPED_TRACE(::testing::Message() << "size " << p << " n " << n);
      std::vector<T> buf(n);
      for (std::size_t i = 0; i < n; ++i) buf[i] = from_float<T>(ramp(i, 13) * static_cast<float>(r + 1));
      c->reset_stats();
      finish(*c->iall_reduce(buf.data(), n));
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(to_float(buf[i]), ramp(i, 13) * ranks_sum) << "at " << i;
      EXPECT_EQ(c->stats().calls, 1u);
      EXPECT_DOUBLE_EQ(c->stats().bytes, this->comms.is_self(c) ? 0.0 : all_reduce_bytes(*c, n, sizeof(T)));
    }
  }
}

TYPED_TEST(Collectives, ReduceScatterUnevenCounts) {
  using T = TypeParam;
  for (Communicator* c : this->comms.all()) {
    const int p = c->size(), r = c->rank();
    const auto ranks_sum = static_cast<float>(p * (p + 1) / 2);
    for (const auto& counts : count_sets(p)) {
      const std::size_t total = total_of(counts), own = counts[static_cast<std::size_t>(r)];
      const std::size_t off = offset_of(counts, r);
      SCOPED_TRACE(::testing::Message() << "size " << p << " total " << total << " own " << own);
      std::vector<T> send(total), recv(own, from_float<T>(-999.0f));
      for (std::size_t i = 0; i < total; ++i) send[i] = from_float<T>(ramp(i, 11) * static_cast<float>(r + 1));
      c->reset_stats();
      finish(*c->ireduce_scatter(send.data(), recv.data(), counts));
      for (std::size_t j = 0; j < own; ++j) EXPECT_EQ(to_float(recv[j]), ramp(off + j, 11) * ranks_sum) << "at " << j;
      EXPECT_EQ(c->stats().calls, 1u);
      EXPECT_DOUBLE_EQ(c->stats().bytes, this->comms.is_self(c) ? 0.0 : others_bytes(*c, counts, sizeof(T)));
    }
  }
}

// Rank q's j-th element is 10·q + j, as T (bf16 rounds those above 256: a gather moves bits, so
// the expectation is the same rounded value).
TYPED_TEST(Collectives, AllGatherUnevenCountsInAndOutOfPlace) {
  using T = TypeParam;
  const auto element = [](int q, std::size_t j) {
    return from_float<T>(static_cast<float>(10 * q) + static_cast<float>(j));
  };
  for (Communicator* c : this->comms.all()) {
    const int p = c->size(), r = c->rank();
    for (const auto& counts : count_sets(p)) {
      for (const bool in_place : {false, true}) {
        const std::size_t total = total_of(counts), own = counts[static_cast<std::size_t>(r)];
        const std::size_t off = offset_of(counts, r);
        SCOPED_TRACE(::testing::Message() << "size " << p << " total " << total << " in place " << in_place);
        std::vector<T> send(own), recv(total, from_float<T>(-999.0f));
        for (std::size_t j = 0; j < own; ++j) send[j] = element(r, j);
        if (in_place) std::copy(send.begin(), send.end(), recv.begin() + static_cast<std::ptrdiff_t>(off));
        c->reset_stats();
        finish(*c->iall_gather(in_place ? recv.data() + off : send.data(), recv.data(), counts));
        for (int q = 0; q < p; ++q)
          for (std::size_t j = 0; j < counts[static_cast<std::size_t>(q)]; ++j)
            EXPECT_EQ(to_float(recv[offset_of(counts, q) + j]), to_float(element(q, j)))
                << "rank " << q << " element " << j;
        EXPECT_EQ(c->stats().calls, 1u);
        EXPECT_DOUBLE_EQ(c->stats().bytes, this->comms.is_self(c) ? 0.0 : others_bytes(*c, counts, sizeof(T)));
      }
    }
  }
}

// The host collectives (preparation, conversion, outputs) on MPI's world, the one-rank
// communicator and the staged world (host buffers pass through): values and bytes, and the MPI
// communicator HDF5 gets (none on one rank).
TEST(HostCollectives, ValuesAndBytesOnEveryCommunicator) {
  Comms comms;
  for (Communicator* c : comms.all()) {
    test::expect_host_collectives(*c);
    EXPECT_EQ(c->mpi_comm() != MPI_COMM_NULL, c->size() > 1);
  }
  const std::unique_ptr<Communicator> own = make_mpi_communicator(MPI_COMM_WORLD);
  EXPECT_EQ(own->size(), comms.grid->world().size());
  EXPECT_EQ(own->rank(), comms.grid->world().rank());
  test::expect_host_collectives(*own);
}

// The staging communicator copies a staged buffer to the host and back once per collective, and
// passes a buffer it is told lives on the host (a scalar, the loss) straight through.
TEST(StagingCommunicator, CopiesDeviceBuffersThroughTheHostAndPassesHostOnes) {
  Comms comms;
  const int p = comms.grid->size();
  std::vector<float> tensor(7, 1.0f);
  double scalar = 2.0;
  auto cpu = make_cpu_backend(1);
  KernelProfiler profile(*cpu);
  auto grid = ProcessGrid::from_mpi(GridShape{p, 1, 1});
  grid->stage_through_host(*cpu, [&](const void* q) { return q == tensor.data(); });
  grid->world().all_reduce(tensor.data(), tensor.size(), ReduceOp::Sum);
  grid->world().all_reduce(&scalar, 1, ReduceOp::Sum);
  EXPECT_EQ(tensor, std::vector<float>(7, static_cast<float>(p)));
  EXPECT_EQ(scalar, 2.0 * p);
  EXPECT_EQ(profile.entries().at("copy_to_host").calls, 1u);    // the tensor, once each way
  EXPECT_EQ(profile.entries().at("copy_from_host").calls, 1u);  // and never the scalar
  EXPECT_EQ(grid->world().stats().calls, 2u);                   // the host communicator's count
  EXPECT_DOUBLE_EQ(grid->world().stats().bytes, 2.0 * (p - 1) / p * (7 * 4 + 8));
  const std::uint64_t before = comms.copies();
  std::vector<float> all(static_cast<std::size_t>(p));
  const float mine = static_cast<float>(comms.grid->rank());
  comms.staged_grid->world().all_gather(&mine, all.data(), std::vector<std::size_t>(static_cast<std::size_t>(p), 1));
  for (int q = 0; q < p; ++q) EXPECT_EQ(all[static_cast<std::size_t>(q)], static_cast<float>(q));
  EXPECT_EQ(comms.copies() - before, 2u);  // send to the host, received back
}

// A one-rank communicator bound to a backend copies that backend's buffers through it (a host
// memmove of a device pointer faults: one-rank CUDA link training did, on an H200), host ones
// with memmove; every direction, blocking and not. Here the "device" is a CPU backend whose
// copies the profiler counts, and `device` marks which buffers are its.
TEST(SelfCommunicator, CopiesDeviceBuffersThroughTheBackend) {
  auto cpu = make_cpu_backend(1);
  KernelProfiler profile(*cpu);
  std::vector<float> a{1, 2, 3, 4}, b(4, 0.0f), host(4, 0.0f);
  const auto device = [&](const void* p) { return p == a.data() || p == b.data(); };
  auto self = make_self_communicator(cpu.get(), device);
  const auto calls = [&](const char* k) -> std::uint64_t {
    const auto it = profile.entries().find(k);
    return it == profile.entries().end() ? 0 : it->second.calls;
  };
  self->all_gather(a.data(), b.data(), {4});                  // device to device
  EXPECT_EQ(b, a);
  EXPECT_EQ(calls("copy_on_device"), 1u);
  self->reduce_scatter(b.data() + 1, host.data(), {3});       // send inside a device buffer: no pointer of it
  EXPECT_EQ(calls("copy_on_device"), 1u);                      // is marked, so the host path (memmove)
  b = {5, 6, 7, 8};
  self->iall_gather(b.data(), host.data(), {4})->wait();      // device to host
  EXPECT_EQ(host, b);
  EXPECT_EQ(calls("copy_to_host"), 1u);
  host = {9, 10, 11, 12};
  self->ireduce_scatter(host.data(), a.data(), {4})->wait();  // host to device
  EXPECT_EQ(a, host);
  EXPECT_EQ(calls("copy_from_host"), 1u);
  self->all_gather(a.data(), a.data(), {4});                  // in place: nothing to copy
  self->all_gather(a.data(), b.data(), {0});                  // nothing to copy
  EXPECT_EQ(calls("copy_on_device") + calls("copy_to_host") + calls("copy_from_host"), 3u);
  EXPECT_EQ(self->stats().calls, 6u);
  EXPECT_EQ(self->stats().bytes, 0.0);
  // Unbound, the same calls are memmoves the backend never sees.
  auto plain = make_self_communicator();
  plain->all_gather(host.data(), b.data(), {4});
  EXPECT_EQ(b, host);
  EXPECT_EQ(calls("copy_on_device") + calls("copy_to_host") + calls("copy_from_host"), 3u);
}

// ProcessGrid::use_device_copies: a one-rank grid's axes copy through the backend, with or
// without MPI under it; its world keeps the MPI communicator HDF5 opens files with; again with
// the same backend changes nothing; a grid of several ranks is left to staging or NCCL.
TEST(SelfCommunicator, OneRankGridsCopyThroughTheirBackend) {
  auto cpu = make_cpu_backend(1);
  KernelProfiler profile(*cpu);
  std::vector<float> a{1, 2, 3}, b(3, 0.0f);
  const auto device = [&](const void* p) { return p == a.data() || p == b.data(); };
  auto copies = [&]() -> std::uint64_t {
    const auto it = profile.entries().find("copy_on_device");
    return it == profile.entries().end() ? 0 : it->second.calls;
  };
  auto single = ProcessGrid::single();
  auto mpi_one = ProcessGrid::from_mpi(GridShape{1, 1, 1}, 1, MPI_COMM_SELF);
  std::uint64_t expected = 0;
  for (ProcessGrid* g : {single.get(), mpi_one.get()}) {
    const MPI_Comm world = g->world().mpi_comm();
    g->use_device_copies(*cpu, device);
    g->use_device_copies(*cpu, device);
    EXPECT_EQ(g->world().mpi_comm(), world);
    for (Axis x : kAllAxes) {
      std::fill(b.begin(), b.end(), 0.0f);
      g->comm(x).all_gather(a.data(), b.data(), {3});
      EXPECT_EQ(b, a);
      EXPECT_EQ(copies(), ++expected);
    }
    std::fill(b.begin(), b.end(), 0.0f);
    g->replica().all_gather(a.data(), b.data(), {3});  // a copy (single) or staged over MPI (mpi_one)
    EXPECT_EQ(b, a);
    expected = copies();
    double scalar = 2.0;
    g->world().all_reduce(&scalar, 1, ReduceOp::Sum);
    EXPECT_EQ(scalar, 2.0);
  }
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p > 1) {
    auto many = ProcessGrid::from_mpi(GridShape{p, 1, 1});
    many->use_device_copies(*cpu, device);
    std::vector<float> all(static_cast<std::size_t>(p) * 3);
    many->comm(Axis::X).all_gather(a.data(), all.data(), std::vector<std::size_t>(static_cast<std::size_t>(p), 3));
    EXPECT_EQ(many->comm(Axis::X).size(), p);
    EXPECT_EQ(std::vector<float>(all.begin(), all.begin() + 3), a);
  }
}

// The host copies come from pinned blocks the staging communicator reuses: the first step of a
// training-like mix (blocking collectives, then three non-blocking ones in flight together,
// completed out of order) takes blocks from the backend, and the same steps after it take none.
TEST(StagingCommunicator, SteadyStateAllocatesNoPinnedMemory) {
  auto cpu = make_cpu_backend(1);
  KernelProfiler profile(*cpu);
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  auto grid = ProcessGrid::from_mpi(GridShape{p, 1, 1});
  grid->stage_through_host(*cpu, [](const void*) { return true; });
  Communicator& c = grid->world();
  const auto pinned = [&]() -> std::uint64_t {
    const auto it = profile.entries().find("allocate_host_pinned");
    return it == profile.entries().end() ? 0 : it->second.calls;
  };
  const auto P = static_cast<std::size_t>(p);
  const std::vector<std::size_t> counts(P, 300), small(P, 3);
  std::vector<float> big(5000, 1.0f), gathered(300 * P), mine(300, 2.0f), scattered(300), send(300 * P, 1.0f);
  std::vector<bf16> half(2000, float_to_bf16(1.0f)), half_all(3 * P), half_mine(3, float_to_bf16(3.0f));
  const auto step = [&] {
    c.all_reduce(big.data(), big.size(), ReduceOp::Max);
    c.all_gather(mine.data(), gathered.data(), counts);
    c.reduce_scatter(send.data(), scattered.data(), counts);
    auto a = c.iall_reduce(half.data(), half.size());
    auto b = c.iall_gather(half_mine.data(), half_all.data(), small);
    auto d = c.ireduce_scatter(send.data(), scattered.data(), counts);
    finish(*b);
    finish(*d);
    finish(*a);
    for (auto& h : half) h = float_to_bf16(1.0f);
  };
  step();
  const std::uint64_t first = pinned();
  EXPECT_GT(first, 0u);
  for (int i = 0; i < 5; ++i) step();
  EXPECT_EQ(pinned(), first) << "pinned blocks allocated after the first step";
  EXPECT_EQ(big, std::vector<float>(5000, 1.0f));
  EXPECT_EQ(scattered, std::vector<float>(300, static_cast<float>(p)));
  for (std::size_t i = 0; i < half_all.size(); ++i) EXPECT_EQ(bf16_to_float(half_all[i]), 3.0f) << i;
}

// One combine of two non-zero values, rounded to bf16 (ties to even): rank 0 holds a, rank 1
// holds b, every other rank zeros, so the order MPI picks does not matter.
TEST(CollectivesBf16, SumsRoundToNearestEvenAtTheCombine) {
  Comms comms;
  Communicator& c = comms.grid->world();
  if (c.size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::vector<float> a = {1.0f, 1.0f + 0x1p-7f, 256.0f, -3.0f, 0x1p-130f};
  const std::vector<float> b = {0x1p-8f, 0x1p-8f, 1.0f, 0.5f, 0x1p-130f};
  // 1 + 2^-8 ties to 1; (1 + 2^-7) + 2^-8 ties up to 1 + 2^-6; 257 ties to 256 (spacing 2
  // there); -2.5 is exact; two equal denormals add exactly.
  const std::vector<float> want = {1.0f, 1.0f + 0x1p-6f, 256.0f, -2.5f, 0x1p-129f};
  const std::vector<float>& mine = c.rank() == 0 ? a : b;
  std::vector<bf16> buf(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) buf[i] = float_to_bf16(c.rank() <= 1 ? mine[i] : 0.0f);
  finish(*c.iall_reduce(buf.data(), buf.size()));
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(bf16_to_float(buf[i]), want[i]) << "element " << i;

  // The same values through reduce-scatter: rank 0 keeps all of them.
  std::vector<std::size_t> counts(static_cast<std::size_t>(c.size()), 0);
  counts[0] = a.size();
  std::vector<bf16> send(a.size()), recv(c.rank() == 0 ? a.size() : 0);
  for (std::size_t i = 0; i < a.size(); ++i) send[i] = float_to_bf16(c.rank() <= 1 ? mine[i] : 0.0f);
  finish(*c.ireduce_scatter(send.data(), recv.data(), counts));
  for (std::size_t i = 0; i < recv.size(); ++i) EXPECT_EQ(bf16_to_float(recv[i]), want[i]) << "element " << i;
}

// all_reduce_bf16 (--precision bf16's activation sums): each rank's bf16 values summed in float in
// rank order and rounded once, on the MPI, staged and single-rank communicators, for sizes that
// do not divide by the ranks (blocks of 0 elements included). Every rank holds 256 at element 0
// and 1 elsewhere below it: a sum rounded to bf16 at each combine stays at 256 (256 + 1 ties to
// 256), the float sum is 256 + (p - 1) rounded once. The bytes are an all-reduce's of 2-byte
// elements.
TEST(CollectivesBf16, AllReduceBf16SumsInFloatAndRoundsOnce) {
  Comms comms;
  for (Communicator* c : comms.all()) {
    const int p = c->size(), q = c->rank();
    for (const std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{1001}}) {
      std::vector<bf16> buf(n);
      for (std::size_t i = 0; i < n; ++i)
        buf[i] = float_to_bf16(i % 5 == 0 ? (q == 0 ? 256.0f : 1.0f) : ramp(i + static_cast<std::size_t>(q), 9) / 8);
      std::vector<float> want(n);
      for (std::size_t i = 0; i < n; ++i) {
        float sum = 0;  // the float sum of every rank's bf16 value, in rank order
        for (int r = 0; r < p; ++r)
          sum += bf16_to_float(float_to_bf16(
              i % 5 == 0 ? (r == 0 ? 256.0f : 1.0f) : ramp(i + static_cast<std::size_t>(r), 9) / 8));
        want[i] = bf16_to_float(float_to_bf16(sum));
      }
      c->reset_stats();
      c->all_reduce_bf16(buf.data(), n);
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(bf16_to_float(buf[i]), want[i]) << "n " << n << " element " << i;
      if (p == 3) {
        EXPECT_EQ(bf16_to_float(buf[0]), 258.0f) << "256 + 1 + 1 in float, then rounded";
      }
      EXPECT_DOUBLE_EQ(c->stats().bytes, comms.is_self(c) ? 0.0 : all_reduce_bytes(*c, n, 2)) << "n " << n;
    }
  }
}

}  // namespace
}  // namespace plexus
