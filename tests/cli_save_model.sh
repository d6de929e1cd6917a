#!/usr/bin/env bash
# plexus train --save-model FILE (docs/gcn-model.md): the file holds the whole weights and Adam
# state by global index, the same (to float tolerance) from a 4-rank grid as from one rank;
# a bad target is refused before training.
# Usage: cli_save_model.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"

if "$plexus" train --epochs 3 --threads 2 --quiet --save-model "$work/one.h5" >"$work/out" 2>&1 &&
   timeout 120 mpirun -np 4 "$plexus" train --grid 2x1x2 --epochs 3 --threads 1 --quiet \
     --save-model "$work/four.h5" >"$work/out4" 2>&1; then
  if $py - "$work/one.h5" "$work/four.h5" <<'PY'; then ok; else fail "model file contents"; fi
import sys, h5py, numpy as np
one, four = (h5py.File(p, "r") for p in sys.argv[1:3])
assert one.attrs["format"] == "plexus-gcn", one.attrs["format"]
assert int(one.attrs["version"]) == 1 and int(one.attrs["layers"]) == 2 and int(one.attrs["epochs_done"]) == 3
assert list(one["dims"][()]) == [1433, 16, 7], one["dims"][()]
shapes = {"layer0/weight": (1433, 16), "layer0/bias": (1, 16), "layer1/weight": (16, 7), "layer1/bias": (1, 7)}
for group in ("value", "adam_m", "adam_v"):
    for name, shape in shapes.items():
        a, b = one[group][name][()], four[group][name][()]
        assert a.shape == shape and a.dtype == np.float32, (group, name, a.shape, a.dtype)
        assert np.all(np.isfinite(a)), (group, name)
        err = np.max(np.abs(a - b) / np.maximum(1e-3, np.abs(a)))
        assert err < 1e-3, (group, name, err)
    assert np.any(one[group]["layer0/weight"][()] != 0), group
assert np.all(one["adam_v"]["layer0/weight"][()] >= 0)
PY
else
  fail "train --save-model"; cat "$work/out" "$work/out4"
fi

cp "$cora" "$work/g.h5"
expect_error "model over its data" "is the same file as the input" train --data "$work/g.h5" --epochs 1 --save-model "$work/g.h5"
expect_error "model in a missing directory" "$work/none" train --epochs 100000 --save-model "$work/none/m.h5"
expect_error "model over the metrics" "name the same file" train --epochs 1 --metrics "$work/x.h5" --save-model "$work/x.h5"
[[ -e "$work/none" ]] && fail "missing directory created"

echo "cli_save_model: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
