// The size checks of include/plexus/sizes.hpp: checked products, the budget and its refusal.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>

#include <cstdint>
#include <fstream>
#include <limits>
#include <string>

#include "plexus/error.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/sizes.hpp"

namespace plexus {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

TEST(Sizes, CheckedMulNamesWhereOnOverflow) {
  EXPECT_EQ(checked_mul(3, 4, "--x", "x"), 12);
  EXPECT_EQ(checked_mul(kMax, 1, "--x", "x"), kMax);
  EXPECT_EQ(checked_mul(0, kMax, "--x", "x"), 0);
  try {
    checked_mul(kMax / 2 + 1, 2, "--hidden", "hidden x classes");
    FAIL() << "no overflow reported";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--hidden");
    EXPECT_NE(std::string(e.what()).find("hidden x classes"), std::string::npos);
  }
  EXPECT_THROW(checked_mul(-1, 2, "--x", "x"), InputError);
}

TEST(Sizes, CheckedProductAndLcm) {
  EXPECT_EQ(checked_product({2, 3, 7}, "--grid", "g"), 42);
  EXPECT_EQ(checked_product({}, "--grid", "g"), 1);
  EXPECT_THROW(checked_product({1 << 30, 1 << 30, 1 << 30}, "--grid", "g"), InputError);
  EXPECT_EQ(checked_lcm(4, 6, "--grid", "parts"), 12);
  EXPECT_THROW(checked_lcm(kMax, kMax - 1, "--grid", "parts"), InputError);
}

TEST(Sizes, HumanBytes) {
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(3.5 * 1024), "3.50 KiB");
  EXPECT_EQ(human_bytes(2.0 * 1024 * 1024 * 1024), "2.00 GiB");
  EXPECT_EQ(human_bytes(2.9 * 1024.0 * 1024 * 1024 * 1024), "2.90 TiB");
}

TEST(Sizes, AvailableMemoryIsReadOnLinux) {
  const std::uint64_t avail = available_memory_bytes();
  EXPECT_GT(avail, 0u);
  EXPECT_LT(avail, std::uint64_t{1} << 52);  // less than 4 PiB: read, not garbage
}

TEST(Sizes, AvailableMemoryRespectsTheAddressSpaceLimit) {
  // ulimit -v: past it every allocation fails, whatever the node has free. The limit is per
  // process, so it is not shared out among the ranks of a node as the node's memory is.
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &saved), 0);
  const std::uint64_t node = available_memory_bytes();
  std::ifstream status("/proc/self/status");
  std::string key;
  std::uint64_t vm_kib = 0;
  while (status >> key && key != "VmSize:") status.ignore(4096, '\n');
  ASSERT_TRUE(status >> vm_kib);
  const std::uint64_t room = std::uint64_t{1} << 28;  // 256 MiB
  rlimit lim = saved;
  lim.rlim_cur = vm_kib * 1024 + room;
  if (saved.rlim_max != RLIM_INFINITY && lim.rlim_cur > saved.rlim_max) GTEST_SKIP() << "hard address-space limit too low";
  ASSERT_EQ(setrlimit(RLIMIT_AS, &lim), 0);
  const std::uint64_t one = available_memory_bytes(1), four = available_memory_bytes(4);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &saved), 0);
  EXPECT_LE(one, room);
  EXPECT_GT(one, room / 2);  // what this test allocated in between is small
  // Four ranks share the node's memory, not the limit: still about `room` (a divided limit
  // would be a quarter of it), when the node has more than 2 GiB free.
  if (node > 8 * room) {
    EXPECT_LE(four, room);
    EXPECT_GT(four, room / 2);
  }
}

TEST(Sizes, RequireMemoryRefusesPastTheBudget) {
  set_memory_budget({1024, true});
  EXPECT_TRUE(fits_memory(1024));
  EXPECT_FALSE(fits_memory(1025));
  EXPECT_NO_THROW(require_memory(1000, "--hidden", "training"));
  try {
    require_memory(4096, "--hidden", "training", "model");
    FAIL() << "not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "MemoryBudget.bytes");  // the budget the option set is the one exceeded
    EXPECT_EQ(std::string(e.what()), "training needs 4.00 KiB (model) and does not fit: 1.00 KiB per rank");
  }
  set_memory_budget({1 << 20, false});
  try {
    require_memory(2 << 20, "data.h5", "the graph");
    FAIL() << "not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "data.h5");
    EXPECT_EQ(std::string(e.what()), "the graph needs 2.00 MiB and does not fit: 1.00 MiB available per rank");
  }
  set_memory_budget({0, false});  // unknown: nothing is refused
  EXPECT_NO_THROW(require_memory(1e30, "x", "y"));
}

TEST(Sizes, GridRankCountsAreBounded) {
  EXPECT_EQ(parse_grid("2x3x4").size(), 24);
  EXPECT_THROW(parse_grid("3x3x954437177"), InputError);  // wrapped to 1 rank in int
  EXPECT_THROW(parse_grid("2147483647x2147483647x2147483647"), InputError);
  EXPECT_EQ(grid_ranks(GridShape{2, 2, 2}, 4), 32);
  EXPECT_THROW(grid_ranks(GridShape{2, 1, 1}, 2147483647), InputError);
  EXPECT_THROW(grid_ranks(GridShape{1, 1, 1}, 0), InputError);
}

}  // namespace
}  // namespace plexus
