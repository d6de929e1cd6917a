// Lists of node pairs and of nodes read from text (io/convert/node_pairs.cpp): `plexus predict
// --pairs` and `--nodes`. Comments and blank lines skipped, every separator the converters take,
// and a line of the wrong shape or a file without an entry one InputError naming the file (and
// the line).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "input_errors.hpp"
#include "scratch_dir.hpp"

namespace plexus {
namespace {

using test::input_error_message;

TEST(NodeLists, PairsAndNodesAreReadLineByLine) {
  testing::ScratchDir dir;
  const NodePairList p = read_node_pairs_text(dir.write("pairs.txt", "# u v\n0 1\n\n7,3\n% note\n-2\t9000000000\n"));
  EXPECT_EQ(p.u, (std::vector<std::int64_t>{0, 7, -2}));
  EXPECT_EQ(p.v, (std::vector<std::int64_t>{1, 3, 9000000000}));
  const std::vector<std::int64_t> n = read_node_list_text(dir.write("nodes.txt", "# ids\n5\n\n5\n-1\n12345678901\n"));
  EXPECT_EQ(n, (std::vector<std::int64_t>{5, 5, -1, 12345678901}));  // as written: the model checks the ids
}

TEST(NodeLists, LinesOfTheWrongShapeAndEmptyFilesAreRefused) {
  testing::ScratchDir dir;
  const auto nodes = [&](const char* name, const char* text) {
    return input_error_message([&] { read_node_list_text(dir.write(name, text)); });
  };
  const auto pairs = [&](const char* name, const char* text) {
    return input_error_message([&] { read_node_pairs_text(dir.write(name, text)); });
  };
  EXPECT_NE(nodes("two.txt", "1\n2 3\n").find("two.txt:2: not one node id"), std::string::npos);
  EXPECT_NE(nodes("word.txt", "1\nx\n").find("word.txt:2"), std::string::npos);
  EXPECT_NE(nodes("none.txt", "# nothing\n\n").find("holds no node id"), std::string::npos);
  EXPECT_NE(pairs("one.txt", "1 2\n3\n").find("one.txt:2: not two node ids"), std::string::npos);
  EXPECT_NE(pairs("three.txt", "1 2 3\n").find("three.txt:1: not two node ids"), std::string::npos);
  EXPECT_NE(pairs("nopair.txt", "% x\n").find("holds no pair"), std::string::npos);
  EXPECT_NE(input_error_message([&] { read_node_list_text(dir.file("missing.txt")); }).find("missing.txt"), std::string::npos);
}

}  // namespace
}  // namespace plexus
