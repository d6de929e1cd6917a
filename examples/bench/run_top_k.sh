#!/usr/bin/env bash
# Recommendations for a list of nodes (issue 46, acceptance 6): a GCN link model (128 -> 64, dot
# decoder) trained a few epochs on an R-MAT graph of SCALE (default 16: 65,536 nodes), then
# `plexus predict --top-k 10 --nodes` for NODES random nodes (default 1,000) on 1 rank and on 8
# (2x2x2, oversubscribed on this machine): the wall time and each rank's peak memory (RSS), and
# both files checked against an independent float64 brute force (examples/bench/top_k_brute.py).
#   examples/bench/run_top_k.sh BUILD_DIR [SCALE] [NODES] [THREADS]
set -euo pipefail
build=${1:?usage: run_top_k.sh BUILD_DIR [SCALE] [NODES] [THREADS]}
scale=${2:-16} count=${3:-1000} threads=${4:-2}
here=$(cd "$(dirname "$0")" && pwd)
plexus=$(cd "$build" && pwd)/plexus
source "$(dirname "${BASH_SOURCE[0]}")/same_blas_kernels.sh" "$build/plexus"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
"$plexus" generate rmat --scale "$scale" -o g.h5 >/dev/null
"$plexus" train --data g.h5 --task link --hidden 128 --embedding-width 64 --epochs 3 --threads "$threads" \
  --grid 1x1x1 --quiet --save-model link.h5 >/dev/null
/usr/bin/python3 - "$scale" "$count" >nodes.txt <<'PY'
import random, sys
n, count = 2 ** int(sys.argv[1]), int(sys.argv[2])
print("\n".join(map(str, random.Random(46).sample(range(n), count))))
PY
# Each rank's peak RSS (KiB) into rss.NAME.RANK.
run() {  # run NAME RANKS GRID THREADS
  local t0 t1
  t0=$(date +%s.%N)
  mpirun -np "$2" bash -c '/usr/bin/time -f "%M" -o "rss.$0.$OMPI_COMM_WORLD_RANK" "$@"' "$1" "$plexus" predict \
    --checkpoint link.h5 --data g.h5 --top-k 10 --nodes nodes.txt -o "$1.h5" --grid "$3" --threads "$4" --quiet
  t1=$(date +%s.%N)
  /usr/bin/python3 - "$1" "$2" "$t0" "$t1" <<'PY'
import glob, sys
name, ranks, t0, t1 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rss = [int(open(f).read().split()[-1]) for f in glob.glob(f"rss.{name}.*")]
print(f"{name}: {ranks} rank(s), {t1 - t0:.2f} s wall (with the model's forward pass and the graph read), "
      f"peak RSS per rank max {max(rss) / 2**20:.2f} GiB, sum {sum(rss) / 2**20:.2f} GiB")
PY
}
run one 1 1x1x1 "$threads"
run eight 8 2x2x2 1
/usr/bin/python3 "$here/top_k_brute.py" g.h5 link.h5 one.h5 nodes.txt
/usr/bin/python3 "$here/top_k_brute.py" g.h5 link.h5 eight.h5 nodes.txt
