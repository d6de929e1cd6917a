// The NCCL communicator's schedule of uneven all-gathers and reduce-scatters
// (src/comm/nccl_schedule.hpp) is host arithmetic, so it is tested here without a GPU:
//  - the method is the cheaper of padded and grouped (native when counts are equal);
//  - a host simulation of the NCCL primitives the communicator issues for each method
//    (ncclAllGather/ncclReduceScatter on padded buffers; ncclBroadcast/ncclReduce per root)
//    gives the all-gather-v / reduce-scatter-v result, and the elements each rank receives in
//    the simulated ring equal the schedule's rank_bytes, summed over ranks exactly;
//  - the analytic model with Transport::Nccl uses the same accounting: it equals the MPI
//    model where every count is equal and exceeds it by exactly the padding elsewhere.
// The engine's real collective sequence against the model is tests/mpi_nccl_accounting.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "comm/nccl_schedule.hpp"
#include "plan/plan.hpp"
#include "problem_util.hpp"

namespace plexus {
namespace {

std::vector<std::size_t> offsets_of(const std::vector<std::size_t>& c) {
  std::vector<std::size_t> off(c.size(), 0);
  std::exclusive_scan(c.begin(), c.end(), off.begin(), std::size_t{0});
  return off;
}

// One simulated ring: every rank's buffer and the elements each rank received.
struct Ring {
  std::vector<std::vector<double>> buf;
  std::vector<std::size_t> received;
};

// ncclAllGather of `count` per rank from each rank's slot [rank·count, +count) of buf (in place),
// ring: each rank receives the other p-1 slots.
void ring_all_gather(Ring& r, std::size_t count) {
  const std::size_t p = r.buf.size();
  std::vector<std::vector<double>> out = r.buf;
  for (std::size_t dst = 0; dst < p; ++dst)
    for (std::size_t src = 0; src < p; ++src)
      if (src != dst) {
        std::copy_n(r.buf[src].begin() + static_cast<std::ptrdiff_t>(src * count), count,
                    out[dst].begin() + static_cast<std::ptrdiff_t>(src * count));
        r.received[dst] += count;
      }
  r.buf = out;
}
// ncclReduceScatter in place: rank k's slot becomes the sum of every rank's slot k; ring:
// each rank receives p-1 partial slots.
void ring_reduce_scatter(Ring& r, std::size_t count) {
  const std::size_t p = r.buf.size();
  std::vector<std::vector<double>> out = r.buf;
  for (std::size_t k = 0; k < p; ++k)
    for (std::size_t i = 0; i < count; ++i) {
      double s = 0;
      for (std::size_t src = 0; src < p; ++src) s += r.buf[src][k * count + i];
      out[k][k * count + i] = s;
    }
  for (std::size_t k = 0; k < p; ++k) r.received[k] += (p - 1) * count;
  r.buf = out;
}

struct Case {
  std::vector<std::size_t> counts;
  std::size_t elem;
};

std::vector<Case> cases() {
  std::vector<Case> out = {
      {{5}, 4}, {{3, 3, 3}, 4}, {{0, 0}, 4}, {{4, 3}, 4}, {{0, 7, 0}, 4},
      {{2708 * 16 / 3 + 16, 2708 * 16 / 3, 2708 * 16 / 3}, 4},  // one row more on rank 0: padded
      {{1, 1, 1, 200000}, 4},                                     // one huge part: grouped
      {{100000, 0, 0, 0, 0, 0, 0, 0}, 2},
  };
  std::mt19937 rng(7);
  for (int k = 0; k < 40; ++k) {
    const std::size_t p = 1 + rng() % 8;
    std::vector<std::size_t> c(p);
    const std::size_t scale = k % 2 ? 1 : 70000;  // small ones pad, skewed large ones group
    for (auto& x : c) x = rng() % (scale + 1);
    out.push_back({c, k % 3 ? 4u : 2u});
  }
  return out;
}

TEST(NcclSchedule, MethodIsTheCheaperOfPaddedAndGrouped) {
  int padded = 0, grouped = 0;
  for (const Case& c : cases()) {
    const UnevenSchedule s = schedule_uneven(c.counts, c.elem);
    const double p = static_cast<double>(c.counts.size());
    const std::size_t mx = *std::max_element(c.counts.begin(), c.counts.end());
    const std::size_t tot = std::accumulate(c.counts.begin(), c.counts.end(), std::size_t{0});
    EXPECT_EQ(s.max_count, mx);
    EXPECT_EQ(s.total, tot);
    if (tot == mx * c.counts.size()) {
      EXPECT_EQ(s.method, UnevenMethod::Native);
      continue;
    }
    const double pad = p * (p - 1) * static_cast<double>(mx * c.elem);
    const double grp = (p - 1) * (static_cast<double>(tot * c.elem) + kNcclOpChargeBytes);
    EXPECT_EQ(s.method, grp < pad ? UnevenMethod::Grouped : UnevenMethod::Padded);
    (s.method == UnevenMethod::Padded ? padded : grouped) += 1;
  }
  EXPECT_GT(padded, 0);  // both methods are exercised by the cases
  EXPECT_GT(grouped, 0);
  EXPECT_EQ(schedule_uneven({2708 * 16 / 3 + 16, 2708 * 16 / 3, 2708 * 16 / 3}, 4).method, UnevenMethod::Padded);
  EXPECT_EQ(schedule_uneven({1, 1, 1, 200000}, 4).method, UnevenMethod::Grouped);
  EXPECT_THROW(schedule_uneven({}, 4), std::invalid_argument);
}

// Runs the schedule's primitives on host arrays: the result is the all-gather-v, and each
// rank's received elements equal rank_bytes / elem.
TEST(NcclSchedule, SimulatedAllGatherGivesTheConcatenationAndItsBytes) {
  for (const Case& c : cases()) {
    const std::size_t p = c.counts.size();
    const UnevenSchedule s = schedule_uneven(c.counts, c.elem);
    const auto off = offsets_of(c.counts);
    std::vector<double> want(s.total);
    std::iota(want.begin(), want.end(), 1.0);
    Ring ring{std::vector<std::vector<double>>(p), std::vector<std::size_t>(p, 0)};
    std::vector<std::vector<double>> result(p, std::vector<double>(s.total, -1.0));
    if (s.method == UnevenMethod::Grouped) {
      // One broadcast per root: every other rank receives the root's part.
      for (std::size_t root = 0; root < p; ++root)
        for (std::size_t dst = 0; dst < p; ++dst) {
          std::copy_n(want.begin() + static_cast<std::ptrdiff_t>(off[root]), c.counts[root],
                      result[dst].begin() + static_cast<std::ptrdiff_t>(off[root]));
          if (dst != root) ring.received[dst] += c.counts[root];
        }
    } else {
      // Native/padded: own part into its padded slot (zero tail), all-gather, compact.
      for (std::size_t k = 0; k < p; ++k) {
        ring.buf[k].assign(p * s.max_count, 0.0);
        std::copy_n(want.begin() + static_cast<std::ptrdiff_t>(off[k]), c.counts[k],
                    ring.buf[k].begin() + static_cast<std::ptrdiff_t>(k * s.max_count));
      }
      if (p > 1) ring_all_gather(ring, s.max_count);
      for (std::size_t k = 0; k < p; ++k)
        for (std::size_t r = 0; r < p; ++r)
          std::copy_n(ring.buf[k].begin() + static_cast<std::ptrdiff_t>(r * s.max_count), c.counts[r],
                      result[k].begin() + static_cast<std::ptrdiff_t>(off[r]));
    }
    double sum = 0;
    for (std::size_t k = 0; k < p; ++k) {
      EXPECT_EQ(result[k], want) << "rank " << k;
      const double b = s.rank_bytes(c.counts, static_cast<int>(k), c.elem);
      EXPECT_EQ(b, static_cast<double>(ring.received[k] * c.elem)) << "rank " << k << " of " << p;
      sum += b;
    }
    const double ring_volume = s.method == UnevenMethod::Grouped ? static_cast<double>((p - 1) * s.total * c.elem)
                                                                 : static_cast<double>(p * (p - 1) * s.max_count * c.elem);
    EXPECT_EQ(sum, ring_volume);
  }
}

TEST(NcclSchedule, SimulatedReduceScatterGivesEachRankItsSummedPart) {
  for (const Case& c : cases()) {
    const std::size_t p = c.counts.size();
    const UnevenSchedule s = schedule_uneven(c.counts, c.elem);
    const auto off = offsets_of(c.counts);
    // Rank k sends values k + 1 + i/1000 (exact in double), so the sums are known.
    std::vector<std::vector<double>> send(p, std::vector<double>(s.total));
    for (std::size_t k = 0; k < p; ++k)
      for (std::size_t i = 0; i < s.total; ++i) send[k][i] = static_cast<double>(k + 1) + static_cast<double>(i % 1000);
    Ring ring{std::vector<std::vector<double>>(p), std::vector<std::size_t>(p, 0)};
    std::vector<std::vector<double>> result(p);
    if (s.method == UnevenMethod::Grouped) {
      // One reduce per root: every other rank's part for that root reaches it.
      for (std::size_t root = 0; root < p; ++root) {
        result[root].assign(c.counts[root], 0.0);
        for (std::size_t src = 0; src < p; ++src)
          for (std::size_t i = 0; i < c.counts[root]; ++i) result[root][i] += send[src][off[root] + i];
        // A ring reduce moves (p-1)·c: counted as one part received by each rank but the root.
        for (std::size_t k = 0; k < p; ++k)
          if (k != root) ring.received[k] += c.counts[root];
      }
    } else {
      for (std::size_t k = 0; k < p; ++k) {
        ring.buf[k].assign(p * s.max_count, 0.0);
        for (std::size_t r = 0; r < p; ++r)
          std::copy_n(send[k].begin() + static_cast<std::ptrdiff_t>(off[r]), c.counts[r],
                      ring.buf[k].begin() + static_cast<std::ptrdiff_t>(r * s.max_count));
      }
      if (p > 1) ring_reduce_scatter(ring, s.max_count);
      for (std::size_t k = 0; k < p; ++k)
        result[k].assign(ring.buf[k].begin() + static_cast<std::ptrdiff_t>(k * s.max_count),
                         ring.buf[k].begin() + static_cast<std::ptrdiff_t>(k * s.max_count + c.counts[k]));
    }
    double sum = 0;
    for (std::size_t k = 0; k < p; ++k) {
      ASSERT_EQ(result[k].size(), c.counts[k]);
      for (std::size_t i = 0; i < c.counts[k]; ++i) {
        const double v = static_cast<double>((off[k] + i) % 1000);
        ASSERT_EQ(result[k][i], static_cast<double>(p * (p + 1) / 2) + static_cast<double>(p) * v);
      }
      const double b = s.rank_bytes(c.counts, static_cast<int>(k), c.elem);
      EXPECT_EQ(b, static_cast<double>(ring.received[k] * c.elem));
      sum += b;
    }
    EXPECT_EQ(sum, s.method == UnevenMethod::Grouped ? static_cast<double>((p - 1) * s.total * c.elem)
                                                     : static_cast<double>(p * (p - 1) * s.max_count * c.elem));
  }
}

TEST(NcclSchedule, RingAllReduceBytes) {
  EXPECT_EQ(ring_all_reduce_bytes(1, 100, 4), 0.0);
  EXPECT_EQ(ring_all_reduce_bytes(4, 100, 4), 600.0);
  EXPECT_EQ(ring_all_reduce_bytes(2, 3, 8), 24.0);
}

ProblemSize problem(index_t n, std::vector<index_t> dims, Transport t) {
  ProblemSize p;
  p.num_nodes = n;
  p.nnz = 5 * n;
  test::set_dims(p, dims);
  p.transport = t;
  return p;
}

// Where every block splits evenly the NCCL model is the MPI model; elsewhere it is at least
// as large, by exactly the padding the padded gathers move.
TEST(NcclSchedule, ModelUnderNcclEqualsMpiWhereBlocksAreEven) {
  for (GridShape g : {GridShape{2, 2, 2}, GridShape{4, 1, 2}, GridShape{1, 8, 1}}) {
    for (bool first : {true, false}) {
      const AxisBytes mpi = predict_epoch(problem(64, {32, 16, 8}, Transport::Mpi), g, first);
      const AxisBytes nccl = predict_epoch(problem(64, {32, 16, 8}, Transport::Nccl), g, first);
      for (int a = 0; a < 3; ++a) EXPECT_EQ(mpi.bytes[a], nccl.bytes[a]) << g.str();
    }
  }
  for (GridShape g : {GridShape{1, 1, 3}, GridShape{2, 3, 1}, GridShape{3, 3, 1}}) {
    const AxisBytes mpi = predict_epoch(problem(2708, {1433, 16, 7}, Transport::Mpi), g, false);
    const AxisBytes nccl = predict_epoch(problem(2708, {1433, 16, 7}, Transport::Nccl), g, false);
    for (int a = 0; a < 3; ++a) EXPECT_GE(nccl.bytes[a], mpi.bytes[a]) << g.str();
    EXPECT_GT(nccl.total(), mpi.total()) << g.str();  // 2708, 1433 and 7 do not split evenly
  }
  EXPECT_EQ(parse_transport("nccl"), Transport::Nccl);
  EXPECT_STREQ(transport_name(Transport::Mpi), "mpi");
}

}  // namespace
}  // namespace plexus
