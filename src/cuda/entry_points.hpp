#pragma once
// The NCCL communicator's factory (src/cuda/nccl_communicator.cpp, built only with NCCL),
// handed to the CPU library by plexus::cuda::enable() (src/cuda/enable.cpp); programs reach it
// through plexus::make_nccl_communicator.
#include <memory>

namespace plexus {
class Backend;
class Communicator;
}  // namespace plexus

namespace plexus::cuda {

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, Backend& device);

}  // namespace plexus::cuda
