#!/usr/bin/env bash
# `plexus plan` on one process (docs/plan.md): numeric options typed and range-checked (exit 2,
# one line naming the option), the graph as positional argument or --data, the options of
# `train` that change bytes (--comm-variant, --agg-chunks, --layer-order) echoed and applied, --memory-per-rank
# keeping exactly the grids that fit, and every table column and JSON field documented (the
# --help footer and docs/plan.md). Bytes against measurement: cli_mpi_comm_model.sh.
# Usage: cli_plan.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
source "$src/tests/lib_cli.sh"

# ---- options: typed, in range, one line naming the option ------------------------------------
expect_error ranks-missing "--ranks: is required" plan
expect_error ranks-text "--ranks" plan --ranks abc
expect_error ranks-fraction "--ranks" plan --ranks 2.5
expect_error ranks-zero "--ranks: must be between 1 and 65536" plan --ranks 0
expect_error ranks-per-node "--ranks-per-node: must be between 1 and 65536" plan --ranks 4 --ranks-per-node 0
expect_error layers "--layers: must be between 1 and 64" plan --ranks 4 --layers 65
expect_error hidden-fraction "--hidden" plan --ranks 4 --hidden 1.5
expect_error hidden-zero "--hidden: must be at least 1" plan --ranks 4 --hidden 0
expect_error dropout-range "--dropout: must be in \[0, 1)" plan --ranks 4 --dropout 1
expect_error dropout-text "--dropout" plan --ranks 4 --dropout half
expect_error spmm "--spmm-gbs: must be a positive number" plan --ranks 4 --spmm-gbs 0
expect_error gemm "--gemm-gflops" plan --ranks 4 --gemm-gflops nan
expect_error bandwidth "--bandwidth" plan --ranks 4 --bandwidth 1,x
expect_error variant "--comm-variant" plan --ranks 4 --comm-variant rs
expect_error chunks-zero "--agg-chunks: must be between 1 and 4096" plan --ranks 4 --agg-chunks 0
expect_error chunks-text "--agg-chunks" plan --ranks 4 --agg-chunks two
expect_error layer-order "--layer-order" plan --ranks 4 --layer-order sideways
expect_error budget "--memory-per-rank" plan --ranks 4 --memory-per-rank 12Q
expect_error data-missing "nope.h5" plan "$work/nope.h5" --ranks 2
expect_error model-unknown "--model: 'gpt' is not one of gcn, sage, gin, gat, " plan --ranks 4 --model gpt
expect_error aggregator-of-gin "--aggregator: only with --model sage" plan --ranks 4 --model gin --aggregator sum
expect_error gin-eps-of-gcn "--gin-eps: only with --model gin" plan --ranks 4 --gin-eps 0.5
expect_error gin-eps-range "--gin-eps: must be a number in .-1e+06, 1e+06." plan --ranks 4 --model gin --gin-eps 1e9
expect_error heads-of-sage "--heads: only with --model gat" plan --ranks 4 --model sage --heads 4
expect_error out-heads-range "--out-heads: must be between 1 and 1024" plan --ranks 4 --model gat --out-heads 2000
expect_error hidden-of-heads "--hidden: must be a multiple of --heads (5)" plan --ranks 4 --model gat --heads 5
expect_error gat-chunks "--agg-chunks: is not supported for --model gat yet" plan --ranks 4 --model gat --agg-chunks 2
expect_error gpt-ranks-missing "--ranks: is required" plan gpt
expect_error gpt-ranks "--ranks" plan gpt --ranks 1.5
expect_error gpt-gemm "--gemm-gflops: must be a positive number" plan gpt --ranks 2 --gemm-gflops -1

# ---- what plan prints -------------------------------------------------------------------------
run() {  # run NAME ARGS...: plexus plan ARGS > $work/NAME, or a failure
  local name=$1; shift
  "$plexus" plan "$@" >"$work/$name" 2>"$work/$name.err" || { fail "plan $*"; cat "$work/$name.err"; }
}
run positional "$cora" --ranks 6 --json
run option --data "$cora" --ranks 6 --json
run default --ranks 6 --json
# (MPI's all-reduces, whose bytes chunks do not change: the default row-sparse sums own blocks of
# each chunk's rows, and choose their form per chunk.)
for v in baseline rs-ag rs-ag-reuse; do
  run "$v-1" --ranks 8 --layers 3 --comm-variant "$v" --sparse-comm off --json
  run "$v-4" --ranks 8 --layers 3 --comm-variant "$v" --agg-chunks 4 --sparse-comm off --json
done
run table --ranks 8 --layers 3 --comm-variant rs-ag --agg-chunks 4 --memory-per-rank 2G
for o in auto aggregate-first transform-first; do
  run "order-$o" --ranks 4 --layers 3 --layer-order "$o" --json
done
"$plexus" plan --help >"$work/help" 2>&1 || fail "plan --help"
# The budget: the median predicted memory of the 8-rank grids, in bytes.
budget=$($py -c 'import json,sys; m=sorted(g["memory_bytes_per_rank"] for g in json.load(open(sys.argv[1]))["grids"]); print(int(m[len(m)//2]))' "$work/baseline-1")
run budget --ranks 8 --layers 3 --memory-per-rank "$budget" --json
run none --ranks 8 --memory-per-rank 1K
run none-json --ranks 8 --memory-per-rank 1K --json

if msg=$($py - "$work" "$src/docs/plan.md" "$budget" <<'PY'
import json, re, sys
work, doc_path, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
doc = open(doc_path).read()
load = lambda name: json.load(open(f"{work}/{name}"))
bad = []
# The graph: positional = --data = the bundled default (its grids; the path is printed as given).
if load("positional") != load("option"): bad.append("positional argument and --data differ")
if load("default")["grids"] != load("option")["grids"]: bad.append("default graph is not the bundled Cora")
# Variants and chunks are echoed, and chunks change calls, not bytes.
for v in ("baseline", "rs-ag", "rs-ag-reuse"):
    one, four = load(f"{v}-1"), load(f"{v}-4")
    if (one["model"]["comm_variant"], one["model"]["agg_chunks"], four["model"]["agg_chunks"]) != (v, 1, 4):
        bad.append(f"{v}: model says {one['model']['comm_variant']}, chunks {one['model']['agg_chunks']}/{four['model']['agg_chunks']}")
    by_grid = {g["grid"]: g for g in one["grids"]}
    # The axes some SpMM sums over, from the layers' orders (layer_roles): each layer's o, and its
    # d where it has a backward SpMM (every layer but an aggregate-first layer 0). Chunks add
    # ring steps on a grid where one of them has more than one rank.
    tf = [o == "transform-first" for o in four["layer_orders"]]
    roles = [("x", "y", "z")]
    for l in range(1, len(tf)):
        o, i, d = roles[-1]
        rows, feat, repl = (d, i, o) if tf[l - 1] else (d, o, i)
        roles.append((rows, repl, feat) if tf[l] else (rows, feat, repl))
    summed = {r[0] for r in roles} | {r[2] for l, r in enumerate(roles) if l > 0 or tf[l]}
    for g in four["grids"]:
        h = by_grid[g["grid"]]
        if g["bytes_steady"] != h["bytes_steady"] or g["bytes_first"] != h["bytes_first"]:
            bad.append(f"{v} {g['grid']}: --agg-chunks 4 changed the bytes")
        size = dict(zip("xyz", map(int, g["grid"].split("x"))))
        if any(size[a] > 1 for a in summed) and not g["latency_steps_per_rank"] > h["latency_steps_per_rank"]:
            bad.append(f"{v} {g['grid']}: --agg-chunks 4 did not add ring steps")
# The layers' orders: echoed, and each layer's listed (Cora 1433 -> 16 -> 16 -> 7: auto
# transforms first where the layer narrows); another order is another plan.
orders = {o: load(f"order-{o}") for o in ("auto", "aggregate-first", "transform-first")}
T, A = "transform-first", "aggregate-first"
for o, want in (("auto", [T, A, T]), ("aggregate-first", [A, A, A]), ("transform-first", [T, T, T])):
    if orders[o]["model"]["layer_order"] != o or orders[o]["layer_orders"] != want:
        bad.append(f"--layer-order {o}: {orders[o]['model']['layer_order']}, {orders[o]['layer_orders']}")
if orders["auto"]["grids"] == orders["aggregate-first"]["grids"]:
    bad.append("--layer-order auto and aggregate-first predict the same")
if not any(l.startswith("layer order auto: 1433->16 transform-first, 16->16 aggregate-first, 16->7 transform-first")
           for l in open(f"{work}/table").read().splitlines()[:5]):
    bad.append("the text does not list each layer's order")
base = {g["grid"]: g["bytes_steady"]["total"] for g in load("baseline-1")["grids"]}
if all(g["bytes_steady"]["total"] == base[g["grid"]] for g in load("rs-ag-1")["grids"]):
    bad.append("rs-ag predicts the baseline's bytes on every grid")
# The budget keeps exactly the grids that fit, in the same order.
want = [g["grid"] for g in load("baseline-1")["grids"] if g["memory_bytes_per_rank"] <= budget]
got = [g["grid"] for g in load("budget")["grids"]]
if got != want or not 0 < len(got) < len(base): bad.append(f"--memory-per-rank {budget:.0f}: {got}, wanted {want}")
if load("budget")["model"]["memory_per_rank_bytes"] != budget: bad.append("memory_per_rank_bytes not echoed")
if load("none-json")["grids"] != []: bad.append("--memory-per-rank 1K listed grids")
if "no grid fits" not in open(f"{work}/none").read(): bad.append("--memory-per-rank 1K: no 'no grid fits' line")
# Every JSON field is documented in docs/plan.md as `field`.
def keys(obj, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(k)
            keys(v, out)
    elif isinstance(obj, list):
        for v in obj: keys(v, out)
    return out
for k in sorted(keys(load("rs-ag-4"), set())):
    if f"`{k}`" not in doc and f'"{k}"' not in doc: bad.append(f"JSON field {k} not in docs/plan.md")
# Every column of the table is in the --help footer and in docs/plan.md; nothing else is.
text = open(f"{work}/table").read().splitlines()
if not any("rs-ag" in l and "4 aggregation chunks" in l and "fit" in l for l in text[:3]):
    bad.append("the header does not show the variant, the chunks and the budget")
header = next(l for l in text if l.lstrip().startswith("rank"))
columns = ["rank", "grid", "epoch ms", "comm ms", "compute ms", "first ms", "MB/epoch", "x MB", "y MB", "z MB",
           "MB/rank", "steps", "intra(xyz)"]
rest = header
for c in columns:
    if c not in rest: bad.append(f"column {c} not in the table")
    rest = rest.replace(c, "", 1)
if rest.strip(): bad.append(f"columns not in this test's list (document them): {rest.split()}")
footer = open(f"{work}/help").read().split("Columns", 1)[-1]
for c in columns:
    if c not in footer: bad.append(f"column {c} not in plan --help's footer")
    if f"`{c}`" not in doc: bad.append(f"column {c} not in docs/plan.md")
if bad:
    print("; ".join(bad))
    sys.exit(1)
PY
); then ok; else fail "plan output: $msg"; fi

# The GNN kind and its options are echoed (text and JSON) and reach the dry run's model
# (whose bytes follow the kind once the engine builds SAGE and GIN: cli_gnn_models.sh).
if "$plexus" plan --ranks 4 --model sage --aggregator sum --normalize >"$work/sage" 2>&1 &&
   grep -q "^model sage (aggregator sum, normalize on), comm variant baseline" "$work/sage" &&
   "$plexus" plan --ranks 4 >"$work/gcn" 2>&1 && grep -q "^model gcn, comm variant baseline" "$work/gcn" &&
   "$plexus" plan --ranks 4 --model gin --gin-eps 0.5 --train-eps --json >"$work/gin.json" 2>&1 &&
   $py -c "
import json
d = json.load(open('$work/gin.json'))
assert d['gnn'] == {'model': 'gin', 'gin_eps': 0.5, 'train_eps': True}, d['gnn']
assert json.load(open('$work/default'))['gnn'] == {'model': 'gcn'}
"; then ok; else fail "plan --model"; cat "$work/sage" "$work/gcn" "$work/gin.json"; fi

# A data path that is not UTF-8 (any bytes may name a file): --json has it with \xHH escapes,
# as the error line writes it (was: exit 1 from the JSON library).
bad=$'dir\xff'
mkdir -p "$work/$bad"
cp "$cora" "$work/$bad/c"$'\xfe'".h5"
if "$plexus" plan --ranks 4 --data "$work/$bad/c"$'\xfe'".h5" --json >"$work/json" 2>"$work/err" &&
   $py -c "import json,sys; d = json.load(open('$work/json')); sys.exit(not d['data'].endswith('dir\\\\xFF/c\\\\xFE.h5'))"
then ok; else fail "plan --json, non-UTF-8 path"; cat "$work/err"; fi

# Plans at many ranks: a GPT plan of 4,096 ranks (ZeRO replicas share dry runs) answers, and its
# choices are those of every replica count, grid and stage (docs/dry-run.md).
if timeout 300 "$plexus" plan gpt --ranks 4096 --json >"$work/json" 2>"$work/err" &&
   $py -c "
import json
d = json.load(open('$work/json'))
from math import comb
# replicas 2^k, grids of 2^(12-k) ranks (comb(14 - k, 2) of them), ZeRO stages 0-3 when k > 0
assert d['ranks'] == 4096 and len(d['grids']) == sum(comb(14 - k, 2) * (4 if k else 1) for k in range(13)), len(d['grids'])
assert any(g['dp'] == 4096 and g['zero'] == 3 for g in d['grids']), 'no ZeRO-3 over 4096 replicas'
"; then ok; else fail "plan gpt --ranks 4096"; cat "$work/err"; fi

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
