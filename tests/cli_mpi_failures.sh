#!/usr/bin/env bash
# A failure on one rank ends the whole job promptly (docs/failures.md), under mpirun on 4 ranks:
#  - a fault injected on rank k (train --debug-fail k:EPOCH) ends every rank within 10 s of the
#    fault, exit status 1, one error line naming the fault, no plexus process left;
#  - a rank killed with SIGKILL in the middle of training: mpirun ends the others within 10 s,
#    with a non-zero status, and no plexus process is left.
# Times are measured from the event (the error line, the kill) and every wait polls for an event,
# so a loaded machine (a full `ctest -j2` beside it) makes the test slower, not wrong.
# Usage: cli_mpi_failures.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
# A copy of Cora under a name no other job uses, so that its processes can be found.
data=$work/failures-$$.h5
cp "$cora" "$data"
left() { pgrep -f -- "--data $data" >/dev/null; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Waits (polling every 50 ms, at most S seconds) until the shell condition COND holds: the test
# waits on events, never a fixed time, so a loaded machine only makes it slower.
wait_for() { local s=$1 cond=$2 i; for ((i = 0; i < s * 20; i++)); do eval "$cond" && return 0; sleep 0.05; done; eval "$cond"; }

# A fault on rank k: every rank gone within 10 s of the fault (the error line's appearance),
# however long the 4 ranks took to start.
for rank in 2 0 3; do
  timeout 120 mpirun -np 4 "$plexus" train --data "$data" --grid 2x2x1 --epochs 100000 --threads 1 \
    --debug-fail "$rank:3" >"$work/out" 2>"$work/err" &
  job=$!
  wait_for 110 'grep -q "^plexus: error: " "$work/err" || ! kill -0 $job 2>/dev/null'
  fault=$(now_ms)
  wait_for 10 '! kill -0 $job 2>/dev/null && ! left'
  gone=$(now_ms)
  if kill -0 "$job" 2>/dev/null; then kill -KILL "$job"; pkill -KILL -f -- "--data $data"; fi
  wait "$job"; rc=$?
  lines=$(grep -c "^plexus: error: " "$work/err")
  if [[ $rc -ne 1 || $lines -ne 1 ]] || ! grep -q "^plexus: error: internal: fault injected by --debug-fail on rank $rank after epoch 3" "$work/err"; then
    fail "fault on rank $rank"; echo "  rc=$rc (124 = hang), $lines error lines:"; cat "$work/err"
  elif ((gone - fault > 10000)); then
    fail "fault on rank $rank"; echo "  the job took $((gone - fault)) ms after the fault to end"
  elif left; then
    fail "fault on rank $rank"; echo "  plexus processes left:"; pgrep -af -- "--data $data"
  else ok; fi
done

# SIGKILL: no handler can run; mpirun sees the rank die and ends the others within 10 s.
mpirun -np 4 "$plexus" train --data "$data" --grid 2x2x1 --epochs 100000 --threads 1 >"$work/out" 2>"$work/err" &
job=$!
# Until training runs (rank 0 prints epochs) and all four ranks (mpirun's children) exist.
if ! wait_for 110 'grep -q "^epoch" "$work/out" 2>/dev/null && (($(pgrep -P $job -f -- "--data $data" | wc -l) == 4))'; then
  fail "SIGKILL of one rank"; echo "  training never started:"; cat "$work/err"
  kill -KILL "$job" 2>/dev/null; pkill -KILL -f -- "--data $data"; wait "$job"
else
  victim=$(pgrep -P "$job" -f -- "--data $data" | tail -1)
  start=$(now_ms)
  kill -KILL "$victim"
  wait_for 10 '! kill -0 $job 2>/dev/null && ! left'
  ms=$(($(now_ms) - start))
  if kill -0 "$job" 2>/dev/null; then
    fail "SIGKILL of one rank"; echo "  mpirun still running after $ms ms"; kill -KILL "$job"; pkill -KILL -f -- "--data $data"
    wait "$job"
  else
    wait "$job"; rc=$?
    if [[ $rc -eq 0 ]]; then fail "SIGKILL of one rank"; echo "  exit status 0"
    elif left; then fail "SIGKILL of one rank"; echo "  plexus processes left after $ms ms:"; pgrep -af -- "--data $data"
    else ok; fi
  fi
fi

echo "cli_mpi_failures: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
