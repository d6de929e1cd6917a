#pragma once
// Reading one rank's rows of a format v1 file (private to io/): the row slices, their edges in
// stripes, 2-D feature blocks, labels and masks, each checked as it is read. Under MPI-IO every
// read is collective, so every rank makes the same sequence of calls (ranks with nothing to read
// join with an empty selection). Used by load_shards_h5 and read_graph_slice_h5. The ranks are
// those of a Communicator; the file is opened through MPI-IO on its mpi_comm() (none with one
// rank, or on a recording communicator, whose reads are then this process's alone).
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "io/format_v1/prepared.hpp"
#include "io/hdf5/reader.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "plexus/progress.hpp"
#include "plexus/shard.hpp"

namespace plexus::h5 {

// Edges per read: bounds a stripe's memory (2^20 edges, ~16 MB). PLEXUS_READ_EDGES overrides
// it (a positive integer): smaller stripes for a rank short of memory, and for the tests, which
// read their small graphs in many stripes so that the joining of stripes is exercised.
inline index_t edge_chunk() {
  const char* env = std::getenv("PLEXUS_READ_EDGES");
  if (env == nullptr) return index_t{1} << 20;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(env, &end, 10);
  if (*env == '\0' || *end != '\0' || errno != 0 || v < 1)
    throw InputError("PLEXUS_READ_EDGES", "must be a positive integer (edges per read), got '" + std::string(env) + "'");
  return static_cast<index_t>(v);
}
// Feature values per read, counted over the full width: HDF5 decompresses whole chunks, and
// under MPI-IO collective filtered reads it holds every chunk of a read at once, so a rank
// reading a column block would otherwise hold all its rows at full width (~16 MB a stripe).
constexpr index_t kFeatureStripe = index_t{1} << 22;

class ShardReader {
  using Slab = Reader::Slab;


 public:
  ShardReader(const Reader& r, const h5::Header& h, Communicator& comm) : r_(r), h_(h), comm_(comm) {}
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }

  // indptr[rows.begin ..= rows.end], checked: within [0, nnz], non-decreasing, starting at 0
  // and ending at nnz where the slice touches the ends.
  std::vector<index_t> indptr(const CsrDatasets& c, Range rows) const {
    const auto n = static_cast<hsize_t>(rows.size() + 1);
    const std::string& name = c.indptr.name;
    std::vector<index_t> p = r_.read_ints<index_t>(c.indptr, n, Slab{{static_cast<hsize_t>(rows.begin)}, {n}});
    for (index_t k = 0; k <= rows.size(); ++k) {
      const index_t at = rows.begin + k;
      if (p[k] < 0 || p[k] > c.nnz)
        r_.fail(name, "entry indptr[" + std::to_string(at) + "] = " + std::to_string(p[k]) + " outside [0, nnz = " +
                          std::to_string(c.nnz) + "]");
      if (k > 0 && p[k] < p[k - 1])
        r_.fail(name, "not monotone: indptr[" + std::to_string(at) + "] = " + std::to_string(p[k]) + " < indptr[" +
                          std::to_string(at - 1) + "] = " + std::to_string(p[k - 1]));
    }
    if (rows.begin == 0 && p.front() != 0) r_.fail(name, "must start at 0, got " + std::to_string(p.front()));
    if (rows.end == h_.num_nodes && p.back() != c.nnz)
      r_.fail(name, "last entry " + std::to_string(p.back()) + " != number of edges (length of " + c.indices.name +
                        ") " + std::to_string(c.nnz));
    return p;
  }

  // Streams rows [rows) of `c` in chunks of at most edge_chunk() edges (a row is never split)
  // and calls visit(first row, row count, indptr from 0, column ids, values or nullptr).
  // Every rank makes the same number of read calls.
  template <class Visit>
  void stream_rows(const CsrDatasets& c, Range rows, const std::vector<index_t>& ip, Visit&& visit) const {
    std::vector<Range> chunks;
    const index_t chunk_edges = edge_chunk();
    for (index_t a = rows.begin; a < rows.end;) {
      index_t b = a + 1;
      while (b < rows.end && ip[b + 1 - rows.begin] - ip[a - rows.begin] <= chunk_edges) ++b;
      chunks.push_back({a, b});
      a = b;
    }
    const std::int64_t calls = max_over_ranks(static_cast<std::int64_t>(chunks.size()));
    for (std::int64_t call = 0; call < calls; ++call) {
      const Range ch = call < static_cast<std::int64_t>(chunks.size()) ? chunks[call] : Range{rows.end, rows.end};
      const index_t e0 = ip[ch.begin - rows.begin], e1 = ip[ch.end - rows.begin];
      const Slab slab{{static_cast<hsize_t>(e0)}, {static_cast<hsize_t>(e1 - e0)}};
      const auto m = static_cast<std::size_t>(e1 - e0);
      std::vector<index_t> idx = r_.read_ints<index_t>(c.indices, m, slab);
      std::vector<float> val;
      if (c.has_values) {
        val = r_.read_floats(c.values, m, slab);
        for (std::size_t k = 0; k < m; ++k)
          if (!std::isfinite(val[k])) r_.fail(c.values.name, "non-finite value at position " + std::to_string(e0 + static_cast<index_t>(k)));
      }
      advance(m * (c.has_values ? 8 : 4));
      if (ch.size() == 0) continue;
      std::vector<index_t> local_ip(ip.begin() + (ch.begin - rows.begin), ip.begin() + (ch.end - rows.begin) + 1);
      for (index_t& x : local_ip) x -= e0;
      try {
        visit(ch.begin, ch.size(), local_ip, idx, c.has_values ? val.data() : nullptr);
      } catch (const std::invalid_argument& e) {
        r_.fail(c.indices.name, std::string(e.what()) + " in rows [" + std::to_string(ch.begin) + ", " +
                                    std::to_string(ch.end) + ")");
      }
    }
  }

  // Rows [rows) × columns [cols) of the 2-D float dataset `d` (`width` columns), read in row
  // stripes of about kFeatureStripe full-width values; every rank makes the same calls.
  std::vector<float> float_block(const Reader::Dataset& d, index_t width, Range rows, Range cols) const {
    std::vector<float> out = r_.allocate<float>(d.name, static_cast<std::size_t>(rows.size() * cols.size()));
    const index_t stripe = std::max<index_t>(1, kFeatureStripe / std::max<index_t>(width, 1));
    const std::int64_t calls = max_over_ranks((rows.size() + stripe - 1) / stripe);
    for (std::int64_t call = 0; call < calls; ++call) {
      const index_t r0 = std::min(rows.end, rows.begin + call * stripe), r1 = std::min(rows.end, r0 + stripe);
      const index_t n = cols.size() > 0 ? r1 - r0 : 0;
      r_.read_floats_into(d, out.data() + (r0 - rows.begin) * cols.size(),
                          Slab{{static_cast<hsize_t>(r0), static_cast<hsize_t>(cols.begin)},
                               {static_cast<hsize_t>(n), static_cast<hsize_t>(cols.size())}});
      advance(static_cast<std::uint64_t>(n * cols.size()) * 4);
    }
    return out;
  }

  // Progress (plexus/progress.hpp) in bytes read: `expect` adds to the total, each read adds
  // what it brought. Totals of the Â blocks are estimated (nnz in proportion to the rows).
  void expect(double bytes) { total_ += static_cast<std::uint64_t>(std::max(0.0, bytes)); }
  void advance(std::uint64_t bytes) const {
    done_ = std::min(done_ + bytes, total_);
    report_progress(done_, total_);
  }
  void finished() const { advance(total_); }

  std::int64_t max_over_ranks(std::int64_t v) const {
    comm_.all_reduce(&v, 1, ReduceOp::Max);
    return v;
  }
  template <std::size_t N>
  void sum_over_ranks(std::array<index_t, N>& v) const {
    comm_.all_reduce(v.data(), N, ReduceOp::Sum);
  }
  // Sums modulo 2^64 (order-independent hashes of node records): two's complement sums of the
  // same bits.
  template <std::size_t N>
  void sum_over_ranks(std::array<std::uint64_t, N>& v) const {
    std::array<std::int64_t, N> bits;
    std::memcpy(bits.data(), v.data(), sizeof bits);
    comm_.all_reduce(bits.data(), N, ReduceOp::Sum);
    std::memcpy(v.data(), bits.data(), sizeof bits);
  }
  // The concatenation of every rank's `part` (its block_range of the `total` values, rank order).
  std::vector<double> all_gather(const std::vector<double>& part, index_t total) const {
    std::vector<std::size_t> bytes;
    for (int p = 0; p < size(); ++p) bytes.push_back(static_cast<std::size_t>(block_range(total, size(), p).size()) * sizeof(double));
    std::vector<double> all(static_cast<std::size_t>(total));
    comm_.all_gather_bytes(part.data(), all.data(), bytes);
    return all;
  }

  // Labels of nodes [rows), each checked to be in [-1, num_classes).
  std::vector<std::int32_t> labels(const Reader::Dataset& d, Range rows) const {
    const auto n = static_cast<hsize_t>(rows.size());
    std::vector<std::int32_t> y = r_.read_ints<std::int32_t>(d, n, Slab{{static_cast<hsize_t>(rows.begin)}, {n}});
    for (std::size_t k = 0; k < y.size(); ++k)
      if (y[k] < -1 || y[k] >= h_.num_classes)
        r_.fail(d.name, "label " + std::to_string(y[k]) + " at node " + std::to_string(rows.begin + static_cast<index_t>(k)) +
                            " out of range [-1, num_classes = " + std::to_string(h_.num_classes) + ")");
    return y;
  }

  std::vector<std::uint8_t> mask(const Reader::Dataset& d, Range rows) const {
    const auto n = static_cast<hsize_t>(rows.size());
    std::vector<std::uint8_t> m = r_.read_ints<std::uint8_t>(d, n, Slab{{static_cast<hsize_t>(rows.begin)}, {n}});
    for (std::size_t k = 0; k < m.size(); ++k)
      if (m[k] > 1)
        r_.fail(d.name, "value " + std::to_string(m[k]) + " at node " + std::to_string(rows.begin + static_cast<index_t>(k)) +
                            ", expected 0 or 1");
    return m;
  }

 private:
  const Reader& r_;
  const h5::Header& h_;
  Communicator& comm_;
  std::uint64_t total_ = 0;
  mutable std::uint64_t done_ = 0;
};

}  // namespace plexus::h5
