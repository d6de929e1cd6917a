// What every communicator shares (plexus/comm.hpp).
#include "plexus/comm.hpp"

namespace plexus {

std::unique_ptr<Communicator::Request> Communicator::completed() {
  struct Done final : Request {
    void wait() override {}
    bool test() override { return true; }
  };
  return std::make_unique<Done>();
}

}  // namespace plexus
