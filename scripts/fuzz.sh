#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in build-fuzz/ with clang + AddressSanitizer and runs
# each for SECONDS (default 30), starting from the seed corpora in fuzz/corpus/<target>/ (a
# working copy grows in build-fuzz/corpus/). Prints executions and crashes per target; exits
# non-zero when any target found a crash (the reproducer is left in build-fuzz/artifacts/).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     (targets: edge_list hdf5; default both)
set -uo pipefail
secs=${1:-30}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(edge_list hdf5)
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PLEXUS_FUZZ_BUILD:-$root/build-fuzz}

mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer" \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer" \
  -DPLEXUS_CUDA=OFF -DPLEXUS_NATIVE=OFF -DPLEXUS_BUILD_TESTS=OFF -DPLEXUS_FUZZ=ON >"$build/fuzz-cmake.log" 2>&1 \
  || { echo "fuzz: cmake failed (see $build/fuzz-cmake.log)"; exit 2; }
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >"$build/fuzz-build.log" 2>&1 \
  || { tail -30 "$build/fuzz-build.log"; echo "fuzz: build failed"; exit 2; }

status=0
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  artifacts=$build/artifacts/$t/
  mkdir -p "$corpus" "$artifacts"
  extra=()
  # libhdf5 keeps process-global caches that LeakSanitizer would report on every run.
  [[ $t == hdf5 ]] && extra+=(-detect_leaks=0)
  log=$build/fuzz_$t.log
  # One process per target; the OMP pool is not needed to find input bugs.
  OMP_NUM_THREADS=1 "$build/fuzz/fuzz_$t" "$corpus" "$root/fuzz/corpus/$t" -max_total_time="$secs" \
    -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" \
    "${extra[@]}" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  crashes=$(find "$artifacts" -type f | wc -l)
  echo "fuzz_$t: ${secs}s, ${execs:-?} executions, $crashes crash artifacts, exit $rc (log $log)"
  if ((rc != 0 || crashes != 0)); then
    status=1
    grep -E "ERROR|SUMMARY|unexpected|multi-line|Test unit written" "$log" | head -20
  fi
done
exit $status
