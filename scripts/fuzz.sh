#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in build-fuzz/ with clang + AddressSanitizer and runs
# each for SECONDS (default 30), starting from the seed corpora in fuzz/corpus/<target>/ (a
# working copy grows in build-fuzz/corpus/). Prints executions and findings per target; exits
# non-zero when any target found a crash, a hang or a sanitizer report -- in Plexus code or
# inside libhdf5 alike, since the HDF5 readers check each file in a child process first
# (io/hdf5/probe.hpp) and must turn the library's own crashes and hangs into InputErrors.
# The reproducer is left in build-fuzz/artifacts/<target>/.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   targets: edge_list hdf5 pickle text_corpus torch_file (default: all)
set -uo pipefail
secs=${1:-30}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(edge_list hdf5 pickle text_corpus torch_file)
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

# Labels ARTIFACT for the report by replaying it alone: "libhdf5" when the faulting frame (the
# first one outside the sanitizer's interceptors) is inside libhdf5 -- one the check process
# should have caught; "unreproducible" when the replay runs clean (libhdf5 keeps process-global
# caches, so a failure may depend on the inputs run before); else "ours". All are failures.
classify() {
  local bin=$1 artifact=$2 frame replay
  # Replayed under the campaign's limits ($timeout); a timeout gets libFuzzer's stack.
  replay=$(ASAN_OPTIONS=detect_leaks=0 OMP_NUM_THREADS=1 PLEXUS_HDF5_CHECK_SECONDS=5 timeout $((2 * timeout + 60)) "$bin" -detect_leaks=0 \
           -malloc_limit_mb=2048 -timeout="$timeout" "$artifact" 2>&1)
  if ! grep -qE 'ERROR: |deadly signal|Deadly signal|timeout after|out-of-memory' <<<"$replay"; then
    echo unreproducible
    return
  fi
  frame=$(grep -E '^ +#[0-9]+ ' <<<"$replay" |
          grep -vE '__interceptor_|__asan_|__sanitizer|libclang_rt|libc\.so|libpthread|sysdeps/|fuzzer::| in main |__libc_start|in (malloc|calloc|realloc|free|operator new)' |
          head -1)
  if [[ $frame == *libhdf5* ]]; then echo libhdf5; else echo ours; fi
}

status=0
for t in "${targets[@]}"; do
  bin=$build/fuzz/fuzz_$t
  corpus=$build/corpus/$t
  artifacts=$build/artifacts/$t/
  mkdir -p "$corpus" "$artifacts"
  extra=()
  # libhdf5 keeps process-global caches, and leaks on some corrupt files' error paths (about
  # 16 KB over 4,500 inputs): LeakSanitizer is off for this target, per input and at exit.
  # Each HDF5 input goes through three readers, each first checking the file in a child
  # process (up to 5 s, fork included): a 120 s limit still catches a hang in the parent.
  timeout=30
  [[ $t == hdf5 ]] && extra+=(-detect_leaks=0) && timeout=120
  log=$build/fuzz_$t.log
  touch "$log.start"
  # One process per target; the OMP pool is not needed to find input bugs. The HDF5 check
  # process gets 5 s, well inside libFuzzer's timeout, so that a hang inside libhdf5 must
  # come back as an InputError rather than as libFuzzer's timeout.
  leaks=1
  [[ $t == hdf5 ]] && leaks=0
  ASAN_OPTIONS=detect_leaks=$leaks OMP_NUM_THREADS=1 PLEXUS_HDF5_CHECK_SECONDS=5 "$bin" "$corpus" "$root/fuzz/corpus/$t" -max_total_time="$secs" \
    -timeout="$timeout" -rss_limit_mb=4096 -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" \
    "${extra[@]}" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  [[ -z $execs ]] && execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  ours=0 theirs=0 unrepro=0
  while IFS= read -r a; do
    [[ -z $a ]] && continue
    case $(classify "$bin" "$a") in
      libhdf5) theirs=$((theirs + 1)); echo "  finding inside libhdf5, not caught by the check process: $a" ;;
      unreproducible) unrepro=$((unrepro + 1)); echo "  finding not reproducible alone: $a" ;;
      *) ours=$((ours + 1)); echo "  finding in Plexus code: $a" ;;
    esac
  done < <(find "$artifacts" -type f ! -name 'slow-unit-*' -newer "$log.start" 2>/dev/null)
  # libFuzzer keeps inputs slower than 10 s as slow-unit-*: worth a look, not a failure.
  slow=$(find "$artifacts" -type f -name 'slow-unit-*' -newer "$log.start" 2>/dev/null | wc -l)
  ((slow > 0)) && echo "  $slow slow inputs (over 10 s, not failures) kept in $artifacts"
  echo "fuzz_$t: ${secs}s, ${execs:-?} executions, $ours crashes in Plexus code, $theirs inside libhdf5, $unrepro not reproducible alone, exit $rc (log $log)"
  if ((ours + theirs + unrepro != 0 || rc != 0)); then
    status=1
    grep -E "ERROR|SUMMARY|unexpected|multi-line|Test unit written" "$log" | head -20
  fi
done
exit $status
