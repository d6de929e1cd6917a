#!/usr/bin/env bash
# Sharded Â (train --shard-adj): each Â block split over its layer's i axis and all-gathered
# per SpMM. The gathered block is the replicated one, entry for entry, so on every grid the
# losses and accuracies must equal those of the replicated layout bit for bit — read from a
# plain file (normalised by the loader), from a prepared two-order file, and cut in memory;
# with uneven sizes, 2-4 layers, blocked aggregation and the comm variants; and on a grid
# with more ranks on an axis than a block has rows (empty parts).
# Usage: cli_mpi_shard_adj.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
if ! command -v mpirun >/dev/null; then
  echo "mpirun not found: skipped"
  echo "0 passed, 0 failed"
  exit 0
fi

"$plexus" prepare "$cora" -o "$work/cora_perm.h5" --balance permute -q || fail prepare
# N = 1000 and 37 features: blocks uneven on every grid below.
"$plexus" generate sbm --nodes 1000 --classes 5 --feature-width 37 --avg-degree 12 -o "$work/sbm.h5" >/dev/null || fail generate
$py -c "
import h5py, numpy as np, sys
n = 3  # fewer rows than ranks on the axis of 1x4x1: some parts are empty
with h5py.File(sys.argv[1], 'w') as h:
    h.attrs['format'] = 'plexus-graph'; h.attrs['format_version'] = np.int32(1)
    h.attrs['num_nodes'] = np.int64(n); h.attrs['num_features'] = np.int64(2)
    h.attrs['num_classes'] = np.int32(2); h.attrs['directed'] = np.uint8(0)
    h['graph/indptr'] = np.array([0, 1, 3, 4], np.int64); h['graph/indices'] = np.array([1, 0, 2, 1], np.int64)
    h['features'] = np.arange(2 * n, dtype=np.float32).reshape(n, 2); h['labels'] = np.array([0, 1, 0], np.int32)
    for m in ('train', 'val', 'test'): h['masks/' + m] = np.ones(n, np.uint8)
" "$work/tiny.h5"

# same A B: identical losses and accuracies in every epoch.
same() {
  $py -c "
import json, sys
key = lambda f: [(r['loss'], r['train_acc'], r['val_acc'], r['test_acc']) for r in map(json.loads, open(f)) if 'epoch' in r]
a, b = key(sys.argv[1]), key(sys.argv[2])
assert a and a == b, (a[:2], b[:2])
s = json.loads(open(sys.argv[2]).read().splitlines()[-1])
assert s['shard_adj'] is True, s
" "$1" "$2"
}

# data  grid  layers  extra options
cases=(
  "cora.h5 2x2x2 2"
  "cora.h5 3x1x2 3 --agg-chunks 3"
  "cora_perm.h5 2x3x1 4 --comm-variant rs-ag"
  "cora_perm.h5 1x1x4 3 --comm-variant rs-ag-reuse --agg-chunks 2"
  "sbm.h5 3x2x1 3"
  "sbm.h5 1x3x1 2 --dropout 0"
  "sbm.h5 2x1x3 2 --balance permute"
  "tiny.h5 1x4x1 2"
)
for c in "${cases[@]}"; do
  read -r data grid layers extra <<<"$c"
  IFS=x read -r gx gy gz <<<"$grid"
  np=$((gx * gy * gz))
  f=$work/$data
  [ "$data" = cora.h5 ] && f=$cora
  tag="$data $grid L$layers $extra"
  for mode in replicated sharded; do
    flag=""
    [ $mode = sharded ] && flag=--shard-adj
    # shellcheck disable=SC2086
    if ! mpirun -np "$np" "$plexus" train --data "$f" --grid "$grid" --layers "$layers" --epochs 6 --threads 1 \
      --hidden 8 -q $extra $flag --metrics "$work/$mode.jsonl" >/dev/null 2>"$work/err"; then
      fail "$tag $mode"; cat "$work/err"
    fi
  done
  if same "$work/replicated.jsonl" "$work/sharded.jsonl" 2>"$work/err"; then ok; echo "ok   $tag"
  else fail "$tag: sharded differs from replicated"; tail -n 2 "$work/err"; fi
done

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
