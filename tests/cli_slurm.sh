#!/usr/bin/env bash
# Checkpoints under a real batch system (docs/checkpoints.md, "Under Slurm"): a one-node Slurm
# cluster (Debian's slurm-wlm with munge) started here in a scratch directory — munged,
# slurmctld and slurmd in the foreground of background jobs, as root without systemd or
# cgroups — and torn down at the end:
#  - `srun -n 2 --mpi=pmix plexus train` starts two MPI ranks (Open MPI through PMIx) on one grid;
#  - `scancel --signal=TERM` on the running job: every task gets SIGTERM, the run abandons its
#    epoch, checkpoints the last finished one, writes an interrupted summary, exits 143, and
#    `srun ... --resume` continues it;
#  - `sbatch --time=1 --signal=TERM@50`: Slurm's warning signal before the time limit does the
#    same inside a batch job (srun in the script), and the job ends before its limit.
# Needs slurm-wlm and munge (scripts/install-deps.sh --tests installs them); fails without them.
# Usage: cli_slurm.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$(realpath "$1") src=$(realpath "$2")
source "$src/tests/lib_cli.sh"
for tool in munged slurmctld slurmd srun sbatch scancel squeue sinfo; do
  if ! command -v "$tool" >/dev/null; then
    echo "FAIL [slurm]: $tool is missing: install slurm-wlm and munge (scripts/install-deps.sh --tests)"
    exit 1
  fi
done
cd "$work" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# ---- the cluster ------------------------------------------------------------------------
c=$work/slurm
mkdir -p "$c"/{state,spool,munge}
chmod 700 "$c/munge"
user=$(id -un) host=$(hostname -s)
dd if=/dev/urandom of="$c/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$c/munge/munge.key"
daemons=()
stop_cluster() {  # the daemons this script started, by their process ids
  for pid in "${daemons[@]}"; do kill "$pid" 2>/dev/null; done
  [[ -s $c/munge/munged.pid ]] && kill "$(cat "$c/munge/munged.pid")" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap stop_cluster EXIT
munged --key-file="$c/munge/munge.key" --socket="$c/munge/munge.sock" --pid-file="$c/munge/munged.pid" \
  --log-file="$c/munge/munged.log" --seed-file="$c/munge/munged.seed" --force ||
  { fail "munged does not start"; cat "$c/munge/munged.log"; exit 1; }
port=$((20000 + $$ % 20000))
mem=$(awk '/MemTotal/ {print int($2 / 1024) - 1024}' /proc/meminfo)
cat >"$c/slurm.conf" <<EOF
ClusterName=plexus$$
SlurmctldHost=$host
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SrunPortRange=$((port + 2))-$((port + 60))
AuthType=auth/munge
AuthInfo=socket=$c/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$c/state
SlurmdSpoolDir=$c/spool
SlurmctldPidFile=$c/slurmctld.pid
SlurmdPidFile=$c/slurmd.pid
SlurmctldLogFile=$c/slurmctld.log
SlurmdLogFile=$c/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=$host CPUs=$(nproc --all) RealMemory=$mem State=UNKNOWN
PartitionName=plexus Nodes=ALL Default=YES MaxTime=INFINITE OverSubscribe=FORCE:4 State=UP
EOF
export SLURM_CONF=$c/slurm.conf
slurmctld -D -i -f "$c/slurm.conf" >"$c/slurmctld.out" 2>&1 & daemons+=($!)
slurmd -D -f "$c/slurm.conf" >"$c/slurmd.out" 2>&1 & daemons+=($!)
for _ in $(seq 150); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.2; done
if ! sinfo -h -o %T 2>/dev/null | grep -q idle; then
  fail "the Slurm cluster does not start"; tail -n 5 "$c"/slurmctld.log "$c"/slurmd.log "$c"/*.out; exit 1
fi

# ---- srun starts MPI ranks --------------------------------------------------------------
data=$work/slurm-$$.h5
"$plexus" generate sbm --nodes 60000 --avg-degree 16 --feature-width 32 --seed 5 -o "$data" >/dev/null
train=(train --data "$data" --threads 1 --layers 4 --hidden 64 -q)
timeout 120 srun -n 2 --mpi=pmix "$plexus" "${train[@]}" --epochs 2 --metrics srun.jsonl >srun.out 2>&1 &&
  "$py" -c 'import json,sys; s=[json.loads(l) for l in open("srun.jsonl")][-1]; sys.exit(not (s["ranks"] == 2 and s["epochs_done"] == 2))' &&
  ok || { fail "srun -n 2 --mpi=pmix plexus train"; tail -n 5 srun.out; }

# stopped NAME DIR OUT: the checkpoint of the last finished epoch, the interrupted summary and
# the line, then a resume of one more epoch under srun.
stopped() {
  local name=$1 dir=$2 out=$3 n
  n=$("$py" -c 'import json,sys; s=[json.loads(l) for l in open(sys.argv[1])][-1]; print(s["epochs_done"] if s.get("summary") and s["interrupted"] else -1)' "$dir.jsonl" 2>/dev/null)
  if [[ -z $n || $n -lt 1 || "$(ls "$dir" 2>/dev/null)" != "$(printf 'checkpoint-%08d.h5' "$n")" ]] ||
     ! grep -q "^interrupted by SIGTERM after epoch $n of" "$out"; then
    fail "$name"; echo "  epochs done: $n, checkpoints: $(ls "$dir" 2>/dev/null)"; tail -n 5 "$out"; return 1
  fi
  ok
  timeout 120 srun -n 2 --mpi=pmix "$plexus" "${train[@]}" --epochs $((n + 1)) --resume "$dir" --metrics "$dir-2.jsonl" \
    >"$dir-2.out" 2>&1 && [[ $(grep -c '"epoch"' "$dir-2.jsonl") -eq 1 ]] && ok ||
    { fail "$name: resume under srun"; tail -n 5 "$dir-2.out"; }
}

# ---- scancel --signal=TERM ---------------------------------------------------------------
srun -n 2 --mpi=pmix -J plexus-scancel "$plexus" "${train[@]}" --epochs 100000 --checkpoint-dir sc \
  --checkpoint-every 100000 --metrics sc.jsonl >sc.out 2>&1 &
job=$!
for _ in $(seq 600); do grep -q '"epoch":2,' sc.jsonl 2>/dev/null && break; sleep 0.1; done
scancel --signal=TERM --name=plexus-scancel
start=$(date +%s%N)
( sleep 60; kill -KILL "$job" 2>/dev/null ) & guard=$!
wait "$job"; rc=$?
kill "$guard" 2>/dev/null; wait "$guard" 2>/dev/null
echo "  scancel --signal=TERM: srun ended $((($(date +%s%N) - start) / 1000000)) ms after it, status $rc"
[[ $rc -eq 143 ]] && ok || { fail "scancel --signal=TERM: srun's exit status"; echo "  rc=$rc"; }
stopped "scancel --signal=TERM" sc sc.out

# ---- sbatch --time=1 --signal=TERM@50 ----------------------------------------------------
# Slurm sends the warning signal to the job's steps at its first time-limit check after
# limit - 50 s - up to a minute (its resolution): here within seconds of the start. A signal
# that comes before training starts ends the run at once (as documented), so the script starts
# training on a graph that loads in a moment.
cat >batch.sh <<EOF
#!/bin/bash
srun -n 2 --mpi=pmix "$plexus" ${train[*]} --epochs 100000 --checkpoint-dir tl --checkpoint-every 100000 --metrics tl.jsonl
echo "srun status \$?"
EOF
start=$(date +%s)
jid=$(sbatch --parsable -n 2 --time=1 --signal=TERM@50 -o tl.out batch.sh)
for _ in $(seq 900); do squeue -h -j "$jid" 2>/dev/null | grep -q . || break; sleep 0.1; done
took=$(($(date +%s) - start))
echo "  sbatch --time=1 --signal=TERM@50: the job ended after $took s"
if [[ $took -ge 60 ]] || ! grep -q "^srun status 143" tl.out; then
  fail "sbatch --signal=TERM@50: ended by the warning signal before the time limit"; echo "  $took s"; tail -n 5 tl.out
else ok; fi
# On a loaded machine the warning can come before the first epoch ends: then nothing was
# finished, so nothing may be saved (the checkpoint path is checked by scancel's case above).
if grep -q '"epoch":' tl.jsonl 2>/dev/null; then
  stopped "sbatch --time=1 --signal=TERM@50" tl tl.out
elif [[ -z "$(ls tl 2>/dev/null)" ]]; then
  echo "  (the warning came before the first epoch ended: no checkpoint, as none was finished)"
  ok
else
  fail "sbatch --time=1 --signal=TERM@50: a checkpoint without a finished epoch"; ls tl
fi

echo "cli_slurm: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
