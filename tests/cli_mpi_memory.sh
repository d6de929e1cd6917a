#!/usr/bin/env bash
# Each rank allocates only its shards:
#  1. the peak tensor bytes of the largest rank at P=8 (grid 2x2x2) are at most 0.3x those of
#     the single-rank run;
#  2. with --shard-adj the dataset a rank holds after loading (shard_bytes, largest rank)
#     falls as 1/P: Â is split over all three axes, so a 2-layer GCN, whose layers use two
#     distinct block layouts, holds at most 2/P of the P=1 bytes (plus row pointers: 3 %);
#     the replicated layout holds Â blocks of 1/(G_d·G_o) and is above that bound.
# Usage: cli_mpi_memory.sh PLEXUS_BINARY SOURCE_DIR
set -eu
plexus=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$plexus" generate rmat --scale 13 --edge-factor 16 --feature-width 128 --classes 16 -o "$work/g.h5" >/dev/null
"$plexus" train --data "$work/g.h5" --epochs 2 --hidden 128 --threads 1 --quiet --metrics "$work/p1.jsonl" >/dev/null
mpirun -np 8 "$plexus" train --grid 2x2x2 --data "$work/g.h5" --epochs 2 --hidden 128 --threads 1 --quiet \
  --metrics "$work/p8.jsonl" >/dev/null
for g in 2x2x1 1x2x2 2x2x2 2x1x4; do
  IFS=x read -r gx gy gz <<<"$g"
  mpirun -np $((gx * gy * gz)) "$plexus" train --grid "$g" --data "$work/g.h5" --epochs 1 --threads 1 --quiet \
    --shard-adj --metrics "$work/s$g.jsonl" >/dev/null
done
/usr/bin/python3 - "$work" <<'PY'
import json, sys
summary = lambda f: json.loads(open(f"{sys.argv[1]}/{f}").read().splitlines()[-1])
passed = failed = 0
def check(ok, msg):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + msg)
    passed, failed = passed + ok, failed + (not ok)

p1, p8 = summary("p1.jsonl"), summary("p8.jsonl")
ratio = p8["peak_tensor_bytes"] / p1["peak_tensor_bytes"]
check(ratio <= 0.3, f"peak tensor bytes: P=1 {p1['peak_tensor_bytes']}, P=8 (2x2x2, largest rank) "
                    f"{p8['peak_tensor_bytes']}, ratio {ratio:.3f} (<= 0.3)")
r8 = p8["shard_bytes"] / p1["shard_bytes"]
check(r8 > 2 / 8 * 1.03, f"shard bytes, replicated Â, P=8 2x2x2: {r8:.3f} of P=1 (above 2/P: Â is replicated)")
for g in ("2x2x1", "1x2x2", "2x2x2", "2x1x4"):
    s = summary(f"s{g}.jsonl")
    P = s["ranks"]
    r = s["shard_bytes"] / p1["shard_bytes"]
    check(s["shard_adj"] and r <= 2 / P * 1.03, f"shard bytes, --shard-adj, P={P} {g}: {r:.3f} of P=1 (<= 2/P = {2 / P:.3f})")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
