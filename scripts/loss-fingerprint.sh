#!/usr/bin/env bash
# Prints every per-epoch (per-step) training loss, to the last bit, of the runs that issue 44's
# acceptance 1 compares before and after a refactoring: every GNN kind on the bundled Cora for
# 30 epochs on 1x1x1, 2x1x2 and 1x2x2 (the CPU backend), and the baby GPT for 200 steps on two
# replicas at ZeRO-3. Save the output of one build and diff it against another's:
#   scripts/loss-fingerprint.sh build-old > before.txt; scripts/loss-fingerprint.sh build > after.txt
#   diff before.txt after.txt   # no output: bit for bit the same
# Usage: scripts/loss-fingerprint.sh [BUILD_DIR] [KIND ...]   (default build; every kind)
set -euo pipefail
build=${1:-build}
shift || true
kinds=("$@")
((${#kinds[@]})) || kinds=(gcn sage gin gat gpt)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
losses() {  # the "loss" field of every per-epoch or per-step line, as printed (17 digits)
  python3 -c 'import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "loss" in r and ("epoch" in r or "iter" in r): print(sys.argv[2], r.get("epoch", r.get("iter")), repr(r["loss"]))' "$1" "$2"
}
for kind in "${kinds[@]}"; do
  if [[ $kind == gpt ]]; then
    mpirun -np 2 "$build/plexus" gpt train --iters 200 --dp 2 --zero 3 --grid 1x1x1 --eval-every 0 --threads 1 \
      --backend cpu --metrics "$tmp/gpt.jsonl" -q >/dev/null
    losses "$tmp/gpt.jsonl" "gpt dp2 zero3"
    continue
  fi
  for grid in 1x1x1 2x1x2 1x2x2; do
    IFS=x read -r x y z <<<"$grid"
    mpirun -np $((x * y * z)) "$build/plexus" train --model "$kind" --epochs 30 --grid "$grid" --threads 1 \
      --backend cpu --metrics "$tmp/$kind-$grid.jsonl" -q >/dev/null
    losses "$tmp/$kind-$grid.jsonl" "$kind $grid"
  done
done
