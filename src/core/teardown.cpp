// mark_unsafe_teardown / teardown_is_unsafe (include/plexus/error.hpp).
#include <atomic>

#include "plexus/error.hpp"

namespace plexus {

namespace {
std::atomic<bool> g_unsafe_teardown{false};
}

void mark_unsafe_teardown() noexcept { g_unsafe_teardown = true; }
bool teardown_is_unsafe() noexcept { return g_unsafe_teardown; }

}  // namespace plexus
