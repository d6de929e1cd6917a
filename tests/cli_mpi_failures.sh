#!/usr/bin/env bash
# A failure on one rank ends the whole job promptly (docs/failures.md), under mpirun on 4 ranks:
#  - a fault injected on rank k (train --debug-fail k:EPOCH) ends every rank within 10 s of the
#    job's start, exit status 1, one error line naming the fault, no plexus process left;
#  - a rank killed with SIGKILL in the middle of training: mpirun ends the others within 10 s,
#    with a non-zero status, and no plexus process is left.
# Usage: cli_mpi_failures.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
# A copy of Cora under a name no other job uses, so that its processes can be found.
data=$work/failures-$$.h5
cp "$cora" "$data"
left() { pgrep -f -- "--data $data" >/dev/null; }

for rank in 2 0 3; do
  start=$(date +%s%N)
  timeout 60 mpirun -np 4 "$plexus" train --data "$data" --grid 2x2x1 --epochs 100000 --threads 1 \
    --debug-fail "$rank:3" >"$work/out" 2>"$work/err"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  lines=$(grep -c "^plexus: error: " "$work/err")
  if [[ $rc -ne 1 || $lines -ne 1 ]] || ! grep -q "^plexus: error: internal: fault injected by --debug-fail on rank $rank after epoch 3" "$work/err"; then
    fail "fault on rank $rank"; echo "  rc=$rc (124 = hang), $lines error lines:"; cat "$work/err"
  elif ((ms > 10000)); then
    fail "fault on rank $rank"; echo "  the job took $ms ms to end"
  elif left; then
    fail "fault on rank $rank"; echo "  plexus processes left:"; pgrep -af -- "--data $data"
  else ok; fi
done

# SIGKILL: no handler can run; mpirun sees the rank die and ends the others.
mpirun -np 4 "$plexus" train --data "$data" --grid 2x2x1 --epochs 100000 --threads 1 >"$work/out" 2>"$work/err" &
job=$!
for _ in $(seq 100); do  # until training runs (rank 0 prints epochs)
  grep -q "^epoch" "$work/out" 2>/dev/null && break
  sleep 0.1
done
victim=$(pgrep -f -- "--data $data" | grep -v "^$job$" | tail -1)
start=$(date +%s%N)
kill -KILL "$victim"
for _ in $(seq 100); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
ms=$((($(date +%s%N) - start) / 1000000))
if kill -0 "$job" 2>/dev/null; then
  fail "SIGKILL of one rank"; echo "  mpirun still running after $ms ms"; kill -KILL "$job"; pkill -KILL -f -- "--data $data"
  wait "$job"
else
  wait "$job"; rc=$?
  sleep 0.5
  if [[ $rc -eq 0 ]]; then fail "SIGKILL of one rank"; echo "  exit status 0"
  elif left; then fail "SIGKILL of one rank"; echo "  plexus processes left:"; pgrep -af -- "--data $data"
  else ok; fi
fi

echo "cli_mpi_failures: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
