// The transport's names (comm/transport.hpp).
#include "comm/transport.hpp"

#include "plexus/error.hpp"

namespace plexus {

const char* transport_name(Transport t) { return t == Transport::Nccl ? "nccl" : "mpi"; }

Transport parse_transport(const std::string& s) {
  if (s == "mpi") return Transport::Mpi;
  if (s == "nccl") return Transport::Nccl;
  throw InputError("parse_transport(s)", "expected mpi or nccl, got '" + s + "'");
}

}  // namespace plexus
