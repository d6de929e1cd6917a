#pragma once
// Everything of plexus::plexus (the CPU library of the CMake package) that a program embedding
// the engine uses, in one include. Not included here: plexus/convert.hpp (the converters and
// generators, library plexus::tools) and plexus/cuda.hpp (the optional CUDA backend, library
// plexus::cuda from find_package(plexus COMPONENTS cuda)): include those where they are linked.

// Data: the in-memory graph, its HDF5 file format, preparation ahead of training.
#include "plexus/graph.hpp"
#include "plexus/graph_checks.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "plexus/balance.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/sparse.hpp"

// Where it runs: the grid of ranks and its communicators, the kernels' backends and buffers.
#include "plexus/process_grid.hpp"
#include "plexus/comm.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/tensor.hpp"
#include "plexus/shard.hpp"

// Training: GCN-family models and the GPT, whole runs or one epoch/step at a time.
#include "plexus/train.hpp"
#include "plexus/predictions.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/gnn_model.hpp"
#include "plexus/tables.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/stop_check.hpp"
#include "plexus/progress.hpp"

// Plans and measures: costs of a grid, kernel timings, checked sizes, random numbers.
#include "plexus/launch.hpp"
#include "plexus/profiling.hpp"
#include "plexus/sizes.hpp"
#include "plexus/rng.hpp"

// Errors and the build.
#include "plexus/error.hpp"
#include "plexus/version.hpp"
