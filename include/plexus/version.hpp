#pragma once
namespace plexus {
// "MAJOR.MINOR.PATCH" of this build, and the backends compiled in (e.g. "cpu,cuda").
const char* version();
const char* compiled_backends();
}  // namespace plexus
