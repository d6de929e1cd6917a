#pragma once
// The host collectives of plexus/comm.hpp (integer reductions and scans, gathers, broadcasts and
// all-to-alls of bytes) checked on one rank of any communicator: the values every rank must get
// and the bytes it must count, from the formulas of docs/communication.md written out here, and
// the recording communicator of the dry runs counting the same. Every rank of the group calls
// expect_host_collectives at once (tests/mpi_test_comm.cpp over MPI, tests/test_in_process_ranks.cpp
// over threads). Checks are EXPECTs: an ASSERT would leave the other ranks waiting.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "comm/recording_communicator.hpp"
#include "plexus/comm.hpp"

namespace plexus::test {

// Byte k of rank q's part for rank `to` (every byte tells where it came from).
inline unsigned char host_byte(int q, int to, std::size_t k) { return static_cast<unsigned char>(q * 37 + to * 11 + k); }

// Runs `call` on `c` and on a recording communicator of the same place, and checks what each
// counted: one call, `bytes` bytes.
template <class Call>
void expect_counted(Communicator& c, double bytes, const char* what, Call&& call) {
  RecordingCommunicator rec(c.size(), c.rank(), Transport::Mpi);
  const CommStats before = c.stats();
  call(c);
  call(rec);
  EXPECT_EQ(c.stats().calls - before.calls, 1u) << what;
  EXPECT_DOUBLE_EQ(c.stats().bytes - before.bytes, bytes) << what;
  EXPECT_DOUBLE_EQ(rec.stats().bytes, bytes) << what << " (recording)";
}

inline void expect_host_collectives(Communicator& c) {
  const int p = c.size(), r = c.rank();
  const auto ps = static_cast<std::size_t>(p);
  SCOPED_TRACE(::testing::Message() << "rank " << r << " of " << p);

  // Integers: sums, maxima, minima of (r + 1, -r, 7r); their 2(p-1)/p ring bytes.
  const double ring3 = 2.0 * (p - 1) / p * 24.0;
  for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
    std::vector<std::int64_t> v{r + 1, -r, 7 * r};
    expect_counted(c, ring3, "all_reduce", [&](Communicator& on) {
      std::vector<std::int64_t> w{r + 1, -r, 7 * r};
      on.all_reduce(w.data(), w.size(), op);
      if (&on == &c) v = w;
    });
    const std::int64_t tri = std::int64_t{p} * (p - 1) / 2;
    const std::vector<std::int64_t> want = op == ReduceOp::Sum   ? std::vector<std::int64_t>{tri + p, -tri, 7 * tri}
                                           : op == ReduceOp::Max ? std::vector<std::int64_t>{p, 0, 7 * (p - 1)}
                                                                 : std::vector<std::int64_t>{1, -(p - 1), 0};
    EXPECT_EQ(v, want) << "op " << static_cast<int>(op);
  }
  // Exclusive scan of (r + 1, 2): the sums below this rank; 16 bytes on every rank but the first.
  {
    std::vector<std::int64_t> v;
    expect_counted(c, r > 0 ? 16.0 : 0.0, "exclusive_scan", [&](Communicator& on) {
      std::vector<std::int64_t> w{r + 1, 2};
      on.exclusive_scan(w.data(), w.size());
      if (&on == &c) v = w;
    });
    EXPECT_EQ(v, (std::vector<std::int64_t>{std::int64_t{r} * (r + 1) / 2, 2 * std::int64_t{r}}));
  }
  // Gathers of uneven parts (one empty where there are two ranks or more): rank q's part is
  // (q * 5 + 3) % 7 bytes, the rank after the first holding none.
  std::vector<std::size_t> counts(ps);
  for (int q = 0; q < p; ++q) counts[static_cast<std::size_t>(q)] = q == 1 ? 0 : static_cast<std::size_t>(q * 5 + 3) % 7 + 1;
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  const std::size_t own = counts[static_cast<std::size_t>(r)];
  std::vector<unsigned char> part(own), want;
  for (std::size_t k = 0; k < own; ++k) part[k] = host_byte(r, 0, k);
  for (int q = 0; q < p; ++q)
    for (std::size_t k = 0; k < counts[static_cast<std::size_t>(q)]; ++k) want.push_back(host_byte(q, 0, k));
  {
    std::vector<unsigned char> all(total, 0xEE);
    expect_counted(c, static_cast<double>(total - own), "all_gather_bytes",
                   [&](Communicator& on) { on.all_gather_bytes(part.data(), &on == &c ? all.data() : nullptr, counts); });
    EXPECT_EQ(all, want);
  }
  {
    const int root = p - 1;
    std::vector<unsigned char> all(total, 0xEE);
    expect_counted(c, r == root ? static_cast<double>(total - own) : 0.0, "gather_bytes", [&](Communicator& on) {
      on.gather_bytes(part.data(), &on == &c ? all.data() : nullptr, counts, root);
    });
    EXPECT_EQ(all, r == root ? want : std::vector<unsigned char>(total, 0xEE)) << "root " << root;
  }
  // Broadcast of 11 bytes from the middle rank.
  {
    const int root = p / 2;
    std::vector<unsigned char> buf(11, 0);
    for (std::size_t k = 0; k < buf.size(); ++k) buf[k] = host_byte(r, 0, k);
    expect_counted(c, r == root ? 0.0 : 11.0, "broadcast_bytes", [&](Communicator& on) {
      if (&on == &c) on.broadcast_bytes(buf.data(), buf.size(), root);
      else on.broadcast_bytes(nullptr, buf.size(), root);
    });
    for (std::size_t k = 0; k < buf.size(); ++k) EXPECT_EQ(buf[k], host_byte(root, 0, k)) << "byte " << k;
  }
  // All-to-all: rank q sends (q + 2·to) % 5 bytes to rank `to`.
  {
    const auto sends = [](int q, int to) { return static_cast<std::size_t>(q + 2 * to) % 5; };
    std::vector<std::size_t> send_counts(ps), recv_counts(ps);
    std::vector<unsigned char> send, expected;
    for (int to = 0; to < p; ++to) {
      send_counts[static_cast<std::size_t>(to)] = sends(r, to);
      for (std::size_t k = 0; k < sends(r, to); ++k) send.push_back(host_byte(r, to, k));
    }
    for (int q = 0; q < p; ++q) {
      recv_counts[static_cast<std::size_t>(q)] = sends(q, r);
      for (std::size_t k = 0; k < sends(q, r); ++k) expected.push_back(host_byte(q, r, k));
    }
    std::vector<unsigned char> recv(expected.size(), 0xEE);
    expect_counted(c, static_cast<double>(expected.size() - sends(r, r)), "all_to_all_bytes", [&](Communicator& on) {
      on.all_to_all_bytes(send.data(), send_counts, &on == &c ? recv.data() : nullptr, recv_counts);
    });
    EXPECT_EQ(recv, expected);
  }
}

}  // namespace plexus::test
