#!/usr/bin/env bash
# The CMake package as a consumer sees it: installs BUILD_DIR (default build/) into a temporary
# prefix, configures examples/embed (a separate C++-only project) with nothing but
# CMAKE_PREFIX_PATH, builds it, and runs it on one process and under mpirun on 2 and 4 ranks.
# Exit status 0 when every step passed (the example itself checks its accuracy).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=$(mktemp -d "${TMPDIR:-/tmp}/plexus-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== install $build into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
echo "== configure and build examples/embed against it"
cmake -S examples/embed -B "$work/embed" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/embed" -j2 > "$work/build.log" || { cat "$work/build.log"; exit 1; }
echo "== run"
"$work/embed/embed"
mpirun --oversubscribe -np 2 "$work/embed/embed" 1x2x1
mpirun --oversubscribe -np 4 "$work/embed/embed" 2x1x2
echo "package check passed"
