// What a prepared file claims about its orders, checked against what it holds (issue 45, §2):
// two_orders flipped after prepare, /prepared/a2 (or node_id_p) replaced by a link to its
// P2-order twin, Â2 replaced by a copy of Â1, a one-order file claiming two. Each is refused
// by the reader with one line naming what disagrees, instead of training Â2's layers on Â1
// (which changed 96 of 200 predictions). Files are edited with the HDF5 C API.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>

#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "plexus/process_grid.hpp"
#include "scratch_dir.hpp"

namespace plexus {
namespace {

using testing::ScratchDir;

GraphData graph() {
  SbmOptions o;
  o.nodes = 60;
  o.classes = 3;
  o.features = 4;
  o.avg_degree = 5;
  o.seed = 11;
  return generate_sbm(o);
}

// A prepared file: two orders (permute) or one (no balancing).
std::string prepared(ScratchDir& d, const std::string& name, Balance balance) {
  PrepareOptions o;
  o.balance = balance;
  o.seed = 3;
  const std::string path = d.file(name);
  write_prepared_h5(prepare_graph(graph(), o), path);
  return path;
}

void edit(const std::string& path, const std::function<void(hid_t)>& change) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  change(f);
  H5Fclose(f);
}

void set_two_orders(hid_t f, std::uint8_t v) {
  // (Through the group: libhdf5 1.10 cannot write an attribute opened by H5Aopen_by_name.)
  const hid_t g = H5Gopen2(f, "/prepared", H5P_DEFAULT);
  ASSERT_GE(g, 0);
  const hid_t a = H5Aopen(g, "two_orders", H5P_DEFAULT);
  ASSERT_GE(a, 0);
  EXPECT_GE(H5Awrite(a, H5T_NATIVE_UINT8, &v), 0);
  H5Aclose(a);
  H5Gclose(g);
}

void relink(hid_t f, const char* name, const char* to) {
  ASSERT_GE(H5Ldelete(f, name, H5P_DEFAULT), 0);
  ASSERT_GE(H5Lcreate_hard(f, to, f, name, H5P_DEFAULT, H5P_DEFAULT), 0);
}

std::string load_error(const std::string& path) {
  auto grid = ProcessGrid::single();
  try {
    (void)load_shards_h5(path, *grid, 2, 4);
  } catch (const InputError& e) {
    return e.message();
  }
  return "";
}

TEST(PreparedClaims, UntouchedFilesLoad) {
  ScratchDir d;
  EXPECT_EQ(load_error(prepared(d, "two.h5", Balance::kPermute)), "");
  EXPECT_EQ(load_error(prepared(d, "one.h5", Balance::kNone)), "");
}

TEST(PreparedClaims, TwoOrdersReadAsOneAreRefused) {
  ScratchDir d;
  const std::string path = prepared(d, "two.h5", Balance::kPermute);
  edit(path, [](hid_t f) { set_two_orders(f, 0); });
  EXPECT_EQ(load_error(path), path + ": /prepared: attribute two_orders is 0, but /prepared/a2 is not /prepared/a1: the "
                                     "file holds two orders (changed after plexus prepare? prepare it again)");
  EXPECT_THROW((void)read_prepared_info_h5(path), InputError);
}

TEST(PreparedClaims, ALinkInPlaceOfASecondOrderIsRefused) {
  ScratchDir d;
  const std::string a2 = prepared(d, "a2.h5", Balance::kPermute);
  edit(a2, [](hid_t f) { relink(f, "/prepared/a2", "/prepared/a1"); });
  EXPECT_EQ(load_error(a2), a2 + ": /prepared/a2: is /prepared/a1 (a link), but attribute two_orders is 1: the file "
                                 "claims two orders and holds one (changed after plexus prepare? prepare it again)");
  const std::string ids = prepared(d, "ids.h5", Balance::kPermute);
  edit(ids, [](hid_t f) { relink(f, "/prepared/node_id_p", "/prepared/node_id_p2"); });
  EXPECT_NE(load_error(ids).find("/prepared/node_id_p: is /prepared/node_id_p2 (a link)"), std::string::npos);
  // A one-order file that claims two.
  const std::string one = prepared(d, "one.h5", Balance::kNone);
  edit(one, [](hid_t f) { set_two_orders(f, 1); });
  EXPECT_NE(load_error(one).find("/prepared/a2: is /prepared/a1 (a link), but attribute two_orders is 1"),
            std::string::npos);
}

TEST(PreparedClaims, ACopyOfA1InPlaceOfA2IsRefused) {
  ScratchDir d;
  const std::string path = prepared(d, "copy.h5", Balance::kPermute);
  edit(path, [](hid_t f) {
    ASSERT_GE(H5Ldelete(f, "/prepared/a2", H5P_DEFAULT), 0);
    ASSERT_GE(H5Ocopy(f, "/prepared/a1", f, "/prepared/a2", H5P_DEFAULT, H5P_DEFAULT), 0);
  });
  EXPECT_EQ(load_error(path), path + ": /prepared: a1 and a2 disagree: some node's row holds another number of "
                                     "entries in each (the file was changed after plexus prepare; prepare it again "
                                     "from its source)");
}

}  // namespace
}  // namespace plexus
