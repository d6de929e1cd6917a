#!/usr/bin/env bash
# A graceful stop under mpirun with epochs of several seconds (docs/checkpoints.md, "SIGTERM and
# SIGINT"). Open MPI 4.1's mpirun passes SIGTERM or SIGINT on to the ranks one second
# (odls_base_sigkill_timeout) after it got it, and SIGKILLs them one second after that: the
# ranks must abandon the epoch in progress at their next stop point (between two layers) and
# write the checkpoint of the last finished epoch within that second.
#  - SIGTERM to `mpirun -np 2` during epoch k+1 (k >= 1): a checkpoint of epoch k, the metrics
#    of epochs 1..k and an interrupted summary, no rank left; the run resumed from that
#    checkpoint gives the uninterrupted run's later epochs bit for bit;
#  - SIGINT (Ctrl-C) to `mpirun -np 4` during an epoch: the same checkpoint and summary.
# Usage: cli_stop_signals.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$(realpath "$1") src=$(realpath "$2")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
cd "$work" || exit 1
data=$work/stop-$$.h5  # a name no other job uses, so that its processes can be found
# About 2.5 million edges: an epoch of 4 layers takes seconds on one thread per rank, one layer
# a fraction of a second.
"$plexus" generate sbm --nodes 150000 --avg-degree 16 --feature-width 32 --seed 5 -o "$data" >/dev/null ||
  { fail "generate the graph"; exit 1; }
# Four epochs: mpirun passes the signal on a second after it got it (sent once epoch 1 is done),
# so it reaches the ranks within epoch 2, 3 or 4 whatever this machine's speed; the test reads
# which epoch was the last finished one from the metrics.
train=(train --data "$data" --threads 1 --layers 4 --hidden 96 --epochs 4 -q)

# stop NP SIGNAL DIR: starts the run on NP ranks and sends SIGNAL to mpirun as soon as the
# metrics show epoch 1: the ranks get it a second later, within epoch 2; waits for the end.
stop() {
  local np=$1 sig=$2 dir=$3
  mpirun -np "$np" "$plexus" "${train[@]}" --checkpoint-dir "$dir" --checkpoint-every 100 --metrics "$dir.jsonl" \
    >"$dir.out" 2>"$dir.err" &
  local job=$!
  for _ in $(seq 900); do grep -q '"epoch":1,' "$dir.jsonl" 2>/dev/null && break; sleep 0.1; done
  epoch_s=$("$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[1])["epoch_seconds"])' "$dir.jsonl")
  kill -"$sig" "$job"
  local start
  start=$(date +%s%N)
  ( sleep 30; kill -KILL "$job" 2>/dev/null ) & local guard=$!
  wait "$job"
  kill "$guard" 2>/dev/null; wait "$guard" 2>/dev/null
  ms=$((($(date +%s%N) - start) / 1000000))
}

# stopped NAME DIR: the checkpoint of the last finished epoch k (done_k) — its metrics, the
# summary, the line (the work after it abandoned when the stop came within an epoch, as it
# nearly always does: 3L-2 of the stop points are inside one) — and no rank left.
stopped() {
  local name=$1 dir=$2 ck
  done_k=$("$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1]).get("epochs_done", -1))' "$dir.jsonl" 2>/dev/null)
  ck=$(printf 'checkpoint-%08d.h5' "${done_k:-0}")
  if [[ -z $done_k || $done_k -lt 1 || $done_k -ge 4 || "$(ls "$dir" 2>/dev/null)" != "$ck" ]] ||
     ! grep -Eq "^interrupted by SIGTERM after epoch $done_k of 4( \(work after it abandoned\))?; checkpoint $dir/$ck" "$dir.out"; then
    fail "$name"; echo "  $ms ms, epoch 1 took $epoch_s s; epochs done $done_k; checkpoints: $(ls "$dir" 2>/dev/null)"
    tail -n 3 "$dir.out" "$dir.err"; return 1
  fi
  if pgrep -f -- "--data $data" >/dev/null; then
    fail "$name: ranks left"; pkill -KILL -f -- "--data $data"; return 1
  fi
  "$py" - "$dir.jsonl" "$done_k" <<'EOF' && ok || fail "$name: metrics"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
k = int(sys.argv[2])
s = rows[-1]
assert s["summary"] and s["interrupted"] and s["epochs_done"] == k, s
assert s["checkpoint"].endswith("checkpoint-%08d.h5" % k), s
assert [r["epoch"] for r in rows if "epoch" in r] == list(range(1, k + 1)), rows
EOF
}

mpirun -np 2 "$plexus" "${train[@]}" --metrics full.jsonl >/dev/null || fail "uninterrupted run"
stop 2 TERM term
if stopped "SIGTERM to mpirun -np 2 within an epoch" term; then
  echo "  SIGTERM to mpirun -np 2: epochs of $epoch_s s; ended ${ms} ms after the signal"
  mpirun -np 2 "$plexus" "${train[@]}" --resume term --metrics resumed.jsonl >/dev/null &&
    "$py" - full.jsonl resumed.jsonl "$done_k" <<'EOF' && ok || fail "resumed after an abandoned epoch: bit for bit"
import json, sys
full, resumed = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
f = {r["epoch"]: r for r in full if "epoch" in r}
r = {x["epoch"]: x for x in resumed if "epoch" in x}
assert sorted(r) == list(range(int(sys.argv[3]) + 1, 5)), sorted(r)
for e in r:
    for k in ("loss", "val_loss", "train_acc", "val_acc", "test_acc"):
        assert f[e][k] == r[e][k], (e, k, f[e][k], r[e][k])
assert (full[-1]["best_epoch"], full[-1]["test_acc"]) == (resumed[-1]["best_epoch"], resumed[-1]["test_acc"])
EOF
fi

stop 4 INT int
stopped "SIGINT to mpirun -np 4 within an epoch" int && echo "  SIGINT to mpirun -np 4: epochs of $epoch_s s; ended ${ms} ms after the signal"

echo "cli_stop_signals: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
