#pragma once
// MatrixMarket coordinate files (private to io/convert): the header and size line, and one
// entry line, parsed alike by read_matrix_market and read_matrix_market_on_ranks.
#include <cstdint>
#include <string_view>
#include <vector>

#include "io/convert/graph_build.hpp"
#include "io/convert/text_reader.hpp"
#include "plexus/convert.hpp"

namespace plexus::mtx {

struct Header {
  std::int64_t rows = 0, nnz = 0;  // square: rows x rows, nnz entries announced
  bool weighted = false;           // field real, double or integer (not pattern)
  bool integer = false;            // field integer: whole-number values
  bool symmetric = false;          // one triangle stored, mirrored on reading
};

// The header line and the size line (comments between skipped); `in` is left after the size line.
Header read_header(text::TextReader& in, const EdgeListOptions& opt);

// One entry line "i j [v]" (1-based), checked against the header: ids 0-based, order 0.
build::Edge parse_entry(const text::TextReader& in, std::string_view line, const Header& h,
                        std::vector<std::string_view>& fields);

}  // namespace plexus::mtx
