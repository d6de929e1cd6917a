#!/usr/bin/env bash
# Each rank allocates only its shards: the peak tensor bytes of the largest rank at P=8
# (grid 2x2x2) are at most 0.3x those of the single-rank run.
# Usage: cli_mpi_memory.sh PLEXUS_BINARY SOURCE_DIR
set -eu
plexus=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$plexus" generate rmat --scale 13 --edge-factor 16 --features 128 --classes 16 -o "$work/g.h5" >/dev/null
"$plexus" train --data "$work/g.h5" --epochs 2 --hidden 128 --threads 1 --quiet --metrics "$work/p1.jsonl" >/dev/null
mpirun -np 8 "$plexus" train --grid 2x2x2 --data "$work/g.h5" --epochs 2 --hidden 128 --threads 1 --quiet \
  --metrics "$work/p8.jsonl" >/dev/null
/usr/bin/python3 - "$work" <<'PY'
import json, sys
peak = lambda f: json.loads(open(f"{sys.argv[1]}/{f}").read().splitlines()[-1])["peak_tensor_bytes"]
p1, p8 = peak("p1.jsonl"), peak("p8.jsonl")
ratio = p8 / p1
print(f"peak tensor bytes: P=1 {p1}, P=8 (2x2x2, largest rank) {p8}, ratio {ratio:.3f}")
ok = ratio <= 0.3
print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
sys.exit(0 if ok else 1)
PY
