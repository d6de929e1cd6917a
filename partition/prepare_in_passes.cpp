// prepare_graph_in_passes: the prepare on P ranks done by one process in K passes, the entries
// travelling between passes through scratch files (include/plexus/prepare_passes.hpp). The row
// operations are the other prepares' own (partition/clean_rows.hpp, merge_rows /
// normalized_block of plexus/sparse.hpp, stratified_permutation), and the entries move with the
// distributed prepare's producer and row sort (partition/entry_moves.hpp), so every row comes
// out as the one-process prepare makes it.
#include "plexus/prepare_passes.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <utility>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>

#include "partition/bf16_features.hpp"
#include "partition/clean_rows.hpp"
#include "partition/edge_rows.hpp"
#include "partition/entry_moves.hpp"
#include "partition/slice_checks.hpp"
#include "partition/slice_parts.hpp"
#include "src/comm/rank_exchange.hpp"
#include "src/comm/spill_buckets.hpp"
#include "src/core/link_split_problem.hpp"
#include "plexus/balance.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/error.hpp"
#include "plexus/progress.hpp"
#include "plexus/sparse.hpp"

namespace plexus {

namespace {

using detail::Entry;
using comm::SpillBuckets;

constexpr const char* kWhere = "graph";  // what the errors name (as prepare_graph's do)

// Runs of rows tiling [0, n) in order (empty runs allowed): the pass holding each row.
using Runs = comm::RowOwners;

// Boundaries splitting positions [0, cost.size()) into `parts` runs (parts <= positions) of
// about equal summed cost. Every position costs more than 0 and every boundary's target is below
// the total, so the last run is never empty: the sink learns the end from the one run that
// reaches it (runs in the middle may be empty).
std::vector<index_t> split_by_cost(const std::vector<double>& cost, int parts) {
  const auto n = static_cast<index_t>(cost.size());
  const double total = std::accumulate(cost.begin(), cost.end(), 0.0);
  std::vector<index_t> starts(static_cast<std::size_t>(parts) + 1, n);
  starts[0] = 0;
  double sum = 0;
  index_t i = 0;
  for (int k = 1; k < parts; ++k) {
    const double target = total * k / parts;
    while (i < n && sum + cost[static_cast<std::size_t>(i)] <= target) sum += cost[static_cast<std::size_t>(i++)];
    starts[static_cast<std::size_t>(k)] = i;
  }
  return starts;
}

// One pass's input rows with their CSR checked (InputError naming the problem); their edge
// feature rows kept, and checked, only when asked (step E).
GraphSlice read_edges(const GraphRowSource& in, Range rows, bool edge_features = false) {
  GraphSlice s = in.read(rows, false);
  std::string why = s.rows.begin == rows.begin && s.rows.end == rows.end ? detail::check_slice_edges(s)
                                                                         : "GraphRowSource.read: returned other rows";
  if (why.empty() && edge_features) why = detail::check_slice_edge_features(s);
  if (!why.empty()) throw InputError(kWhere, why);
  if (!edge_features) s.edge_features = {};
  return s;
}

// A pass's rows cleaned as prepare_graph cleans them: deduped, and merged with the transposed
// entries spilled to this pass (symmetrize). `raw`, when given, sees the rows as read first.
GraphSlice clean_rows_of_pass(const GraphRowSource& in, const Runs& runs, int k, const SpillBuckets* transposed,
                              bool weighted, const std::function<void(const GraphSlice&)>& raw = {}) {
  const Range rows = runs.of(k);
  GraphSlice s = read_edges(in, rows);
  if (raw) raw(s);
  detail::dedupe_rows(rows.begin, s.indptr, s.indices, s.values);
  if (transposed != nullptr) {
    std::vector<Entry> got;
    got.reserve(static_cast<std::size_t>(transposed->count(k)));
    transposed->read(k, [&](const char* items, index_t count) { detail::append_entries(got, items, count); });
    detail::LocalCsr<index_t> t = detail::rows_of_entries<index_t>(got, rows, weighted);
    detail::merge_union(s.indptr, s.indices, s.values, t.indptr, t.indices, t.values);
  }
  return s;
}

// The pairs of a link split that are edges of rows [s.rows) of a graph (either direction), as
// (u, v): what validate_link_split asks of the whole graph, found a pass of rows at a time
// (normally none: a split's links are no edges of the graph message passing sees).
using EdgeSet = std::set<std::pair<std::int64_t, std::int64_t>>;
void note_split_edges(const LinkSplit& split, const GraphSlice& s, EdgeSet& found) {
  for (const NodePairList* l : {&split.val_pos, &split.val_neg, &split.test_pos, &split.test_neg})
    for (std::size_t k = 0; k < l->size(); ++k)
      for (const auto& [a, b] : {std::pair{l->u[k], l->v[k]}, std::pair{l->v[k], l->u[k]}})
        if (detail::slice_has_edge(s, a, b)) found.insert({a, b});
}

// Output pass j's rows of a renumbered CSR, from the entries spilled to it: global offsets from
// `base` (advanced past them), `total` entries in the whole CSR.
template <class Idx>
CsrSlice<Idx> csr_of_pass(const SpillBuckets& spilled, int j, Range rows, bool weighted, index_t& base, index_t total) {
  std::vector<Entry> got;
  got.reserve(static_cast<std::size_t>(spilled.count(j)));
  spilled.read(j, [&](const char* items, index_t count) { detail::append_entries(got, items, count); });
  detail::LocalCsr<Idx> local = detail::rows_of_entries<Idx>(got, rows, weighted);
  CsrSlice<Idx> s;
  s.indices = std::move(local.indices);
  s.values = std::move(local.values);
  s.indptr = std::move(local.indptr);
  for (index_t& x : s.indptr) x += base;
  base += s.size();
  s.total = total;
  return s;
}

index_t total_of(const SpillBuckets& s, int parts) {
  index_t t = 0;
  for (int j = 0; j < parts; ++j) t += s.count(j);
  return t;
}

// A node's row in flight: its new position, then its data (features, label, masks, node
// weight and id as present; with `labels_only`, the label and masks of the second order).
struct NodeItem {
  index_t features = 0;
  bool weights = false, ids = false, labels_only = false;
  std::size_t bytes() const {
    return labels_only ? 8 + 4 + 3 : 8 + 4 * static_cast<std::size_t>(features) + 4 + 3 + (weights ? 4 : 0) + (ids ? 8 : 0);
  }
  void pack(char* item, index_t pos, const GraphSlice& s, index_t u) const {
    const auto put = [&item](const void* p, std::size_t n) {
      std::memcpy(item, p, n);
      item += n;
    };
    put(&pos, 8);
    if (!labels_only) put(s.features.data() + u * features, 4 * static_cast<std::size_t>(features));
    put(&s.labels[static_cast<std::size_t>(u)], 4);
    put(&s.train_mask[static_cast<std::size_t>(u)], 1);
    put(&s.val_mask[static_cast<std::size_t>(u)], 1);
    put(&s.test_mask[static_cast<std::size_t>(u)], 1);
    if (!labels_only && weights) put(&s.node_weights[static_cast<std::size_t>(u)], 4);
    if (!labels_only && ids) put(&s.node_ids[static_cast<std::size_t>(u)], 8);
  }
  // Unpacks into row (pos − row0) of the piece's arrays (labels_only: its _p arrays).
  void unpack(const char* item, index_t row0, PreparedSlice& p) const {
    const auto get = [&item](void* q, std::size_t n) {
      std::memcpy(q, item, n);
      item += n;
    };
    index_t pos = 0;
    get(&pos, 8);
    const auto i = static_cast<std::size_t>(pos - row0);
    if (!labels_only) get(p.features.data() + i * static_cast<std::size_t>(features), 4 * static_cast<std::size_t>(features));
    get(&(labels_only ? p.labels_p : p.labels)[i], 4);
    get(&(labels_only ? p.train_p : p.train_mask)[i], 1);
    get(&(labels_only ? p.val_p : p.val_mask)[i], 1);
    get(&(labels_only ? p.test_p : p.test_mask)[i], 1);
    if (!labels_only && weights) get(&p.node_weights[i], 4);
    if (!labels_only && ids) get(&p.node_ids[i], 8);
  }
};

constexpr double kBytesPerEntry = 48;   // a pass's share of Â: cleaned rows, merged rows, Â's rows, arrivals
constexpr double kBytesPerNode = 40;    // orders P and P2, 1/sqrt(degree), row lengths
constexpr double kRoundBytes = 3 * 12.0 * (1 << 20);  // three spilled rounds (and their read-backs)

double entries_of(index_t n, index_t stored_edges, bool symmetrize) {
  return static_cast<double>(symmetrize ? 2 * stored_edges : stored_edges) + static_cast<double>(n);
}

}  // namespace

double passes_memory_bytes(index_t num_nodes, index_t stored_edges, index_t num_features, bool symmetrize, int passes,
                           index_t edge_features) {
  // Step E (edge features) holds a pass's input rows with theirs beside a column index and the
  // questions, then an output pass's rows with theirs: about 8·D_e + 64 bytes per entry.
  const double edge_rows = edge_features > 0 ? (8.0 * static_cast<double>(edge_features) + 64.0) *
                                                   entries_of(num_nodes, stored_edges, symmetrize)
                                             : 0.0;
  const double per_pass = kBytesPerEntry * entries_of(num_nodes, stored_edges, symmetrize) + edge_rows +
                          (4.0 * static_cast<double>(num_features) + 32.0) * static_cast<double>(num_nodes);
  return per_pass / std::max(1, passes) + kBytesPerNode * static_cast<double>(num_nodes) + kRoundBytes;
}

int passes_for_budget(index_t num_nodes, index_t stored_edges, index_t num_features, bool symmetrize,
                      std::uint64_t budget, index_t edge_features) {
  // memory(K) = base + variable / K, with base and variable those of passes_memory_bytes.
  const double base = kBytesPerNode * static_cast<double>(num_nodes) + kRoundBytes;
  const double variable = passes_memory_bytes(num_nodes, stored_edges, num_features, symmetrize, 1, edge_features) - base;
  const double room = static_cast<double>(budget) - base;
  if (room <= 0 || variable / room > static_cast<double>(std::max<index_t>(num_nodes, 1)))
    throw InputError("passes_for_budget(budget)",
                     "too small to prepare " + std::to_string(num_nodes) + " nodes in any number of passes: every pass "
                     "holds about " + std::to_string(static_cast<long long>(std::ceil(base / (1 << 20)))) +
                     " MiB (40 bytes a node and three 12 MiB rounds) plus its share of the rows");
  return static_cast<int>(std::max(1.0, std::ceil(variable / room)));
}

void prepare_graph_in_passes(const GraphRowSource& in, const PrepareOptions& opt, const PassOptions& po,
                             PreparedRowSink& out) {
  if (cuts_metis_parts(opt.balance))
    throw InputError("PrepareOptions.balance", std::string(balance_name(opt.balance)) +
                                  " partitions the whole graph in one process's memory: it cannot run in passes "
                                  "(drop PassOptions.scratch_dir and passes_for_budget(budget), or use PrepareOptions.balance permute)");
  if (!opt.clean) throw InputError("PrepareOptions.clean", "the prepare in passes always cleans");
  if (po.passes < 1) throw InputError("PassOptions.passes", "must be at least 1");
  if (po.round < 1) throw InputError("PassOptions.round", "must be at least 1");
  const GraphSlice h = in.header();
  const index_t n = h.num_nodes;
  if (n > std::numeric_limits<col_t>::max())
    throw InputError(kWhere, "num_nodes: more than 2^31-1 nodes are not supported yet");
  const int k_passes = static_cast<int>(std::clamp<index_t>(po.passes, 1, std::max<index_t>(n, 1)));
  const Runs in_runs([&] {
    std::vector<index_t> s = in.split(k_passes);
    bool ok = static_cast<int>(s.size()) == k_passes + 1 && s.front() == 0 && s.back() == n;
    for (std::size_t i = 1; ok && i < s.size(); ++i) ok = s[i - 1] <= s[i];
    if (!ok) throw InputError(kWhere, "GraphRowSource.split: the runs do not tile [0, num_nodes) in order");
    return s;
  }());
  const bool weighted = h.weighted;
  const bool has_weights = in.has_node_weights(), has_ids = in.has_node_ids();
  const index_t round = po.round;
  const std::uint64_t stages = 4 * static_cast<std::uint64_t>(k_passes);
  std::uint64_t stage = 0;

  // A. Every stored entry u→v (deduped) to the pass of row v.
  std::optional<SpillBuckets> transposed;
  if (opt.symmetrize) {
    transposed.emplace(po.scratch_dir, sizeof(Entry), k_passes);
    for (int k = 0; k < k_passes; ++k) {
      const Range rows = in_runs.of(k);
      GraphSlice s = read_edges(in, rows);
      detail::dedupe_rows(rows.begin, s.indptr, s.indices, s.values);
      transposed->add(static_cast<index_t>(s.indices.size()), round,
                      detail::entry_producer(rows.begin, s.indptr, s.indices, s.values, weighted,
                                             [](index_t u, index_t c, index_t& row, index_t& col) { row = c, col = u; },
                                             in_runs));
      report_progress(++stage, stages);
    }
  } else {
    stage += static_cast<std::uint64_t>(k_passes);
  }
  const SpillBuckets* t = transposed ? &*transposed : nullptr;

  // B. Degrees (every node's 1/sqrt(degree) in A + I) and cleaned row lengths, then the orders;
  // a link split's pairs that are edges of the input rows, and of the cleaned ones.
  std::vector<double> inv_sqrt_deg(static_cast<std::size_t>(n));
  std::vector<std::int32_t> length(static_cast<std::size_t>(n));  // < 2^31: the nodes are
  const std::optional<LinkSplit>& links = h.links;
  EdgeSet input_edges, cleaned_edges;
  for (int k = 0; k < k_passes; ++k) {
    const Range rows = in_runs.of(k);
    GraphSlice s = clean_rows_of_pass(in, in_runs, k, t, weighted, [&](const GraphSlice& raw) {
      if (links) note_split_edges(*links, raw, input_edges);
    });
    if (links) note_split_edges(*links, s, cleaned_edges);
    const MergedRows m = merge_rows(n, rows.begin, rows.size(), s.indptr.data(), s.indices.data(),
                                    weighted ? s.values.data() : nullptr);
    std::vector<double> part;
    try {
      part = inv_sqrt_degrees(m);
    } catch (const std::invalid_argument& e) {
      throw InputError(kWhere, std::string("/graph/values: ") + e.what());
    }
    std::copy(part.begin(), part.end(), inv_sqrt_deg.begin() + rows.begin);
    for (index_t u = 0; u < rows.size(); ++u)
      length[static_cast<std::size_t>(rows.begin + u)] = static_cast<std::int32_t>(s.indptr[u + 1] - s.indptr[u]);
    report_progress(++stage, stages);
  }
  std::vector<index_t> w;  // permute's weights: the nnz of each row in Â
  if (opt.balance == Balance::kPermute) {
    w.resize(static_cast<std::size_t>(n));
    for (index_t v = 0; v < n; ++v) w[v] = length[v] + 1;
  }
  const NodeOrder order = detail::slice_orders(opt, n, w);
  w = {};
  const bool two = order.row != order.col;
  const std::vector<index_t>& pr = order.row;
  const std::vector<index_t>& pc = order.col;
  // The split checked as prepare_graph checks it (against the input, then renumbered against the
  // cleaned graph), before any row is written.
  std::optional<LinkSplit> links_p2;
  if (links) {
    const auto known = [](const EdgeSet& e) {
      return [&e](std::int64_t u, std::int64_t v) { return e.count({u, v}) > 0; };
    };
    if (const std::string why = link_split_problem(*links, n, h.directed, known(input_edges)); !why.empty())
      throw InputError(kWhere, why);
    links_p2 = renumbered(*links, pc);
    EdgeSet cleaned_p2;
    for (const auto& [u, v] : cleaned_edges) cleaned_p2.insert({pc[static_cast<std::size_t>(u)], pc[static_cast<std::size_t>(v)]});
    if (const std::string why = link_split_problem(*links_p2, n, opt.symmetrize ? false : h.directed, known(cleaned_p2));
        !why.empty())
      throw InputError("the prepared graph", why);
  }

  // The output runs: about equal bytes of output rows (Â1 at P, Â2, the graph and node rows at P2).
  const Runs out_runs([&] {
    std::vector<double> cost(static_cast<std::size_t>(n), 0.0);
    for (index_t v = 0; v < n; ++v) {
      const double len = length[static_cast<std::size_t>(v)];
      cost[static_cast<std::size_t>(pr[v])] += 8 * (len + 1);
      cost[static_cast<std::size_t>(pc[v])] += (two ? 8 * (len + 1) : 0) + 12 * len + 4.0 * h.num_features + 32;
    }
    return split_by_cost(cost, k_passes);
  }());
  length = {};

  // C. Every entry of the graph, Â1 and Â2, and every node row, to the output pass of its row.
  const auto renumber = [](const std::vector<index_t>& rows, const std::vector<index_t>& cols) {
    return [&rows, &cols](index_t u, index_t c, index_t& row, index_t& col) { row = rows[u], col = cols[c]; };
  };
  SpillBuckets graph_out(po.scratch_dir, sizeof(Entry), k_passes), a1_out(po.scratch_dir, sizeof(Entry), k_passes);
  std::optional<SpillBuckets> a2_out, nodes_p_out;
  const NodeItem node{h.num_features, has_weights, has_ids, false}, node_p{h.num_features, false, false, true};
  SpillBuckets nodes_out(po.scratch_dir, node.bytes(), k_passes);
  if (two) {
    a2_out.emplace(po.scratch_dir, sizeof(Entry), k_passes);
    nodes_p_out.emplace(po.scratch_dir, node_p.bytes(), k_passes);
  }
  const index_t node_round = std::max<index_t>(1, round * static_cast<index_t>(sizeof(Entry)) / static_cast<index_t>(node.bytes()));
  for (int k = 0; k < k_passes; ++k) {
    const Range rows = in_runs.of(k);
    HostCsr a_hat;
    {
      GraphSlice s = clean_rows_of_pass(in, in_runs, k, t, weighted);
      {
        const MergedRows m = merge_rows(n, rows.begin, rows.size(), s.indptr.data(), s.indices.data(),
                                        weighted ? s.values.data() : nullptr);
        a_hat = normalized_block(m, inv_sqrt_deg, 0, n);
      }
      graph_out.add(static_cast<index_t>(s.indices.size()), round,
                    detail::entry_producer(rows.begin, s.indptr, s.indices, s.values, weighted, renumber(pc, pc), out_runs));
    }
    a1_out.add(a_hat.nnz(), round,
               detail::entry_producer(rows.begin, a_hat.indptr, a_hat.indices, a_hat.values, true, renumber(pr, pc), out_runs));
    if (two)
      a2_out->add(a_hat.nnz(), round,
                  detail::entry_producer(rows.begin, a_hat.indptr, a_hat.indices, a_hat.values, true, renumber(pc, pr), out_runs));
    a_hat = HostCsr{};
    GraphSlice s = in.read(rows, true);
    std::string why = s.rows.begin == rows.begin && s.rows.end == rows.end ? detail::check_slice_nodes(s)
                                                                           : "GraphRowSource.read: returned other rows";
    if (why.empty() && rows.size() > 0 && has_weights != !s.node_weights.empty())
      why = "GraphSlice.node_weights: expected one weight per row exactly when the graph has node weights";
    if (why.empty() && rows.size() > 0 && has_ids != !s.node_ids.empty())
      why = "GraphSlice.node_ids: expected one id per row exactly when the graph has node ids";
    if (!why.empty()) throw InputError(kWhere, why);
    if (opt.features_bf16)  // (before the first row is written: the sink takes rows in D)
      if (std::string bad = detail::bf16_feature_overflow(s.features, rows.begin, h.num_features); !bad.empty())
        throw InputError(kWhere, bad);
    const auto spill_nodes = [&](SpillBuckets& to, const NodeItem& layout, const std::vector<index_t>& order_of) {
      std::vector<char> item(layout.bytes());
      to.add(rows.size(), node_round, [&](index_t u0, index_t u1, auto&& emit) {
        for (index_t u = u0; u < u1; ++u) {
          const index_t pos = order_of[static_cast<std::size_t>(rows.begin + u)];
          layout.pack(item.data(), pos, s, u);
          emit(out_runs(pos), item.data());
        }
      });
    };
    spill_nodes(nodes_out, node, pc);
    if (two) spill_nodes(*nodes_p_out, node_p, pr);
    report_progress(++stage, stages);
  }
  transposed.reset();
  inv_sqrt_deg = {};

  // E. Edge features: each output entry takes its input edge's row (partition/edge_rows.hpp's
  // rule, as the other prepares), joined through the scratch files. The entries of each output
  // pass ask the input pass of their row's node u for u -> v; each input pass answers from its
  // rows or hands the question on, as v -> u, to the pass of v (an edge symmetrizing stored),
  // which answers in a second sweep; the answers go to the asking output pass (step D).
  const index_t ef = h.num_edge_features;
  const std::size_t answer_bytes = sizeof(std::int64_t) + static_cast<std::size_t>(ef) * sizeof(float);
  std::optional<SpillBuckets> answers;
  if (ef > 0) {
    struct Ask {
      std::int64_t pass, entry, a, b;  // output pass j's entry asks for the first row of a -> b
    };
    const std::vector<index_t> source_of = inverse_permutation(pc);
    const index_t total = total_of(graph_out, k_passes);
    SpillBuckets asks(po.scratch_dir, sizeof(Ask), k_passes), reversed(po.scratch_dir, sizeof(Ask), k_passes);
    answers.emplace(po.scratch_dir, answer_bytes, k_passes);
    index_t base = 0;
    for (int j = 0; j < k_passes; ++j) {
      const Range rows = out_runs.of(j);
      const CsrSlice<index_t> g = csr_of_pass<index_t>(graph_out, j, rows, weighted, base, total);
      std::vector<index_t> row_of(static_cast<std::size_t>(g.size()));
      for (index_t q = 0; q < rows.size(); ++q)
        for (index_t k = g.indptr[q] - g.begin(); k < g.indptr[q + 1] - g.begin(); ++k) row_of[k] = source_of[rows.begin + q];
      asks.add(g.size(), round, [&](index_t i0, index_t i1, auto&& emit) {
        for (index_t i = i0; i < i1; ++i) {
          const Ask q{j, i, row_of[i], source_of[g.indices[i]]};
          emit(in_runs(q.a), &q);
        }
      });
    }
    std::vector<char> answer(answer_bytes);
    for (const bool second : {false, true}) {
      const SpillBuckets& questions = second ? reversed : asks;
      for (int k = 0; k < k_passes; ++k) {
        if (questions.count(k) == 0) continue;
        const Range rows = in_runs.of(k);
        const GraphSlice raw = read_edges(in, rows, /*edge_features=*/true);
        const detail::EdgeRowIndex index(rows.begin, raw.indptr, raw.indices);
        std::vector<Ask> got;
        questions.read(k, [&](const char* items, index_t count) {
          const std::size_t at = got.size();
          got.resize(at + static_cast<std::size_t>(count));
          std::memcpy(got.data() + at, items, static_cast<std::size_t>(count) * sizeof(Ask));
        });
        std::vector<index_t> found(got.size());
        for (std::size_t i = 0; i < got.size(); ++i) found[i] = index.find(got[i].a, got[i].b);
        if (second && std::find(found.begin(), found.end(), index_t{-1}) != found.end())
          throw std::logic_error("prepare_graph_in_passes: an entry that is no edge of the input, either way");
        answers->add(static_cast<index_t>(got.size()), round, [&](index_t i0, index_t i1, auto&& emit) {
          for (index_t i = i0; i < i1; ++i) {
            if (found[i] < 0) continue;
            std::memcpy(answer.data(), &got[i].entry, sizeof(std::int64_t));
            std::memcpy(answer.data() + sizeof(std::int64_t), raw.edge_features.data() + found[i] * ef,
                        static_cast<std::size_t>(ef) * sizeof(float));
            emit(static_cast<int>(got[i].pass), answer.data());
          }
        });
        if (!second)
          reversed.add(static_cast<index_t>(got.size()), round, [&](index_t i0, index_t i1, auto&& emit) {
            for (index_t i = i0; i < i1; ++i) {
              if (found[i] >= 0) continue;
              const Ask q{got[i].pass, got[i].entry, got[i].b, got[i].a};
              emit(in_runs(q.a), &q);
            }
          });
      }
    }
  }

  // D. Each output pass: its rows of every dataset, to the sink in row order.
  const index_t graph_total = total_of(graph_out, k_passes), a1_total = total_of(a1_out, k_passes);
  const index_t a2_total = two ? total_of(*a2_out, k_passes) : 0;
  index_t graph_base = 0, a1_base = 0, a2_base = 0;
  AdjBlockCounts counts;
  counts.cuts = block_count_cuts(n);
  for (int j = 0; j < k_passes; ++j) {
    PreparedSlice p = detail::slice_header(opt, n, h.num_features, h.num_classes,
                                           opt.symmetrize ? false : h.directed, weighted, two);
    p.has_node_weights = has_weights;
    p.has_node_ids = has_ids;
    p.class_names = h.class_names;
    p.rows = out_runs.of(j);
    const Range rows = p.rows;
    const auto count = static_cast<std::size_t>(rows.size());
    p.graph = csr_of_pass<index_t>(graph_out, j, rows, weighted, graph_base, graph_total);
    if (ef > 0) {  // the answers of step E, by entry
      p.num_edge_features = ef;
      p.edge_features.assign(static_cast<std::size_t>(p.graph.size() * ef), 0.0f);
      if (answers->count(j) != p.graph.size())
        throw std::logic_error("prepare_graph_in_passes: an output entry without its edge feature row");
      answers->read(j, [&](const char* items, index_t arrivals) {
        for (index_t i = 0; i < arrivals; ++i) {
          std::int64_t entry = 0;
          std::memcpy(&entry, items + static_cast<std::size_t>(i) * answer_bytes, sizeof entry);
          std::memcpy(p.edge_features.data() + entry * ef, items + static_cast<std::size_t>(i) * answer_bytes + sizeof entry,
                      static_cast<std::size_t>(ef) * sizeof(float));
        }
      });
    }
    p.a1 = csr_of_pass<col_t>(a1_out, j, rows, true, a1_base, a1_total);
    if (two) p.a2 = csr_of_pass<col_t>(*a2_out, j, rows, true, a2_base, a2_total);
    p.features.resize(count * static_cast<std::size_t>(h.num_features));
    p.labels.resize(count);
    p.train_mask.resize(count);
    p.val_mask.resize(count);
    p.test_mask.resize(count);
    if (has_weights) p.node_weights.resize(count);
    if (has_ids) p.node_ids.resize(count);
    nodes_out.read(j, [&](const char* items, index_t arrivals) {
      for (index_t i = 0; i < arrivals; ++i) node.unpack(items + static_cast<std::size_t>(i) * node.bytes(), rows.begin, p);
    });
    if (two) {
      p.labels_p.resize(count);
      p.train_p.resize(count);
      p.val_p.resize(count);
      p.test_p.resize(count);
      nodes_p_out->read(j, [&](const char* items, index_t arrivals) {
        for (index_t i = 0; i < arrivals; ++i)
          node_p.unpack(items + static_cast<std::size_t>(i) * node_p.bytes(), rows.begin, p);
      });
    }
    detail::fill_node_positions(p, pr, pc);
    // The block counts: these rows of each order counted by tile, summed over the passes.
    std::array<std::vector<index_t>, 2> tiles, held;
    detail::count_slice_blocks(p, counts.cuts, tiles, held);
    const auto add = [](std::vector<index_t>& sum, const std::vector<index_t>& part) {
      if (sum.empty()) sum.assign(part.size(), 0);
      for (std::size_t i = 0; i < part.size(); ++i) sum[i] += part[i];
    };
    for (int o = 0; o < 2; ++o) {
      add(counts.tiles[o], tiles[o]);
      add(counts.held[o], held[o]);
    }
    if (j == k_passes - 1) {
      counts.sum_tiles();
      p.block_counts = counts;
    }
    if (j == 0) p.links = std::move(links_p2);  // (written with the first rows' metadata)
    out.write(p);
    report_progress(++stage, stages);
  }
  out.finish();
}

}  // namespace plexus
