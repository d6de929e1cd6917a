// bf16 graph tensors (--precision bf16, docs/precision.md) on one rank: the row chunks a layer
// reads its input in (converted from bf16, dropout drawn as input_dropout draws it), Linear3D's
// chunked forward and backward against float64 references, the GCN trained in bf16 against
// fp32 (close, deterministic, the features' memory halved), bf16 /features in a format-v1 file;
// every kind in bf16 (tests/test_bf16_kinds.cpp).
#include <gtest/gtest.h>

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "io/hdf5/reader.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "pmm/bf16_tensors.hpp"
#include "pmm/layer_tensors.hpp"
#include "pmm/linear_3d.hpp"
#include "scratch_dir.hpp"
#include "core/shard_layout.hpp"

namespace plexus {
namespace {

float wave(index_t k) { return std::sin(0.37f * static_cast<float>(k)) * 3.0f + 0.01f * static_cast<float>(k % 7); }

std::vector<float> values(index_t n, index_t offset = 0) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (index_t k = 0; k < n; ++k) v[static_cast<std::size_t>(k)] = wave(k + offset);
  return v;
}

float rounded(float x) { return bf16_to_float(float_to_bf16(x)); }

LayerGeometry geometry(index_t rows, index_t cols) {
  LayerGeometry g;
  g.in_rows = {5, 5 + rows};  // global rows and columns that do not start at 0: the dropout's key
  g.in_cols = {3, 3 + cols};
  return g;
}

TEST(Bf16Tensors, RowChunksAreTheInputWithItsDropout) {
  auto be = make_cpu_backend(1);
  const index_t rows = 13, cols = 6;
  const LayerGeometry geo = geometry(rows, cols);
  const DropoutSpec drop{0.4f, DropoutKey{7, 2, 1}, true};
  const std::vector<float> x = values(rows * cols);
  std::vector<float> xr(x.size());
  std::transform(x.begin(), x.end(), xr.begin(), rounded);

  // What input_dropout gives for the bf16-rounded input, whole.
  Matrix whole(*be, rows, cols, Matrix::PaddedRows{}), scratch(*be, rows, cols, Matrix::PaddedRows{});
  whole.upload(xr);
  const ConstMatrixView dropped = input_dropout(*be, whole, drop, geo, scratch);
  std::vector<float> want(x.size());
  for (index_t r = 0; r < rows; ++r)
    for (index_t c = 0; c < cols; ++c) want[static_cast<std::size_t>(r * cols + c)] = dropped.row(r)[c];
  int zeros = 0;  // (13 × 6 values, p = 0.4)
  for (float v : want) zeros += v == 0.0f;
  EXPECT_GT(zeros, 10) << "the dropout drops";

  Bf16Matrix h16(*be, rows, cols);
  h16.upload(x);
  for (const RowSource& src : {row_source(h16, drop, geo), row_source(whole, drop, geo)}) {
    Matrix chunk(*be, 4, cols);
    for (index_t r0 = 0; r0 < rows; r0 += 4) {
      const index_t r1 = std::min(rows, r0 + 4);
      src.fill(*be, r0, r1, MatrixView{chunk.data(), r1 - r0, cols, cols});
      const std::vector<float> got = chunk.to_host();
      for (index_t k = 0; k < (r1 - r0) * cols; ++k)
        EXPECT_EQ(got[static_cast<std::size_t>(k)], want[static_cast<std::size_t>(r0 * cols + k)])
            << (src.b16 ? "bf16" : "fp32 padded") << " row " << r0 + k / cols;
    }
  }
  // Without dropout, the values themselves.
  const RowSource plain = row_source(h16, DropoutSpec{}, geo);
  Matrix all(*be, rows, cols);
  plain.fill(*be, 0, rows, all.view());
  EXPECT_EQ(all.to_host(), xr);
  EXPECT_THROW(plain.fill(*be, 0, rows + 1, all.view()), std::invalid_argument);
}

TEST(Bf16Tensors, ChunkRowsKeepTheWorkspaceNearOneMebibyte) {
  EXPECT_EQ(chunk_rows(10, 1433), 2);  // an eighth of the rows, rounded up
  EXPECT_EQ(chunk_rows(2708, 1433), (index_t{1} << 18) / 1433);  // 1 MiB of Cora's rows
  EXPECT_EQ(chunk_rows(100000, index_t{1} << 20), 1);
  EXPECT_EQ(chunk_rows(0, 5), 1);
  EXPECT_EQ(chunk_rows(3, 5), 1);
}

// Linear3D on one rank with X read in chunks of a bf16 input (65536 columns: chunks of 2 rows,
// so 11 rows are 6 chunks): Y = X·W, dW = Xᵀ·dY and dX = dY·Wᵀ as a float64 product of the
// rounded X gives them.
TEST(Bf16Tensors, LinearOverRowChunksIsTheWholeProduct) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const index_t rows = 11, in = index_t{1} << 16, out = 3;
  ASSERT_EQ(chunk_rows(rows, in), 2);
  const LayerGeometry geo = geometry(rows, in);
  const std::vector<float> x = values(rows * in), w = values(in * out, 17), dy = values(rows * out, 5);
  Bf16Matrix x16(*be, rows, in);
  x16.upload(x);
  for (const bool drop : {false, true}) {
    const DropoutSpec spec = drop ? DropoutSpec{0.5f, DropoutKey{3, 1, 0}, true} : DropoutSpec{};
    const RowSource src = row_source(x16, spec, geo);
    // The input as the layer sees it: rounded, then dropped out.
    Matrix xin(*be, rows, in);
    src.fill(*be, 0, rows, xin.view());
    const std::vector<float> xh = xin.to_host();

    Linear3D lin(*be, *grid, Linear3DLayout{Axis::Z, Axis::Y, Axis::X, rows, {0, in}, {0, out}},
                 Linear3DOptions{.bias = false, .sums = Wire::Bf16});
    lin.weight().upload(w);
    const std::vector<float> y = lin.forward(src).to_host();
    Matrix d_y(*be, rows, out);
    d_y.upload(dy);
    const std::vector<float> dx = lin.backward(src, plain_rows(d_y.view()), true).to_host();
    std::vector<float> dw(static_cast<std::size_t>(in * out));
    be->copy_to_host(dw.data(), lin.weight().grad(), dw.size() * sizeof(float));
    double y_err = 0, y_ref = 0, w_err = 0, w_ref = 0, x_err = 0, x_ref = 0;
    for (index_t r = 0; r < rows; ++r)
      for (index_t j = 0; j < out; ++j) {
        double s = 0;
        for (index_t k = 0; k < in; ++k) s += static_cast<double>(xh[r * in + k]) * w[k * out + j];
        y_err = std::max(y_err, std::abs(s - y[r * out + j]));
        y_ref = std::max(y_ref, std::abs(s));
      }
    for (index_t k = 0; k < in; ++k)
      for (index_t j = 0; j < out; ++j) {
        double s = 0;
        for (index_t r = 0; r < rows; ++r) s += static_cast<double>(xh[r * in + k]) * dy[r * out + j];
        w_err = std::max(w_err, std::abs(s - dw[k * out + j]));
        w_ref = std::max(w_ref, std::abs(s));
      }
    for (index_t r = 0; r < rows; ++r)
      for (index_t k = 0; k < in; k += 97) {
        double s = 0;
        for (index_t j = 0; j < out; ++j) s += static_cast<double>(dy[r * out + j]) * w[k * out + j];
        x_err = std::max(x_err, std::abs(s - dx[r * in + k]));
        x_ref = std::max(x_ref, std::abs(s));
      }
    EXPECT_LE(y_err, 1e-5 * y_ref) << "Y, dropout " << drop;
    EXPECT_LE(w_err, 1e-5 * w_ref) << "dW (the sum of the chunks' products), dropout " << drop;
    EXPECT_LE(x_err, 1e-5 * x_ref) << "dX, dropout " << drop;
  }
}

GraphData wide_graph() {
  SbmOptions o;
  o.nodes = 300;
  o.classes = 4;
  o.features = 400;  // the features dominate memory, as Cora's 1433 do
  o.avg_degree = 8;
  o.seed = 5;
  return generate_sbm(o);
}

struct TrainRun {
  std::vector<double> losses;
  std::size_t peak = 0;
};
TrainRun train(const GraphData& g, Precision precision, LayerOrder order = LayerOrder::Auto, int epochs = 30) {
  TrainConfig cfg;
  cfg.epochs = epochs;
  cfg.precision = precision;
  cfg.layer_order = order;
  cfg.seed = 4;
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GnnTrainer t(g, cfg, *be, *grid);
  TrainRun r;
  for (int e = 0; e < cfg.epochs; ++e) r.losses.push_back(t.epoch().loss);
  r.peak = be->peak_bytes();
  return r;
}

// bf16 on one rank: the same losses as fp32 to bf16's precision, bit for bit the same on a second
// run, learning, and at most 0.55× fp32's peak tensor memory on a graph whose features dominate.
TEST(Bf16Tensors, GcnInBf16FollowsFp32WithHalfTheMemory) {
  const GraphData g = wide_graph();
  for (const LayerOrder order : {LayerOrder::Auto, LayerOrder::AggregateFirst}) {
    const std::string name = layer_order_name(order);
    const TrainRun fp32 = train(g, Precision::FP32, order), half = train(g, Precision::BF16, order);
    const TrainRun again = train(g, Precision::BF16, order);
    EXPECT_EQ(half.losses, again.losses) << name << ": same seed, same losses bit for bit";
    EXPECT_NE(half.losses, fp32.losses) << name << ": bf16 rounds";
    for (std::size_t e = 0; e < fp32.losses.size(); ++e)
      EXPECT_NEAR(half.losses[e], fp32.losses[e], 2e-2 * fp32.losses[e]) << name << ": epoch " << e + 1;
    EXPECT_LT(half.losses.back(), 0.5 * half.losses.front()) << name << ": learns";
    std::printf("%s: peak tensor bytes bf16 %zu, fp32 %zu (%.3f)\n", name.c_str(), half.peak, fp32.peak,
                static_cast<double>(half.peak) / static_cast<double>(fp32.peak));
    if (order == LayerOrder::Auto)
      EXPECT_LE(static_cast<double>(half.peak), 0.55 * static_cast<double>(fp32.peak))
          << "peak tensor bytes: bf16 " << half.peak << ", fp32 " << fp32.peak;
    else
      EXPECT_LT(half.peak, fp32.peak) << name;
  }
}

// A graph whose hidden width is its feature width (64 and 64, 1200 nodes), so that the layers'
// outputs, the aggregations kept for backward and the gradients between layers weigh as much as
// the features: bf16 stores them too (docs/precision.md), and the peak is at most 0.55x fp32's
// in the orders that transform the wide input first (auto: layer 0 aggregates first, its input
// not narrower than its output, and layer 1 transforms first), with 2 and 3 layers. The losses
// follow fp32's and repeat bit for bit; --recompute has nothing to add in bf16 (the AGG kept is
// bf16, the transform-first input read again by rows): the same losses and memory.
TEST(Bf16Tensors, HiddenWideGcnKeepsActivationsAndGradientsInBf16) {
  SbmOptions o;
  o.nodes = 1200;
  o.classes = 4;
  o.features = 64;
  o.avg_degree = 8;
  o.seed = 6;
  const GraphData g = generate_sbm(o);
  struct Case {
    LayerOrder order;
    int layers;
  };
  for (const Case c : {Case{LayerOrder::Auto, 2}, Case{LayerOrder::TransformFirst, 2}, Case{LayerOrder::Auto, 3},
                       Case{LayerOrder::AggregateFirst, 3}}) {
    const std::string name = std::string(layer_order_name(c.order)) + ", " + std::to_string(c.layers) + " layers";
    const auto run = [&](Precision p, bool recompute) {
      TrainConfig cfg;
      cfg.epochs = 20;
      cfg.precision = p;
      cfg.layer_order = c.order;
      cfg.layers = c.layers;
      cfg.hidden = 64;
      cfg.recompute = recompute;
      cfg.seed = 4;
      auto be = make_cpu_backend(1);
      auto grid = ProcessGrid::single();
      GnnTrainer t(g, cfg, *be, *grid);
      TrainRun r;
      for (int e = 0; e < cfg.epochs; ++e) r.losses.push_back(t.epoch().loss);
      r.peak = be->peak_bytes();
      return r;
    };
    const TrainRun fp32 = run(Precision::FP32, false), half = run(Precision::BF16, false);
    EXPECT_EQ(run(Precision::BF16, false).losses, half.losses) << name << ": same seed, same losses bit for bit";
    for (std::size_t e = 0; e < fp32.losses.size(); ++e)
      EXPECT_NEAR(half.losses[e], fp32.losses[e], 2e-2 * fp32.losses[e]) << name << ": epoch " << e + 1;
    EXPECT_LT(half.losses.back(), 0.5 * half.losses.front()) << name << ": learns";
    const double ratio = static_cast<double>(half.peak) / static_cast<double>(fp32.peak);
    std::printf("%s: peak tensor bytes bf16 %zu, fp32 %zu (%.3f)\n", name.c_str(), half.peak, fp32.peak, ratio);
    EXPECT_LE(ratio, c.order == LayerOrder::AggregateFirst ? 0.65 : 0.55) << name;
    const TrainRun again = run(Precision::BF16, true);
    EXPECT_EQ(again.losses, half.losses) << name << ": --recompute, the same losses bit for bit";
    EXPECT_EQ(again.peak, half.peak) << name << ": --recompute";
  }
}

TEST(Bf16Tensors, EveryKindTakesBf16) {
  TrainConfig cfg;
  cfg.precision = Precision::BF16;
  for (const std::string k : {"gcn", "sage", "gin", "gat"}) {
    cfg.model = GnnSpec(k);
    EXPECT_NO_THROW(validate(cfg)) << k;
  }
}

// /features stored as bf16 (HDF5's float type of bf16's layout, h5::bf16_type()): read_graph_h5
// and the sharded reader give the rounded values exactly.
TEST(Bf16Tensors, FeaturesStoredAsBf16ReadAsTheirValues) {
  testing::ScratchDir dir;
  const std::string path = dir.file("g.h5");
  GraphData g = wide_graph();
  write_graph_h5(g, path);
  {  // /features rewritten as bf16 (what prepare --feature-precision bf16 writes)
    h5::silence_errors();
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Ldelete(f, h5::kFeatures, H5P_DEFAULT), 0);
    const hsize_t dims[2] = {static_cast<hsize_t>(g.num_nodes), static_cast<hsize_t>(g.num_features)};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t ds = H5Dcreate2(f, h5::kFeatures, h5::bf16_type(), space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const std::vector<bf16> v = h5::bf16_values(g.features);
    EXPECT_GE(H5Dwrite(ds, h5::native_type<bf16>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
    H5Dclose(ds);
    H5Sclose(space);
    H5Fclose(f);
  }
  std::vector<float> want(g.features.size());
  std::transform(g.features.begin(), g.features.end(), want.begin(), rounded);
  EXPECT_NE(want, g.features);
  const GraphData back = read_graph_h5(path);
  EXPECT_EQ(back.features, want);
  auto grid = ProcessGrid::single();
  const GnnShards s = load_shards_h5(path, *grid, 2, 16);
  EXPECT_EQ(s.features, want);
  // The command line takes it too (its probe of the file, inspect, train in both precisions).
  const std::string plexus = PLEXUS_BINARY;
  EXPECT_EQ(std::system((plexus + " inspect " + path + " >/dev/null").c_str()), 0);
  for (const char* p : {"fp32", "bf16"})
    EXPECT_EQ(std::system((plexus + " train --data " + path + " --epochs 2 --quiet --threads 1 --precision " + p +
                           " >/dev/null")
                              .c_str()),
              0)
        << p;
}

}  // namespace
}  // namespace plexus
