#include "plexus/version.hpp"

namespace plexus {
const char* version() { return "0.1.0"; }
const char* compiled_backends() {
#ifdef PLEXUS_WITH_CUDA
  return "reference,cpu,cuda";
#else
  return "reference,cpu";
#endif
}
}  // namespace plexus
