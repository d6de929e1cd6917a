#pragma once
// Whose byte accounting a recording communicator follows, and so a plan: MPI (MpiCommunicator,
// the default) or NCCL (the device communicators, which pad or group uneven all-gathers and
// reduce-scatters: src/comm/nccl_schedule.hpp). All-reduces count the same under both.
#include <string>

namespace plexus {

enum class Transport { Mpi, Nccl };
const char* transport_name(Transport t);          // "mpi", "nccl"
Transport parse_transport(const std::string& s);  // throws InputError("parse_transport(s)", ...)

}  // namespace plexus
