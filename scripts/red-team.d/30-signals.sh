# Class 2 of issue 31: checkpoints survive real stop signals (docs/checkpoints.md, "SIGTERM and
# SIGINT"). Epochs, evaluations and steps of seconds; signals to one process and to mpirun (which
# passes them on one second late and SIGKILLs one second after that). Each case: the run ends
# by the signal within its grace period, with the checkpoint of its last finished epoch or step
# (when it finished one), an interrupted metrics summary that names it, no temporary file, no
# process left. (Slurm's signals: tests/cli_slurm.sh, which starts a cluster.)
S=$W/signals
mkdir -p "$S"
"$plexus" generate sbm --nodes 150000 --avg-degree 16 --feature-width 32 --seed 5 -o "$S/big.h5" >/dev/null
head -c 30000 "$repo/data/tinyshakespeare.txt" >"$S/text.txt"
gcn_slow=(train --data "$S/big.h5" --threads 1 --layers 4 --hidden 96 --epochs 100000 -q)
gpt_slow=(gpt train --data "$S/text.txt" --layers 2 --heads 2 --block 64 --batch 8 --embed 64 --threads 1 --quiet
          --dropout 0.1 --warmup 2)

# stop_case SUB DESC SIGNAL NP WAIT_FOR WANT_DONE MAX_MS ARGS...: runs plexus ARGS (under mpirun
# -np NP when NP > 0, the signal then sent to mpirun) with --checkpoint-dir and --metrics, sends
# SIGNAL 0.3 s after the metrics hold the JSON text WAIT_FOR (or at once when it is "-"),
# and wants: the end within MAX_MS of the signal, exit 128+SIGNAL (one process) or non-zero
# (mpirun), an interrupted summary of WANT_DONE epochs or steps with the checkpoint of that
# count (none when 0), no temporary file and no process left. SECOND=1 sends a second SIGTERM
# 0.2 s after the first (the process must then end at once, leaving no temporary file);
# NO_SUMMARY=1: a stop before training, which writes no summary.
stop_case() {
  local sub=$1 desc=$2 sig=$3 np=$4 wait_for=$5 want=$6 max_ms=$7; shift 7
  local d=$S/run$((n + 1)) prefix=() rc verdict=PASS detail="" pid
  mkdir -p "$d"
  [[ $np -gt 0 ]] && prefix=(mpirun -np "$np")
  if [[ $np -gt 0 ]]; then
    "${prefix[@]}" "$plexus" "$@" --checkpoint-dir "$d/ck" --checkpoint-every 100000 --metrics "$d/m.jsonl" \
      >"$d/out" 2>"$d/err" &
    pid=$!
  else
    $py -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$plexus" "$@" --checkpoint-dir "$d/ck" --checkpoint-every 100000 \
      --metrics "$d/m.jsonl" >"$d/out" 2>"$d/err" &
    pid=$!
  fi
  bg_pids+=("$pid")
  if [[ $wait_for != - ]]; then
    for _ in $(seq 1200); do grep -qF -- "$wait_for" "$d/m.jsonl" 2>/dev/null && break; sleep 0.05; done
    sleep 0.3
  else
    sleep 0.5
  fi
  kill -s "$sig" "$pid"
  local start
  start=$(date +%s%N)
  [[ ${SECOND:-0} == 1 ]] && { sleep 0.2; kill -s TERM "$pid" 2>/dev/null; }
  ( sleep "$T"; kill -KILL "$pid" 2>/dev/null ) &
  local watchdog=$!
  wait "$pid"; rc=$?
  local ms=$((($(date +%s%N) - start) / 1000000))
  kill "$watchdog" 2>/dev/null; wait "$watchdog" 2>/dev/null
  local summary
  summary=$($py -c 'import json,sys
r=[json.loads(l) for l in open(sys.argv[1])][-1]
print(r.get("interrupted"), r.get("epochs_done", r.get("iters_done")), r.get("checkpoint"))' "$d/m.jsonl" 2>/dev/null)
  local ckpts
  ckpts=$(ls "$d/ck" 2>/dev/null | tr '\n' ' ')
  # WANT_DONE "N+": at least N — under mpirun the ranks hear of the signal a second late, so on a
  # fast machine the stop lands in a later epoch or step; the count is then the summary's.
  if [[ $want == *+ ]]; then
    local done_now
    done_now=$(cut -d' ' -f2 <<<"$summary")
    if [[ $done_now =~ ^[0-9]+$ ]] && ((done_now >= ${want%+})); then want=$done_now; else want=${want%+}; fi
  fi
  local want_ckpt=""
  [[ $want -gt 0 ]] && want_ckpt=$(printf 'checkpoint-%08d.h5 ' "$want")
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then verdict=FAIL detail="killed or hung (rc=$rc) after $ms ms"
  elif [[ $np -eq 0 && $rc -ne $((128 + $(kill -l "$sig"))) ]]; then verdict=FAIL detail="rc=$rc: $(head -c 200 "$d/err")"
  elif [[ $np -gt 0 && $rc -eq 0 ]]; then verdict=FAIL detail="mpirun exited 0"
  elif [[ $ms -gt $max_ms ]]; then verdict=FAIL detail="ended $ms ms after the signal (allowed: $max_ms)"
  elif compgen -G "$d/ck/*.tmp.*" >/dev/null; then verdict=FAIL detail="temporary file left: $(ls "$d/ck")"
  elif [[ ${SECOND:-0} != 1 && "$ckpts" != "$want_ckpt" ]]; then verdict=FAIL detail="checkpoints '$ckpts', wanted '$want_ckpt'"
  elif [[ ${SECOND:-0} != 1 && ${NO_SUMMARY:-0} != 1 && $summary != "True $want "* ]]; then
    verdict=FAIL detail="summary: $summary"
  elif pgrep -f -- "--checkpoint-dir $d/ck" >/dev/null; then
    verdict=FAIL detail="processes left"; pkill -KILL -f -- "--checkpoint-dir $d/ck"
  elif [[ -n ${CHECK:-} ]] && ! eval "$CHECK"; then verdict=FAIL detail="check failed: $CHECK"
  fi
  record "$sub" "$desc" "stop" "$rc" "$verdict" "$detail"
}
abandoned() { grep -q "(work after it abandoned)" "$d/out"; }

# GCN: epochs of seconds, 4 layers (a stop point every layer). Under mpirun the ranks hear of
# the signal a second late, wherever the run then is: the checkpoint of the last finished epoch
# is what counts (inside an epoch or at its end); one process is signalled inside an epoch.
stop_case train "SIGTERM to mpirun -np 2 within an epoch of seconds" TERM 2 '"epoch":1,' 1+ 3000 "${gcn_slow[@]}"
stop_case train "SIGINT to mpirun -np 2 within an epoch" INT 2 '"epoch":1,' 1+ 3000 "${gcn_slow[@]}"
OMPI_MCA_odls_base_sigkill_timeout=4 stop_case train "SIGTERM to mpirun -np 2, odls_base_sigkill_timeout 4" \
  TERM 2 '"epoch":1,' 1+ 9000 "${gcn_slow[@]}"
CHECK=abandoned stop_case train "SIGTERM to one process within an epoch" TERM 0 '"epoch":1,' 1 1500 "${gcn_slow[@]}"
CHECK=abandoned stop_case train "SIGINT to one process within an epoch" INT 0 '"epoch":1,' 1 1500 "${gcn_slow[@]}"
SECOND=1 stop_case train "two SIGTERMs: the second ends it at once" TERM 0 '"epoch":1,' 1 1500 "${gcn_slow[@]}"
NO_SUMMARY=1 stop_case train "SIGTERM before training starts (loading): ends at once" TERM 0 - 0 1500 "${gcn_slow[@]}"

# GPT: evaluations of seconds (1000 batches), a step of 200 micro-batches.
CHECK='abandoned && $py -c "import json,sys; s=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(not s[-2][\"val_loss\"] is None)" "$d/m.jsonl"' \
  stop_case "gpt train" "SIGTERM during an evaluation of seconds" TERM 0 '"iter":2,' 3 1500 \
  "${gpt_slow[@]}" --iters 6 --eval-every 3 --eval-iters 1000
stop_case "gpt train" "SIGTERM during the initial evaluation" TERM 0 '"config":true' 0 1500 \
  "${gpt_slow[@]}" --iters 6 --eval-every 3 --eval-iters 2000
CHECK=abandoned stop_case "gpt train" "SIGTERM within a step of 200 micro-batches" TERM 0 '"iter":1,' 1 1500 \
  "${gpt_slow[@]}" --iters 1000 --eval-every 0 --grad-accum 200
CHECK=abandoned stop_case "gpt train" "SIGTERM to mpirun -np 2 (2 replicas) during an evaluation" TERM 2 '"iter":2,' 3+ 3000 \
  "${gpt_slow[@]}" --iters 6 --eval-every 3 --eval-iters 4000 --dp 2 --grid 1x1x1
SECOND=1 stop_case "gpt train" "two SIGTERMs during an evaluation" TERM 0 '"iter":2,' 3 1500 \
  "${gpt_slow[@]}" --iters 6 --eval-every 3 --eval-iters 1000
