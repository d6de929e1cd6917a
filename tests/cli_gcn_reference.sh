#!/usr/bin/env bash
# `plexus train` against an independent float64 GCN trainer (tests/gcn_reference.py): after one
# epoch of the engine (its saved model, weights and Adam moments), the reference trains the
# other epochs itself and every epoch line of the engine's metrics must match it: the training
# loss and the validation loss within 1e-5 relative, each split's accuracy within one node.
# The cases run what the other tests leave at one value: several threads (the threaded SpMM,
# loss and optimizer paths), dropout other than 0.5 (at 0.5, 1/p = 1/(1-p) and keeping p of the
# values looks like keeping 1-p), weight decay large enough to matter, AdamW, three layers, and
# split grids (every axis, the rs-ag loss on row slices, Â read in small stripes) — so a wrong split's accuracy, a wrong
# optimizer or a wrong dropout cannot pass, on one rank or many.
# Usage: cli_gcn_reference.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
epochs=8

# check NAME LAUNCH... -- TRAIN_OPTIONS...: one epoch saved, $epochs epochs of metrics, compared.
check() {
  local name=$1; shift
  local launch=()
  while [ "$1" != "--" ]; do launch+=("$1"); shift; done
  shift
  if "${launch[@]}" "$plexus" train --data "$cora" --epochs 1 --quiet --save-model "$work/$name.h5" "$@" >/dev/null 2>"$work/err" &&
    "${launch[@]}" "$plexus" train --data "$cora" --epochs "$epochs" --quiet --metrics "$work/$name.jsonl" "$@" >/dev/null 2>>"$work/err"; then
    if out=$($py "$src/tests/gcn_reference.py" "$cora" "$work/$name.h5" "$work/$name.jsonl"); then
      ok; echo "ok   $name: $out"
    else
      fail "$name"; echo "$out"
    fi
  else
    fail "$name"; echo "  plexus train failed:"; tail -n 3 "$work/err"
  fi
}

check threads2-dropout0.3 -- --threads 2 --dropout 0.3 --weight-decay 0.05 --seed 3
check adamw-3-layers-dropout0.2 -- --threads 2 --dropout 0.2 --adamw --weight-decay 0.1 --layers 3 --hidden 24 --lr 0.02
check no-dropout -- --threads 2 --dropout 0 --hidden 32
if command -v mpirun >/dev/null; then
  check grid-2x1x2 mpirun -np 4 -- --grid 2x1x2 --threads 1 --dropout 0.3 --weight-decay 0.05 --seed 9
  check grid-1x3x1-rs-ag-3-layers mpirun -np 3 -- --grid 1x3x1 --threads 1 --dropout 0.7 --layers 3 --comm-variant rs-ag
  # Cora read in stripes of 333 edges per rank block (PLEXUS_READ_EDGES), joined.
  check grid-2x2x1-shard-adj-adamw-striped mpirun -np 4 -x PLEXUS_READ_EDGES=333 -- --grid 2x2x1 --threads 1 --dropout 0.3 \
    --adamw --weight-decay 0.1 --shard-adj
fi
echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
