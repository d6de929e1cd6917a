#!/usr/bin/env bash
# Sequence parallelism against the same grid without it (docs/gpt.md, "Sequence parallelism"):
# for every grid of RANKS ranks, ROUNDS rounds that alternate the two runs (so that the machine's
# load falls on both alike), the median step time of steps 3..ITERS of each run, the median over
# the rounds, and the largest rank's activation bytes, measured (the run's summary) and planned
# (`plexus plan gpt --json`, the same dry run of the real code).
# Usage: examples/bench/run_gpt_sequence_parallel.sh [BUILD_DIR]
#   env: RANKS (4), ROUNDS (5), ITERS (14), MODEL (the baby GPT: 4 layers, 4 heads, embed 128,
#        block 64, batch 8), GRIDS (every grid of RANKS but 1x1xRANKS, where it changes nothing),
#        WITHOUT and WITH, the two runs' flags (--sequence-parallel=off and =on; context
#        parallelism: WITHOUT=--context-parallel=off WITH=--context-parallel=on)
set -eu
build=${1:-build}
plexus=$(realpath "$build/plexus")
data=$(dirname "$0")/../../data/tinyshakespeare.txt
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ranks=${RANKS:-4} rounds=${ROUNDS:-5} iters=${ITERS:-14}
read -r -a model <<<"${MODEL:---layers 4 --heads 4 --embed 128 --block 64 --batch 8}"
read -r -a without <<<"${WITHOUT:---sequence-parallel=off}"
read -r -a with <<<"${WITH:---sequence-parallel=on}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
grids=${GRIDS:-$(python3 -c "
n=$ranks
print(' '.join(f'{a}x{b}x{n//a//b}' for a in range(1,n+1) if n%a==0 for b in range(1,n//a+1) if (n//a)%b==0 and (a,b)!=(1,1)))")}

"$plexus" plan gpt --ranks "$ranks" "${model[@]}" --dropout 0.1 "${without[@]}" --json >"$work/plan-off.json"
"$plexus" plan gpt --ranks "$ranks" "${model[@]}" --dropout 0.1 "${with[@]}" --json >"$work/plan-on.json"
echo "grid | step ms ${without[*]} | ${with[*]} | ratio | activations without, measured / plan | with, measured / plan"
for g in $grids; do
  for ((r = 0; r < rounds; r++)); do
    for sp in off on; do
      if [ "$sp" = off ]; then flag=("${without[@]}"); else flag=("${with[@]}"); fi
      mpirun -np "$ranks" "$plexus" gpt train --data "$data" "${model[@]}" --dropout 0.1 --eval-every 0 --threads 1 \
        --iters "$iters" --grid "$g" "${flag[@]}" --metrics "$work/$g-$sp-$r.jsonl" -q >/dev/null
    done
  done
  python3 - "$work" "$g" "$rounds" <<'EOF'
import json, statistics, sys
work, g, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def run(sp, r):
    rows = [json.loads(l) for l in open(f"{work}/{g}-{sp}-{r}.jsonl")]
    steps = [x["step_seconds"] for x in rows if "iter" in x and x["iter"] >= 3]
    return statistics.median(steps) * 1e3, rows[-1]["memory"]["activation_bytes"]
def plan(sp):
    p = next(p for p in json.load(open(f"{work}/plan-{sp}.json"))["grids"] if p["grid"] == g and p["dp"] == 1 and p["zero"] == 0)
    return p["memory_by_kind"]["activation"]
t = {sp: statistics.median(run(sp, r)[0] for r in range(rounds)) for sp in ("off", "on")}
a = {sp: run(sp, 0)[1] for sp in ("off", "on")}
print(f"{g} | {t['off']:.1f} | {t['on']:.1f} | {t['on'] / t['off']:.2f} | {a['off']:,} / {plan('off'):,.0f} | "
      f"{a['on']:,} / {plan('on'):,.0f} ({a['on'] / a['off']:.2f})")
EOF
done
