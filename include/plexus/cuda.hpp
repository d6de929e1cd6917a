#pragma once
// The CUDA backend, an optional part of the package. plexus::plexus is CPU-only: it links no
// CUDA library, so a program built against it alone starts on a node without CUDA. A program
// that wants GPUs asks for the component and links its target:
//
//   find_package(plexus REQUIRED COMPONENTS cuda)
//   target_link_libraries(app PRIVATE plexus::plexus plexus::cuda)
//
// and calls plexus::cuda::enable() once, before making backends. From then on
// make_cuda_backend, cuda_available and cuda_device_count (plexus/backend.hpp), and
// nccl_available and make_nccl_communicator (plexus/comm.hpp; ProcessGrid::use_nccl) reach the
// GPU code; without the call they behave as in a CPU-only program (no device, make_cuda_backend
// throws). The call is explicit because a static library's self-registering object is dropped
// by the linker when nothing references it.

namespace plexus::cuda {

// Connects the CUDA backend (and the NCCL communicators, when built with NCCL) to the CPU
// library. Idempotent and thread-safe; touches no GPU (a node without one still runs on CPU).
void enable() noexcept;

}  // namespace plexus::cuda
