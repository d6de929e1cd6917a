#pragma once
// The pieces of reading a text graph a range of bytes at a time (private to io/convert): the
// converters on P ranks (text_on_ranks.cpp: a range a rank) and in passes (text_in_passes.cpp: a
// range a pass) parse, number and finish their rows with these.
#include <cstdint>
#include <string>
#include <vector>

#include "io/convert/graph_build.hpp"
#include "plexus/convert.hpp"
#include "plexus/prepare_distributed.hpp"

namespace plexus::text {

struct ParsedLines {
  std::vector<build::Edge> edges;  // ids as read (minus --base when --num-nodes is given)
  std::size_t columns = 0;         // of the range's first edge line (0: none)
  std::int64_t first_edge_line = 0;
};

// The lines starting in bytes [begin, end) of a file, the first of them numbered first_line.
struct LineRange {
  std::uint64_t begin = 0, end = 0;
  std::int64_t first_line = 1;
};

// Part `part` of `parts` of bytes [data_begin, size): its bounds (first_line left to the caller).
LineRange byte_range(std::uint64_t size, std::uint64_t data_begin, std::uint64_t part, std::uint64_t parts);

// The edge lines of a range, each checked (2 or 3 columns, like the range's first edge line).
ParsedLines parse_edge_lines(const std::string& path, const EdgeListOptions& opt, const LineRange& range);

// The rest of a converted slice as the one-process converters make it: synthetic features
// (of the rows' degrees), no labels, empty masks.
void finish_slice(GraphSlice& s, index_t n, bool directed, bool weighted, const EdgeListOptions& opt);

}  // namespace plexus::text
