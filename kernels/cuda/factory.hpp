#pragma once
// The CUDA backend's factory, in plain C++ (no CUDA headers): defined in cuda_backend.cu,
// handed to the CPU library by plexus::cuda::enable() (src/cuda/enable.cpp), which programs
// reach through plexus::make_cuda_backend and plexus::cuda_device_count.
#include <memory>

namespace plexus {
class Backend;
}  // namespace plexus

namespace plexus::cuda {

// Throws std::runtime_error when no GPU is visible or `device` does not exist.
std::unique_ptr<Backend> make_backend(int device);
// Devices visible to this process; 0 when the driver or runtime cannot be used.
int device_count();

}  // namespace plexus::cuda
