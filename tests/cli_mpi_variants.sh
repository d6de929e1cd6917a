#!/usr/bin/env bash
# Communication variants (docs/communication-variants.md) on the bundled Cora under MPI:
# --comm-variant rs-ag / rs-ag-reuse and --agg-chunks K must train exactly like the baseline
# (per-epoch losses within 1e-5 relative, identical accuracies) on every grid, and move the
# bytes the analysis says: rs-ag < baseline iff the axis the last layer's output is replicated on
# (i aggregating first, o transforming first) has more than one rank (equal otherwise);
# rs-ag-reuse < rs-ag iff some gather it skips (the features over layer 0's replication axis,
# W over each layer's Linear3D row axis: d aggregating first, o transforming first) runs over
# more than one rank; --agg-chunks never changes the bytes. Layer orders: auto (Cora's widths:
# transform first where the layer narrows), and each forced order on one grid.
# Usage: cli_mpi_variants.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! command -v mpirun >/dev/null; then
  echo "mpirun not found: skipped"
  echo "0 passed, 0 failed"
  exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

passed=0
failed=0
run() {  # run NAME GRID LAYERS ORDER ARGS...
  local name=$1 grid=$2 layers=$3 order=$4
  shift 4
  local np=$(($(echo "$grid" | tr 'x' '*')))
  if ! mpirun -np "$np" "$plexus" train --data "$src/data/cora.h5" --grid "$grid" --layers "$layers" --threads 1 \
    --layer-order "$order" --epochs 3 --quiet --metrics "$work/$name.jsonl" "$@" >"$work/$name.log" 2>&1; then
    echo "FAIL: $name: plexus exited non-zero"
    tail -5 "$work/$name.log"
    return 1
  fi
}

# Grid, depth and layer order: both depths, replication axes of the last layer's output of 1 to 4
# ranks, gather axes of 1 to 4.
for config in 2x2x2:3:auto 1x2x3:2:auto 1x1x4:3:auto 4x1x1:2:auto \
  2x2x2:3:aggregate-first 3x2x1:3:transform-first; do
  IFS=: read -r grid layers order <<<"$config"
  {
    tag="${grid}_L${layers}_${order}"
    ok=1
    run "base_$tag" "$grid" "$layers" "$order" || ok=0
    run "rsag_$tag" "$grid" "$layers" "$order" --comm-variant rs-ag || ok=0
    run "reuse_$tag" "$grid" "$layers" "$order" --comm-variant rs-ag-reuse --agg-chunks 3 || ok=0
    run "chunk_$tag" "$grid" "$layers" "$order" --agg-chunks 4 || ok=0
    if [ $ok = 1 ] && $py - "$work" "$tag" "$grid" "$layers" "$order" <<'PY'; then
import json, sys
work, tag, grid, layers, order = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
X, Y, Z = (int(v) for v in grid.split("x"))
dim = {"X": X, "Y": Y, "Z": Z}
# Cora's widths, each layer's order (auto: transform first where the layer narrows) and the
# roles (o, i, d) that follow (include/plexus/process_grid.hpp, layer_roles).
dims = [1433] + [16] * (layers - 1) + [7]
tf = [order == "transform-first" or (order == "auto" and dims[l + 1] < dims[l]) for l in range(layers)]
roles = [("X", "Y", "Z")]
for l in range(1, layers):
    o, i, d = roles[-1]
    rows, feat, repl = (d, i, o) if tf[l - 1] else (d, o, i)
    roles.append((rows, repl, feat) if tf[l] else (rows, feat, repl))
def load(name):
    rows = [json.loads(l) for l in open(f"{work}/{name}_{tag}.jsonl")]
    return rows[1:-1], rows[-1]  # epochs (after the header), summary
base, sb = load("base")
errors = []
def total(rows):
    return sum(r["comm_bytes"]["total"] for r in rows)
def same(a, b):  # the byte counts are sums of 2(p-1)/p·n terms: equal up to float rounding
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)
for name in ("rsag", "reuse", "chunk"):
    rows, s = load(name)
    for a, b in zip(base, rows):
        rel = abs(a["loss"] - b["loss"]) / abs(a["loss"])
        if rel > 1e-5:
            errors.append(f"{name}: epoch {a['epoch']} loss {b['loss']} vs baseline {a['loss']} (rel {rel:.2e})")
        for k in ("train_acc", "val_acc", "test_acc"):
            if a[k] != b[k]:
                errors.append(f"{name}: epoch {a['epoch']} {k} {b[k]} vs baseline {a[k]}")
    if s["test_acc"] != sb["test_acc"] or s["best_epoch"] != sb["best_epoch"]:
        errors.append(f"{name}: final result differs from the baseline")
rsag, _ = load("rsag"); reuse, _ = load("reuse"); chunk, _ = load("chunk")
o_L, i_L, _ = roles[-1]
last_i = dim[o_L if tf[-1] else i_L]  # the last layer's output replication axis
gathers = [roles[0][1] if tf[0] else roles[0][2]]  # the features'
gathers += [roles[l][0] if tf[l] else roles[l][2] for l in range(layers)]  # each W's
any_d = any(dim[a] > 1 for a in gathers)
if not same(total(chunk), total(base)):
    errors.append(f"agg-chunks changed the bytes: {total(chunk)} vs {total(base)}")
if last_i > 1 and not total(rsag) < total(base) * (1 - 1e-9):
    errors.append(f"rs-ag bytes {total(rsag)} not below baseline {total(base)} (last layer output over {last_i})")
if last_i == 1 and not same(total(rsag), total(base)):
    errors.append(f"rs-ag bytes {total(rsag)} differ from baseline {total(base)} with one replica of the output")
if any_d and not total(reuse) < total(rsag) * (1 - 1e-9):
    errors.append(f"rs-ag-reuse bytes {total(reuse)} not below rs-ag {total(rsag)}")
if not any_d and not same(total(reuse), total(rsag)):
    errors.append(f"rs-ag-reuse bytes {total(reuse)} differ from rs-ag {total(rsag)} with no gather axis > 1")
for e in errors:
    print(f"FAIL {tag}: {e}")
print(f"{tag}: bytes/3 epochs baseline {total(base):.0f}, rs-ag {total(rsag):.0f} "
      f"({100 * (1 - total(rsag) / total(base)):.1f} % less), rs-ag-reuse {total(reuse):.0f} "
      f"({100 * (1 - total(reuse) / total(base)):.1f} % less)")
sys.exit(1 if errors else 0)
PY
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
    fi
  }
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
