#!/usr/bin/env bash
# Red-team sweep of the plexus command line (issue "Hardening"): no input, option, file-system
# state or launch may crash the engine, hang it, damage a file, or report a wrong answer as
# success.
#
# Usage: scripts/red-team.sh [PLEXUS_BINARY]            (default: build/plexus of this checkout)
#   RED_TEAM_TIMEOUT=S  seconds allowed per case (default 30; `timeout -k 5 S`)
#   RED_TEAM_MPI=0      skip the cases run under `mpirun -np 2|4 --oversubscribe`
#                       (they run by default when mpirun exists)
#   RED_TEAM_PART=NAME  run only the cases of scripts/red-team.d/NAME.sh (no built-in cases)
#
# The cases of this file come first, then every scripts/red-team.d/*.sh in name order (each one
# class of problems; they use the runner and the inputs made here).
#
# Every case runs in a fresh scratch directory (mktemp -d, removed at the end) with its inputs
# made there: files from `plexus generate|prepare|gpt train --save`, edits of them made with
# h5py, byte flips, truncations, FIFOs, symbolic links, unreadable files (as `nobody` when run as
# root). One table row per case: id, subcommand, description, expected and observed exit code,
# verdict; then "N cases, P passed, F failed". Exit status 1 when any case fails.
#
# Verdicts:
#   expected 2    a refusal: exit code 2 and standard error exactly ONE line
#                 `plexus: error: ...` naming the problem (the option or file); no output file
#                 appears or changes. Under MPI the line must appear once for the whole job.
#   expected 0    a valid edge case: exit code 0 and a sanity check of its output.
#   expected 0|2  either of the above (e.g. a byte flip that may land in plain data), never a
#                 crash, a hang or an internal error.
#   expected SIG  a run interrupted by SIGINT/SIGTERM/SIGHUP ends by that signal (or exit 2);
#                 `train` ends its epoch first and exits 128+signal with its outputs complete
#                 (docs/checkpoints.md).
# Every case also fails on a signal exit (>= 128, a core dump), a timeout (124/137), exit 1 (an
# internal error), a `*.tmp.*` file left anywhere in the scratch directory, or a changed input
# (every input is checksummed before and after each case).
set -u
ulimit -c 0  # a crash is seen in the exit code; no core files

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
plexus=${1:-$repo/build/plexus}
[[ $plexus == /* ]] || plexus=$PWD/$plexus
[[ -x $plexus ]] || { echo "red-team: $plexus is not an executable" >&2; exit 1; }
py=/usr/bin/python3
T=${RED_TEAM_TIMEOUT:-30}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

W=$(mktemp -d "${TMPDIR:-/tmp}/plexus-red-team.XXXXXX")
chmod 755 "$W"  # the permission cases run as `nobody`
bg_pids=()
cleanup() {
  # Only the script itself: a watchdog subshell killed just after its fork can still run the
  # script's traps before bash resets them in the child, and must not remove the scratch folder.
  [[ $BASHPID == "$$" ]] || return 0
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
  chmod -R u+rwX "$W" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$W" || exit 1
IN=$W/in OUT=$W/out LOG=$W/log
mkdir -p "$IN" "$OUT" "$LOG"

# Run as an ordinary user for the permission cases: `nobody` when root, else ourselves.
if [[ $(id -u) -eq 0 ]]; then
  if command -v runuser >/dev/null; then AS_USER=(runuser -u nobody --); else AS_USER=(); fi
else
  AS_USER=(env)
fi

# ---- the case runner ----------------------------------------------------------------------------
n=0 npass=0 nfail=0
failures=()
rows=()

state_of_inputs() {  # names, types and contents of every input (FIFOs and links by type only)
  { find "$IN" "$repo/data" -printf '%y %m %p\n' | sort
    find "$IN" "$repo/data" -type f -print0 | sort -z | xargs -0 -r md5sum 2>/dev/null; } | md5sum
}
state_of_outputs() {
  { find "$OUT" -printf '%y %p\n' | sort
    find "$OUT" -type f -print0 | sort -z | xargs -0 -r md5sum; } | md5sum
}

record() {  # record SUB DESC EXPECTED RC VERDICT [DETAIL]
  n=$((n + 1))
  local id
  id=$(printf 'R%03d' "$n")
  local row
  row=$(printf '%-5s %-17s %-62.62s %-6s %-5s %s' "$id" "$1" "$2" "$3" "$4" "$5")
  echo "$row"
  if [[ $5 == PASS ]]; then npass=$((npass + 1)); else
    nfail=$((nfail + 1)); failures+=("$row"$'\n'"      ${6:-}")
  fi
}

# execute EXPECTED SUB DESC WANT ARGS...: runs the case; env: AS (1: as an ordinary user),
# STDIN (a file), NP (ranks under mpirun), CHECK (a shell condition for expected 0), CPU
# (seconds of CPU the case may use, all threads: RLIMIT_CPU, past which SIGXCPU fails it).
execute() {
  local expect=$1 sub=$2 desc=$3 want=$4; shift 4
  local words=() prefix=() rc detail="" verdict=PASS
  [[ $sub == plexus ]] || read -ra words <<<"$sub"
  if [[ ${AS:-} == 1 ]]; then
    if [[ $(id -u) -eq 0 && ${#AS_USER[@]} -eq 0 ]]; then
      record "$sub" "$desc" "$expect" "-" "PASS" ; echo "      (skipped: no runuser)"; return; fi
    prefix=("${AS_USER[@]}")
  fi
  [[ -n ${NP:-} ]] && prefix=(mpirun -np "$NP" "${prefix[@]}")
  [[ -n ${CPU:-} ]] && prefix=(prlimit --cpu="$CPU" "${prefix[@]}")
  local in_before out_before
  in_before=$(state_of_inputs)
  out_before=$(state_of_outputs)
  timeout -k 5 "$T" "${prefix[@]}" "$plexus" "${words[@]}" "$@" <"${STDIN:-/dev/null}" >"$LOG/out" 2>"$LOG/err"
  rc=$?
  local errlines plines
  errlines=$(wc -l <"$LOG/err")
  plines=$(grep -c '^plexus: error: ' "$LOG/err")
  local first
  first=$(grep -m1 -v '^\s*$' "$LOG/err" | cut -c1-200)
  [[ -n ${NP:-} ]] && errlines=$plines  # mpirun adds lines of its own
  refused_ok() { [[ $rc -eq 2 && $errlines -eq 1 && $plines -eq 1 ]] && grep '^plexus: error: ' "$LOG/err" | grep -qF -- "$want"; }
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then verdict=FAIL detail="timeout (hang) after ${T}s"
  elif [[ $rc -ge 128 ]]; then verdict=FAIL detail="killed by signal $((rc - 128)): $first"
  elif [[ $rc -eq 1 ]]; then verdict=FAIL detail="internal error: $first"
  else
    case $expect in
      2) refused_ok || { verdict=FAIL; detail="rc=$rc, $errlines stderr line(s), wanted '$want': $first"; } ;;
      0) if [[ $rc -ne 0 ]]; then verdict=FAIL detail="rc=$rc: $first"
         elif [[ -n ${CHECK:-} ]] && ! eval "$CHECK"; then verdict=FAIL detail="exit 0 but the check failed: $CHECK"; fi ;;
      "0|2") [[ $rc -eq 0 ]] || refused_ok || { verdict=FAIL; detail="rc=$rc, $errlines stderr line(s): $first"; } ;;
    esac
  fi
  if [[ $verdict == PASS ]]; then
    if [[ $(state_of_inputs) != "$in_before" ]]; then verdict=FAIL detail="an input changed"; fi
    if [[ $expect == 2 && $rc -eq 2 && $(state_of_outputs) != "$out_before" ]]; then
      verdict=FAIL detail="refused, but an output appeared or changed"; fi
  fi
  local tmps
  tmps=$(find "$W" -name '*.tmp.*' 2>/dev/null)
  if [[ -n $tmps ]]; then verdict=FAIL detail="temporary file left: $tmps"; find "$W" -name '*.tmp.*' -delete; fi
  record "$sub" "$desc" "$expect" "$rc" "$verdict" "$detail"
}
refuse()  { execute 2 "$@"; }               # refuse SUB DESC WANT ARGS...
accept()  { local c=$3; CHECK=$c execute 0 "$1" "$2" "" "${@:4}"; }  # accept SUB DESC CHECK ARGS...
survive() { execute "0|2" "$1" "$2" "" "${@:3}"; }                   # survive SUB DESC ARGS...

# Checks for accepted cases (stdout of the case is $LOG/out).
said() { grep -Eq -- "$1" "$LOG/out"; }
graph_ok() { "$plexus" inspect "$1" >/dev/null 2>&1; }
jsonl_ok() { $py -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(not r or not r[-1].get("summary"))' "$1" 2>/dev/null; }
# a predict output: row k is node k, its class the argmax of its logits
pred_ok() { $py -c 'import h5py,sys,numpy as n
f=h5py.File(sys.argv[1]); ids=f["node_id"][()]; lg=f["logits"][()]
sys.exit(not ((ids == n.arange(f.attrs["num_nodes"])).all() and (f["class"][()] == lg.argmax(1)).all()))' "$1" 2>/dev/null; }
json_ok() { $py -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }
# accuracies in [0, 1] in a train --metrics file
acc_ok() { $py -c 'import json,sys,math
r=[e for e in map(json.loads, open(sys.argv[1])) if "epoch" in e]
sys.exit(not r or not all(0 <= e[k] <= 1 for e in r for k in ("train_acc","val_acc","test_acc")) or not all(math.isfinite(e["loss"]) for e in r))' "$1" 2>/dev/null; }

# interrupt SUB DESC SIGNAL TARGET WAIT_GLOB ARGS...: starts the command (signals at their
# default actions), waits for WAIT_GLOB to exist (or 1.5 s when it is "-"), sends SIGNAL; the
# run must end by the signal (or exit 2), leaving no temporary file and no TARGET. A TARGET
# written as =FILE must instead exist, a metrics file whose summary says "interrupted": true
# (a graceful stop: train).
interrupt() {
  local sub=$1 desc=$2 sig=$3 target=$4 glob=$5; shift 5
  local words=() rc verdict=PASS detail="" in_before graceful=0
  [[ $target == =* ]] && { graceful=1; target=${target#=}; }
  read -ra words <<<"$sub"
  in_before=$(state_of_inputs)
  $py -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$plexus" "${words[@]}" "$@" </dev/null >"$LOG/out" 2>"$LOG/err" &
  local pid=$! seen=0
  bg_pids+=("$pid")
  if [[ $glob == - ]]; then sleep 1.5; seen=1
  else
    for _ in $(seq 1 2000); do
      compgen -G "$glob" >/dev/null && { seen=1; break; }
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.01
    done
  fi
  kill -s "$sig" "$pid" 2>/dev/null
  ( sleep "$T"; kill -KILL "$pid" 2>/dev/null ) &
  local watchdog=$!
  wait "$pid"; rc=$?
  kill "$watchdog" 2>/dev/null; wait "$watchdog" 2>/dev/null
  local signum
  signum=$(kill -l "$sig")
  if [[ $seen -eq 0 ]]; then verdict=FAIL detail="the run ended (rc=$rc) before it could be interrupted"
  elif [[ $rc -ne $((128 + signum)) && $rc -ne 2 ]]; then verdict=FAIL detail="rc=$rc, wanted $((128 + signum)) (SIG$sig): $(head -1 "$LOG/err")"
  elif [[ $graceful -eq 0 && -e $target ]]; then verdict=FAIL detail="the output $target appeared"
  elif [[ $graceful -eq 1 ]] && ! $py -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(not r[-1].get("interrupted"))' "$target" 2>/dev/null; then
    verdict=FAIL detail="no metrics $target with an interrupted summary"
  elif [[ $(state_of_inputs) != "$in_before" ]]; then verdict=FAIL detail="an input changed"
  fi
  local tmps
  tmps=$(find "$W" -name '*.tmp.*' 2>/dev/null)
  if [[ -n $tmps ]]; then verdict=FAIL detail="temporary file left: $tmps"; find "$W" -name '*.tmp.*' -delete; fi
  record "$sub" "$desc" "SIG$sig" "$rc" "$verdict" "$detail"
}

# ---- inputs ---------------------------------------------------------------------------------------
setup_fail() { echo "red-team: setting up the inputs failed: $*" >&2; exit 1; }
cp "$repo/data/cora.h5" "$IN/cora.h5"
head -c 20000 "$repo/data/tinyshakespeare.txt" >"$IN/text.txt"
"$plexus" generate rmat --scale 6 --edge-factor 4 --feature-width 8 --classes 3 -o "$IN/g.h5" >/dev/null || setup_fail "generate rmat"
"$plexus" prepare "$IN/g.h5" -o "$IN/prep.h5" -q || setup_fail prepare
"$plexus" generate sbm --nodes 200 --classes 3 --feature-width 8 -o "$IN/sbm.h5" >/dev/null || setup_fail "generate sbm"
"$plexus" gpt train --data "$IN/text.txt" --iters 2 --layers 1 --heads 2 --embed 16 --block 16 --batch 2 \
  --eval-every 0 --threads 1 --quiet --save "$IN/model.h5" >/dev/null || setup_fail "gpt train --save"
"$plexus" train --data "$IN/g.h5" --epochs 4 --threads 1 --quiet --save-model "$IN/gcn.h5" --checkpoint-dir "$IN/ckpt" \
  --checkpoint-every 2 >/dev/null || setup_fail "train --save-model --checkpoint-dir"
cp -r "$repo/tests/fixtures/ogb_tiny" "$IN/ogb"
planetoid_src=""
for d in "$repo/../shared/datasets/planetoid" "$repo/shared/datasets/planetoid"; do
  [[ -f $d/ind.cora.graph ]] && { planetoid_src=$d; break; }
done
if [[ -n $planetoid_src ]]; then
  mkdir -p "$IN/pl"
  cp "$planetoid_src"/ind.cora.* "$IN/pl/"
  chmod u+w "$IN"/pl/*
fi

# HDF5 files edited with h5py: wrong dtypes, shapes, attributes, values.
$py - "$IN" <<'PY' || setup_fail "h5py edits"
import shutil, sys
import h5py, numpy as np
d = sys.argv[1]
def mut(base, name, fn):
    shutil.copy(f"{d}/{base}.h5", f"{d}/{name}.h5")
    with h5py.File(f"{d}/{name}.h5", "r+") as f:
        fn(f)
def replace(f, key, data):
    del f[key]; f[key] = data
G = "g"
mut(G, "no-labels", lambda f: f.__delitem__("labels"))
mut(G, "no-graph", lambda f: f.__delitem__("graph"))
mut(G, "float-indptr", lambda f: replace(f, "graph/indptr", f["graph/indptr"][...].astype(np.float32)))
mut(G, "int32-indices", lambda f: replace(f, "graph/indices", f["graph/indices"][...].astype(np.int32)))
mut(G, "f64-features", lambda f: replace(f, "features", f["features"][...].astype(np.float64)))
mut(G, "str-features", lambda f: replace(f, "features", np.array([b"x"] * 64)))
mut(G, "narrow-features", lambda f: replace(f, "features", f["features"][:, :5]))
mut(G, "flat-features", lambda f: replace(f, "features", f["features"][...].ravel()))
mut(G, "3d-features", lambda f: replace(f, "features", f["features"][...].reshape(64, 4, 2)))
def nonmono(f):
    x = f["graph/indptr"][...]; x[3], x[4] = x[4] + 1, x[3]; f["graph/indptr"][...] = x
mut(G, "indptr-nonmono", nonmono)
def badend(f):
    x = f["graph/indptr"][...]; x[-1] -= 1; f["graph/indptr"][...] = x
mut(G, "indptr-end", badend)
def negstart(f):
    x = f["graph/indptr"][...]; x[0] = -1; f["graph/indptr"][...] = x
mut(G, "indptr-negative", negstart)
mut(G, "indptr-short", lambda f: replace(f, "graph/indptr", f["graph/indptr"][:-5]))
def setidx(v):
    def fn(f):
        x = f["graph/indices"][...]; x[0] = v; f["graph/indices"][...] = x
    return fn
mut(G, "col-big", setidx(1 << 20))
mut(G, "col-negative", setidx(-7))
mut(G, "col-max", setidx(np.iinfo(np.int64).max))
def huge_indices(f):
    x = f["graph/indices"][...]; del f["graph/indices"]
    ds = f.create_dataset("graph/indices", shape=(1 << 40,), dtype=np.int64, chunks=(len(x),)); ds[:len(x)] = x
mut(G, "indices-declared-huge", huge_indices)
def setfeat(v, where=(1, 2)):
    def fn(f):
        x = f["features"][...]; x[where] = v; f["features"][...] = x
    return fn
mut(G, "feat-nan", setfeat(np.nan))
mut(G, "feat-inf", setfeat(-np.inf, (0, 0)))
mut(G, "feat-3e38", lambda f: f["features"].__setitem__(Ellipsis, np.full((64, 8), 3e38, np.float32)))
mut(G, "feat-zero", lambda f: f["features"].__setitem__(Ellipsis, np.zeros((64, 8), np.float32)))
def setlabel(v):
    def fn(f):
        x = f["labels"][...]; x[0] = v; f["labels"][...] = x
    return fn
mut(G, "label-3", setlabel(3))
mut(G, "label-minus5", setlabel(-5))
mut(G, "labels-all-unlabelled", lambda f: f["labels"].__setitem__(Ellipsis, -1))
mut(G, "labels-int64", lambda f: replace(f, "labels", f["labels"][...].astype(np.int64)))
mut(G, "labels-scalar", lambda f: replace(f, "labels", np.int32(1)))
mut(G, "train-empty", lambda f: f["masks/train"].__setitem__(Ellipsis, 0))
mut(G, "masks-overlap", lambda f: [f[f"masks/{m}"].__setitem__(Ellipsis, 1) for m in ("train", "val", "test")])
mut(G, "mask-value-7", lambda f: f["masks/train"].__setitem__(slice(0, 3), 7))
mut(G, "mask-short", lambda f: replace(f, "masks/train", f["masks/train"][:-1]))
mut(G, "no-val-mask", lambda f: f.__delitem__("masks/val"))
def attr(key, value):
    return lambda f: f.attrs.__setitem__(key, value)
mut(G, "nodes-65", attr("num_nodes", np.int64(65)))
mut(G, "nodes-negative", attr("num_nodes", np.int64(-1)))
mut(G, "nodes-2e62", attr("num_nodes", np.int64(1 << 62)))
mut(G, "nodes-string", attr("num_nodes", "sixty-four"))
mut(G, "nodes-float", attr("num_nodes", 64.5))
mut(G, "features-0", attr("num_features", np.int64(0)))
mut(G, "classes-0", attr("num_classes", np.int32(0)))
mut(G, "classes-negative", attr("num_classes", np.int32(-3)))
mut(G, "classes-1", attr("num_classes", np.int32(1)))
mut(G, "classes-2e8", attr("num_classes", np.int32(200000000)))
mut(G, "format-other", attr("format", "not-plexus"))
mut(G, "format-version-99", attr("format_version", np.int32(99)))
mut(G, "no-format", lambda f: f.attrs.__delitem__("format"))
mut(G, "values-nan", lambda f: f.__setitem__("graph/values", np.full(290, np.nan, np.float32)))
mut(G, "values-negative", lambda f: f.__setitem__("graph/values", np.full(290, -5.0, np.float32)))
mut(G, "values-short", lambda f: f.__setitem__("graph/values", np.ones(100, np.float32)))
def feat_group(f):
    del f["features"]; f.create_group("features")
mut(G, "features-group", feat_group)
def graph_dataset(f):
    del f["graph"]; f["graph"] = np.zeros(3)
mut(G, "graph-dataset", graph_dataset)
def dangling(f):
    del f["features"]; f["features"] = h5py.SoftLink("/nowhere")
mut(G, "features-dangling-link", dangling)
def external(f):
    del f["features"]; f["features"] = h5py.ExternalLink("missing-file.h5", "/features")
mut(G, "features-external-link", external)
def gz(f):
    x = f["features"][...]; del f["features"]; f.create_dataset("features", data=x, compression="gzip", chunks=(8, 8))
mut(G, "features-gzip", gz)
def lzf(f):
    # Compressible data: a chunk lzf cannot shrink is stored unfiltered (optional filter) and
    # libhdf5 reads it without the filter, correctly.
    x = np.zeros_like(f["features"][...]); del f["features"]; f.create_dataset("features", data=x, compression="lzf", chunks=(8, 8))
mut(G, "features-lzf", lzf)
def no_edges(f):
    replace(f, "graph/indptr", np.zeros(65, np.int64)); replace(f, "graph/indices", np.zeros(0, np.int64))
mut(G, "no-edges", no_edges)
with h5py.File(f"{d}/empty-graph.h5", "w") as f:
    f.attrs["format"] = "plexus-graph"; f.attrs["format_version"] = np.int32(1)
    f.attrs["num_nodes"] = np.int64(0); f.attrs["num_features"] = np.int64(1); f.attrs["num_classes"] = np.int32(2)
    f.attrs["directed"] = np.int8(0); f["graph/indptr"] = np.zeros(1, np.int64); f["graph/indices"] = np.zeros(0, np.int64)
    f["features"] = np.zeros((0, 1), np.float32); f["labels"] = np.zeros(0, np.int32)
    for m in ("train", "val", "test"): f["masks/" + m] = np.zeros(0, np.uint8)
with h5py.File(f"{d}/empty-container.h5", "w") as f:
    pass
# prepared files edited after `plexus prepare`
P = "prep"
mut(P, "prep-masks-p", lambda f: f["prepared/masks_p/train"].__setitem__(Ellipsis, 1))
def notperm(f):
    p = f["prepared/node_id_p"][...]; p[1] = p[0]; f["prepared/node_id_p"][...] = p
mut(P, "prep-not-perm", notperm)
def permrange(f):
    p = f["prepared/node_id_p"][...]; p[0] = 1000; f["prepared/node_id_p"][...] = p
mut(P, "prep-perm-range", permrange)
mut(P, "prep-no-a1", lambda f: f.__delitem__("prepared/a1"))
def a1nan(f):
    v = f["prepared/a1/values"][...]; v[0] = np.nan; f["prepared/a1/values"][...] = v
mut(P, "prep-a1-nan", a1nan)
def a1col(f):
    v = f["prepared/a1/indices"][...]; v[0] = 9999; f["prepared/a1/indices"][...] = v
mut(P, "prep-a1-col", a1col)
mut(P, "prep-balance-bogus", lambda f: f["prepared"].attrs.__setitem__("balance", "bogus"))
mut(P, "prep-parts-huge", lambda f: f["prepared"].attrs.__setitem__("metis_parts", np.int64(1 << 40)))
# GPT checkpoints
M = "model"
mut(M, "model-no-wte", lambda f: f.__delitem__("wte"))
mut(M, "model-wte-shape", lambda f: replace(f, "wte", np.zeros((f["wte"].shape[0], 15), np.float32)))
mut(M, "model-no-vocab", lambda f: f.__delitem__("vocab_chars"))
mut(M, "model-layers-1000", attr("layers", np.int64(1000)))
mut(M, "model-heads-0", attr("heads", np.int64(0)))
mut(M, "model-heads-3", attr("heads", np.int64(3)))
mut(M, "model-block-0", attr("block", np.int64(0)))
mut(M, "model-vocab-mismatch", lambda f: f.attrs.__setitem__("vocab", np.int64(f["wte"].shape[0] + 1)))
mut(M, "model-embed-huge", attr("embed", np.int64(1 << 40)))
mut(M, "model-format-graph", attr("format", "plexus-graph"))
mut(M, "model-version-7", attr("version", np.int64(7)))
mut(M, "model-nan", lambda f: f["wte"].__setitem__(Ellipsis, np.nan))
mut(M, "model-f64", lambda f: replace(f, "wpe", f["wpe"][...].astype(np.float64)))
PY

# Byte flips, truncations and appended garbage of valid HDF5 files.
$py - "$IN" <<'PY' || setup_fail "byte flips"
import sys
d = sys.argv[1]
def flip(src, dst, fracs=(), offsets=(), width=1):
    b = bytearray(open(f"{d}/{src}", "rb").read())
    for o in list(offsets) + [int(x * len(b)) for x in fracs]:
        for k in range(width):
            if o + k < len(b): b[o + k] ^= 0xFF
    open(f"{d}/{dst}", "wb").write(bytes(b))
for src, tag in (("g.h5", "g"), ("prep.h5", "prep"), ("model.h5", "model")):
    flip(src, f"flip-{tag}-sig.h5", offsets=[0])
    flip(src, f"flip-{tag}-sbver.h5", offsets=[8])
    flip(src, f"flip-{tag}-eof.h5", offsets=[40, 41])  # superblock end-of-file address
    for frac in (0.02, 0.05, 0.1, 0.25, 0.5, 0.75, 0.98):
        flip(src, f"flip-{tag}-{int(frac * 100)}.h5", fracs=[frac], width=4)
    b = open(f"{d}/{src}", "rb").read()
    open(f"{d}/trunc-{tag}-half.h5", "wb").write(b[: len(b) // 2])
    open(f"{d}/trunc-{tag}-100.h5", "wb").write(b[:100])
    open(f"{d}/zeroblock-{tag}.h5", "wb").write(b[:2048] + bytes(4096) + b[2048 + 4096:])
open(f"{d}/garbage.h5", "wb").write(bytes((i * 131 + 7) % 256 for i in range(8192)))
open(f"{d}/sig-only.h5", "wb").write(b"\x89HDF\r\n\x1a\n" + bytes(64))
b = open(f"{d}/g.h5", "rb").read()
open(f"{d}/g-trailing.h5", "wb").write(b + b"garbage" * 100)
PY

# Text inputs: edge lists, MatrixMarket, TOML, corpora, token files.
cd "$IN" || exit 1
printf '' >empty.txt
printf '# only comments\n%% and more\n\n' >comments.txt
head -c 4096 /dev/urandom >random.bin
printf '0 1\n1 2\n2 0\n' >tri.txt
printf '0 1\n1 2\nx2 3\n' >bad-token.txt
printf '0 1\n-3 2\n' >negative-id.txt
printf '0 99999999999999999999\n' >overflow-id.txt
printf '0 9223372036854775807\n' >max-id.txt
printf '0 1 nan\n1 2 1\n' >nan-weight.txt
printf '0 1 inf\n' >inf-weight.txt
printf '0 1 1e39\n' >big-weight.txt
printf '0 1 heavy\n' >text-weight.txt
printf '0\n' >one-column.txt
printf '0 1 2 3\n' >four-columns.txt
printf '0 1\r\n1 2\r\n' >crlf.txt
printf '0 1\n1 2' >no-newline.txt
printf '0 \0 1\n' >nul.txt
printf '1e3 2\n' >sci-id.txt
printf '0x10 2\n' >hex-id.txt
printf '+5 -0\n' >signed-id.txt
printf '0,,1\n' >empty-field.txt
printf '3 3\n' >self-loop.txt
printf '0 1\n0 1\n0 1\n' >dupes.txt
head -c 20000000 /dev/zero | tr '\0' '7' >long-line.txt
gzip -c tri.txt >tri.txt.gz
head -c 20 tri.txt.gz >cut.gz
{ head -c 10 tri.txt.gz; head -c 64 /dev/urandom; } >corrupt.gz
printf '\x1f\x8b' >magic-only.gz
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 3 2.0\n' >ok.mtx
gzip -c ok.mtx >ok.mtx.gz
printf '%%%%MatrixMarket matrix coordinate pattern general\n1500000000 1500000000 2\n1 2\n2 3\n' >huge-rows.mtx
printf '%%%%MatrixMarket matrix coordinate pattern general\n3 3 1000000000000\n1 2\n' >huge-nnz.mtx
printf '%%%%MatrixMarket matrix coordinate pattern general\n-3 3 1\n1 2\n' >negative-rows.mtx
printf '%%%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 2\n' >rectangular.mtx
printf '%%%%MatrixMarket matrix coordinate pattern general\n3 3 1\n0 2\n' >zero-index.mtx
printf '%%%%MatrixMarket matrix coordinate pattern general\n3 3 1\n4 2\n' >row-range.mtx
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 nan\n' >nan-value.mtx
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2\n' >missing-value.mtx
printf '%%%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 2 1 0\n' >complex.mtx
printf '%%%%MatrixMarket matrix coordinate real hermitian\n3 3 1\n2 1 1\n' >hermitian.mtx
printf '%%%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n' >array.mtx
printf '%%%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 1 1\n' >skew.mtx
printf '%%%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n2 3\n' >too-many.mtx
printf '%%%%MatrixMarket matrix coordinate pattern general\n' >header-only.mtx
printf '3 3 1\n1 2\n' >no-banner.mtx
printf '%%%%MatrixMarket matrix coordinate pattern general\n3 3\n1 2\n' >short-size.mtx
printf '%%%%MatrixMarket matrix coordinate pattern general\n3 3 0\n' >no-entries.mtx
printf '%%%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 99999999999999999999\n' >int-overflow.mtx
printf '%%%%matrixmarket MATRIX Coordinate Pattern GENERAL\n3 3 1\n1 2\n' >case.mtx
printf 'hidden = 8\nnot_an_option = 3\n' >unknown-key.toml
printf 'hidden = [\n' >broken.toml
printf 'hidden = "eight"\n' >string-int.toml
printf 'hidden = 8.5\n' >float-int.toml
printf 'hidden = [1, 2]\n' >array.toml
printf 'hidden = true\n' >bool-int.toml
printf '[train]\nhidden = 8\n' >table.toml
printf 'hidden = 9223372036854775808\n' >overflow.toml
printf 'hidden = 500000000\n' >huge-hidden.toml
printf 'lr = nan\n' >nan-lr.toml
printf 'lr = inf\n' >inf-lr.toml
printf 'seed = -1\n' >neg-seed.toml
printf 'config = "x.toml"\n' >config-key.toml
printf 'help = true\n' >help-key.toml
printf 'hidden = 8\nhidden = 9\n' >duplicate.toml
printf 'data = ""\n' >empty-data.toml
printf 'grid = 5\n' >int-grid.toml
printf 'epochs = 1\nhidden = 8\nquiet = true\nthreads = 1\n' >good.toml
printf 'quiet = "maybe"\n' >bad-flag.toml
printf 'iters = 1\nlayers = 1\nheads = 2\nembed = 16\nblock = 16\nbatch = 2\neval-every = 0\nthreads = 1\nquiet = true\n' >gpt-good.toml
printf 'heads = 0\n' >gpt-heads0.toml
printf '\xef\xbb\xbfepochs = 1\n' >bom.toml
printf 'short text' >short.txt
printf 'ok \xff\xfe broken' >bad-utf8.txt
printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' >one-char.txt
$py - <<'PY' || setup_fail "token files"
import numpy as np
hdr = np.zeros(256, np.int32); hdr[:3] = [20240520, 1, 4000]
tok = (np.arange(4000) % 100).astype(np.uint16)
open("tok.bin", "wb").write(hdr.tobytes() + tok.tobytes())
h = hdr.copy(); h[0] = 123
open("magic.bin", "wb").write(h.tobytes() + tok.tobytes())
h = hdr.copy(); h[2] = 1 << 30
open("declares-more.bin", "wb").write(h.tobytes() + tok.tobytes())
h = hdr.copy(); h[2] = -5
open("negative-count.bin", "wb").write(h.tobytes() + tok.tobytes())
h = hdr.copy(); h[1] = 9
open("version.bin", "wb").write(h.tobytes() + tok.tobytes())
open("header-only.bin", "wb").write(hdr.tobytes()[:100])
h = hdr.copy(); h[2] = 0
open("zero-tokens.bin", "wb").write(h.tobytes())
PY
# OGB variants
ogb_variant() {  # ogb_variant NAME FILE CONTENT: a copy of the OGB fixture with FILE replaced
  cp -r "$IN/ogb" "$IN/$1"; printf '%b' "$3" | gzip >"$IN/$1/$2"
}
ogb_variant ogb-nodes-garbage raw/num-node-list.csv.gz 'many\n'
ogb_variant ogb-nodes-negative raw/num-node-list.csv.gz '-5\n'
ogb_variant ogb-nodes-huge raw/num-node-list.csv.gz '8000000000\n'
ogb_variant ogb-edge-range raw/edge.csv.gz '0,1\n1,99\n'
ogb_variant ogb-feat-columns raw/node-feat.csv.gz '0.1,0.2,0.3\n1,1\n0,0\n1,1\n0,0\n'
ogb_variant ogb-feat-nan raw/node-feat.csv.gz 'nan,0.2,0.3\n-1.0,0.5,2e-1\n0,0,0\n1,1,1\n0.5,-0.5,0.25\n'
ogb_variant ogb-label-text raw/node-label.csv.gz 'zero\n2\n1\nnan\n2\n'
ogb_variant ogb-label-negative raw/node-label.csv.gz '0\n-2\n1\n1\n2\n'
ogb_variant ogb-train-range split/time/train.csv.gz '0\n77\n'
cp -r "$IN/ogb" "$IN/ogb-no-feat"; rm "$IN/ogb-no-feat/raw/node-feat.csv.gz"
cp -r "$IN/ogb" "$IN/ogb-two-splits"; cp -r "$IN/ogb/split/time" "$IN/ogb-two-splits/split/other"
cp -r "$IN/ogb" "$IN/ogb-plain-edge"; printf 'not gzip at all\n' >"$IN/ogb-plain-edge/raw/edge.csv.gz"
# Planetoid variants (only with the real Cora raw files)
pl_variant() {  # pl_variant NAME COMMAND...: a copy of the Planetoid directory, then COMMAND in it
  local name=$1; shift
  cp -r "$IN/pl" "$IN/$name" && (cd "$IN/$name" && eval "$*")
}
if [[ -n $planetoid_src ]]; then
  pl_variant pl-no-graph 'rm ind.cora.graph'
  pl_variant pl-trunc-x 'head -c 10000 ind.cora.x >t && mv t ind.cora.x'
  pl_variant pl-empty-y ': >ind.cora.y'
  pl_variant pl-garbage-graph 'head -c 5000 /dev/urandom >ind.cora.graph'
  pl_variant pl-swap-x-y 'mv ind.cora.x t && mv ind.cora.y ind.cora.x && mv t ind.cora.y'
  pl_variant pl-index-range 'echo 99999 >>ind.cora.test.index'
  pl_variant pl-index-negative 'echo -4 >ind.cora.test.index'
  pl_variant pl-index-text 'printf "twelve\n" >ind.cora.test.index'
  pl_variant pl-index-empty ': >ind.cora.test.index'
  pl_variant pl-flip-allx "$py -c \"b=bytearray(open('ind.cora.allx','rb').read()); b[len(b)//2]^=0xFF; open('ind.cora.allx','wb').write(b)\""
  pl_variant pl-flip-graph "$py -c \"b=bytearray(open('ind.cora.graph','rb').read()); b[200]^=0x5A; open('ind.cora.graph','wb').write(b)\""
  pl_variant pl-fifo 'rm ind.cora.ty && mkfifo ind.cora.ty'
  pl_variant pl-dir-y 'rm ind.cora.y && mkdir ind.cora.y'
fi
mkdir -p "$IN/emptydir"
mkfifo "$IN/fifo"
ln -s g.h5 "$IN/link-to-g.h5"
ln -s nowhere.h5 "$IN/dangling.h5"
ln -s loop-b "$IN/loop-a"; ln -s loop-a "$IN/loop-b"
cp "$IN/g.h5" "$IN/unreadable.h5"; chmod 000 "$IN/unreadable.h5"
cp "$IN/tri.txt" "$IN/unreadable.txt"; chmod 000 "$IN/unreadable.txt"
cp "$IN/good.toml" "$IN/unreadable.toml"; chmod 000 "$IN/unreadable.toml"
long=$(printf 'n%.0s' {1..255})
cd "$W" || exit 1

# Output-side file-system states
mkdir -p "$OUT/ro" "$OUT/rw" "$OUT/adir"
chmod 555 "$OUT/ro"; chmod 777 "$OUT/rw"
echo keep >"$OUT/rw/locked.jsonl"; chmod 444 "$OUT/rw/locked.jsonl"
echo keep >"$OUT/rw/locked.h5"; chmod 444 "$OUT/rw/locked.h5"
mkfifo "$OUT/fifo"
echo old >"$OUT/real.jsonl"; ln -s real.jsonl "$OUT/link.jsonl"
ln -s made.jsonl "$OUT/dangling.jsonl"
ln -s real.h5 "$OUT/link.h5"
echo notafile >"$OUT/plainfile"
ln -s ../in/model.h5 "$OUT/link-model.h5"

printf '%-5s %-17s %-62s %-6s %-5s %s\n' id subcommand description expect rc verdict
printf '%s\n' "$(printf '%.0s-' {1..108})"

tr1=(--epochs 1 --quiet --threads 1)  # a one-epoch train
gpt1=(--iters 1 --layers 1 --heads 2 --embed 16 --block 16 --batch 2 --eval-every 0 --threads 1 --quiet)
# gpt1 without the named options (each takes one value), for the cases that set them: CLI11
# refuses an option given twice.
gpt1_but() {
  local skip=" $* " i
  for ((i = 0; i < ${#gpt1[@]}; i++)); do
    if [[ $skip == *" ${gpt1[i]} "* ]]; then ((i++)); else echo "${gpt1[i]}"; fi
  done
}

if [[ -z ${RED_TEAM_PART:-} ]]; then
# ==== plexus (top level) ==========================================================================
refuse plexus "no subcommand" "subcommand"
refuse plexus "unknown subcommand" "verify" verify
refuse plexus "unknown option before the subcommand" "--frobnicate" --frobnicate train
refuse plexus "empty subcommand word" "command line" ""
refuse plexus "subcommand of 100000 characters" "command line" "$(printf 'x%.0s' {1..100000})"
refuse plexus "subcommand with invalid UTF-8" "command line" $'\xff\xfe'
refuse plexus "unknown subcommand of gpt" "trian" gpt trian
refuse plexus "unknown generator" "erdos" generate erdos
refuse plexus "unknown converter" "csv" convert csv
refuse plexus "gpt without its subcommand" "subcommand" gpt
accept plexus "--version" 'said "^plexus [0-9]"' --version
accept plexus "--help" 'said "Subcommands"' --help
accept plexus "help of a nested subcommand" 'said "--temperature"' gpt sample --help

# ==== train: options ============================================================================
refuse train "--hidden 0" "--hidden" "${tr1[@]}" --hidden 0
refuse train "--hidden -1" "--hidden" "${tr1[@]}" --hidden -1
refuse train "--hidden abc" "--hidden" "${tr1[@]}" --hidden abc
refuse train "--hidden empty string" "--hidden" "${tr1[@]}" --hidden ""
refuse train "--hidden 500000000 (needs TiB)" "--hidden" "${tr1[@]}" --hidden 500000000
refuse train "--hidden past int64" "--hidden" "${tr1[@]}" --hidden 99999999999999999999
refuse train "--hidden 2^31 (past int)" "--hidden" "${tr1[@]}" --hidden 2147483648
refuse train "--hidden 1.5" "--hidden" "${tr1[@]}" --hidden 1.5
refuse train "--hidden 0x10" "--hidden" "${tr1[@]}" --hidden 0x10
refuse train "--layers 0" "--layers" "${tr1[@]}" --layers 0
refuse train "--layers -3" "--layers" "${tr1[@]}" --layers -3
refuse train "--layers 100000000" "--layers" "${tr1[@]}" --layers 100000000
refuse train "--epochs 0" "--epochs" --epochs 0 --quiet
refuse train "--epochs -1" "--epochs" --epochs -1 --quiet
refuse train "--epochs 2^31" "--epochs" --epochs 2147483648 --quiet
refuse train "--lr nan" "--lr" "${tr1[@]}" --lr nan
refuse train "--lr inf" "--lr" "${tr1[@]}" --lr inf
refuse train "--lr 1e400 (overflows a double)" "--lr" "${tr1[@]}" --lr 1e400
refuse train "--lr -1" "--lr" "${tr1[@]}" --lr -1
refuse train "--lr 0" "--lr" "${tr1[@]}" --lr 0
refuse train "--weight-decay -1" "--weight-decay" "${tr1[@]}" --weight-decay -1
refuse train "--weight-decay nan" "--weight-decay" "${tr1[@]}" --weight-decay nan
refuse train "--dropout 1" "--dropout" "${tr1[@]}" --dropout 1
refuse train "--dropout -0.1" "--dropout" "${tr1[@]}" --dropout -0.1
refuse train "--dropout 1.5" "--dropout" "${tr1[@]}" --dropout 1.5
refuse train "--seed -1" "--seed" "${tr1[@]}" --seed -1
refuse train "--seed 2^64" "--seed" "${tr1[@]}" --seed 18446744073709551616
refuse train "--seed 1e3" "--seed" "${tr1[@]}" --seed 1e3
accept train "--seed 2^64-1 (the largest)" 'said "test accuracy"' "${tr1[@]}" --seed 18446744073709551615
refuse train "--grid 2x0x1" "--grid" "${tr1[@]}" --grid 2x0x1
refuse train "--grid 2x2 (two axes)" "--grid" "${tr1[@]}" --grid 2x2
refuse train "--grid 1x1x1x1" "--grid" "${tr1[@]}" --grid 1x1x1x1
refuse train "--grid axbxc" "--grid" "${tr1[@]}" --grid axbxc
refuse train "--grid -1x-1x1" "--grid" "${tr1[@]}" --grid -1x-1x1
refuse train "--grid 3x3x954437177 (wraps int32)" "--grid" "${tr1[@]}" --grid 3x3x954437177
refuse train "--grid 2147483647^3" "--grid" "${tr1[@]}" --grid 2147483647x2147483647x2147483647
refuse train "--grid 2x1x1 on one rank" "--grid" "${tr1[@]}" --grid 2x1x1
refuse train "--grid with spaces" "--grid" "${tr1[@]}" --grid " 1x1x1"
refuse train "--memory-per-rank 1K" "--memory-per-rank" "${tr1[@]}" --memory-per-rank 1K
refuse train "--memory-per-rank lots" "--memory-per-rank" "${tr1[@]}" --memory-per-rank lots
refuse train "--memory-per-rank 0" "--memory-per-rank" "${tr1[@]}" --memory-per-rank 0
refuse train "--memory-per-rank -5G" "--memory-per-rank" "${tr1[@]}" --memory-per-rank -5G
refuse train "--memory-per-rank 99999999999999999999G" "--memory-per-rank" "${tr1[@]}" --memory-per-rank 99999999999999999999G
refuse train "--memory-per-rank 1e999G" "--memory-per-rank" "${tr1[@]}" --memory-per-rank 1e999G
refuse train "--memory-per-rank 2Q (unknown unit)" "--memory-per-rank" "${tr1[@]}" --memory-per-rank 2Q
refuse train "--threads -1" "--threads" "${tr1[@]}" --threads -1
refuse train "--threads 100000" "--threads" --epochs 1 --quiet --threads 100000
refuse train "--matmul-precision fp64" "--matmul-precision" "${tr1[@]}" --matmul-precision fp64
refuse train "--backend tpu" "--backend" "${tr1[@]}" --backend tpu
refuse train "--comm-variant bogus" "--comm-variant" "${tr1[@]}" --comm-variant bogus
refuse train "--agg-chunks 0" "--agg-chunks" "${tr1[@]}" --agg-chunks 0
refuse train "--agg-chunks -1" "--agg-chunks" "${tr1[@]}" --agg-chunks -1
survive train "--agg-chunks 1000000000 (more chunks than rows)" "${tr1[@]}" --agg-chunks 1000000000
refuse train "--balance random" "--balance" "${tr1[@]}" --balance random
refuse train "--balance-seed -1" "--balance-seed" "${tr1[@]}" --balance-seed -1
refuse train "unknown option" "--frobnicate" "${tr1[@]}" --frobnicate 3
refuse train "stray positional" "extra" "${tr1[@]}" extra
refuse train "--hidden given twice" "--hidden" "${tr1[@]}" --hidden 8 --hidden 9
refuse train "--quiet with a value" "--quiet" --epochs 1 --threads 1 --quiet=maybe
refuse train "--data empty string" "--data" "${tr1[@]}" --data ""
refuse train "option value missing at the end" "--hidden" "${tr1[@]}" --hidden
accept train "bundled Cora, 1 epoch, metrics in [0,1]" 'acc_ok "$OUT/m1.jsonl"' "${tr1[@]}" --metrics "$OUT/m1.jsonl"
accept train "--backend reference" 'said "test accuracy"' "${tr1[@]}" --backend reference --hidden 4
accept train "--dropout 0 --lr 1e-30 (tiny but valid)" 'said "test accuracy"' "${tr1[@]}" --dropout 0 --lr 1e-30

# ==== train: the --data file =====================================================================
refuse train "data missing" "nope.h5" "${tr1[@]}" --data "$IN/nope.h5"
refuse train "data is a directory" "emptydir" "${tr1[@]}" --data "$IN/emptydir"
refuse train "data is a FIFO" "fifo" "${tr1[@]}" --data "$IN/fifo"
refuse train "data is a dangling link" "dangling.h5" "${tr1[@]}" --data "$IN/dangling.h5"
refuse train "data is a symlink loop" "loop-a" "${tr1[@]}" --data "$IN/loop-a"
refuse train "data is /dev/null" "/dev/null" "${tr1[@]}" --data /dev/null
refuse train "data is an empty file" "empty.txt" "${tr1[@]}" --data "$IN/empty.txt"
refuse train "data is random bytes" "random.bin" "${tr1[@]}" --data "$IN/random.bin"
refuse train "data is a text edge list" "tri.txt" "${tr1[@]}" --data "$IN/tri.txt"
AS=1 refuse train "data unreadable (ordinary user)" "unreadable.h5" "${tr1[@]}" --data "$IN/unreadable.h5"
refuse train "data is a GPT checkpoint" "model.h5" "${tr1[@]}" --data "$IN/model.h5"
refuse train "data is an empty HDF5 container" "empty-container.h5" "${tr1[@]}" --data "$IN/empty-container.h5"
refuse train "HDF5 signature only" "sig-only.h5" "${tr1[@]}" --data "$IN/sig-only.h5"
refuse train "garbage with a .h5 name" "garbage.h5" "${tr1[@]}" --data "$IN/garbage.h5"
accept train "data through a symbolic link" 'said "test accuracy"' "${tr1[@]}" --data "$IN/link-to-g.h5"
accept train "a prepared file" 'said "test accuracy"' "${tr1[@]}" --data "$IN/prep.h5"
accept train "generated SBM graph" 'said "test accuracy"' "${tr1[@]}" --data "$IN/sbm.h5"
for m in no-labels:/labels no-graph:graph float-indptr:/graph/indptr str-features:/features \
         narrow-features:/features flat-features:/features 3d-features:/features indptr-nonmono:/graph/indptr \
         indptr-end:/graph/indptr indptr-negative:/graph/indptr indptr-short:/graph/indptr col-big:/graph/indices \
         col-negative:/graph/indices col-max:/graph/indices indices-declared-huge:/graph/indices feat-nan:/features \
         feat-inf:/features feat-3e38:loss label-3:/labels label-minus5:/labels labels-all-unlabelled:/masks/train \
         labels-scalar:/labels train-empty:/masks/train mask-short:/masks/train no-val-mask:/masks/val \
         nodes-65:nodes-65.h5 nodes-negative:nodes-negative.h5 nodes-2e62:nodes-2e62.h5 nodes-string:nodes-string.h5 \
         nodes-float:nodes-float.h5 features-0:features-0.h5 classes-0:classes-0.h5 classes-negative:classes-negative.h5 \
         classes-1:/labels classes-2e8:classes-2e8.h5 format-other:format-other.h5 format-version-99:format-version-99.h5 \
         no-format:no-format.h5 values-nan:/graph/values values-negative:/graph/values values-short:/graph/values \
         features-group:/features graph-dataset:graph-dataset.h5 features-dangling-link:/features \
         features-external-link:/features features-lzf:/features empty-graph:empty-graph.h5; do
  refuse train "edited HDF5: ${m%%:*}" "${m#*:}" "${tr1[@]}" --data "$IN/${m%%:*}.h5"
done
for m in int32-indices f64-features labels-int64 mask-value-7 masks-overlap; do
  survive train "edited HDF5: $m" "${tr1[@]}" --data "$IN/$m.h5"
done
accept train "features all zero" 'said "test accuracy"' "${tr1[@]}" --data "$IN/feat-zero.h5"
accept train "graph without edges" 'said "test accuracy"' "${tr1[@]}" --data "$IN/no-edges.h5"
accept train "gzip-compressed features" 'said "test accuracy"' "${tr1[@]}" --data "$IN/features-gzip.h5"
survive train "trailing garbage after the HDF5 file" "${tr1[@]}" --data "$IN/g-trailing.h5"
for m in prep-masks-p:/prepared prep-not-perm:/prepared/node_id_p prep-perm-range:/prepared/node_id_p \
         prep-no-a1:/prepared prep-a1-nan:/prepared prep-a1-col:/prepared prep-balance-bogus:balance \
         prep-parts-huge:metis_parts; do
  refuse train "edited prepared file: ${m%%:*}" "${m#*:}" "${tr1[@]}" --layers 1 --data "$IN/${m%%:*}.h5"
done
for t in g prep; do
  for v in sig sbver; do refuse train "byte flip: $t.h5 $v" "flip-$t-$v.h5" "${tr1[@]}" --data "$IN/flip-$t-$v.h5"; done
  for v in eof 2 5 10 25 50 75 98; do survive train "byte flip: $t.h5 at $v" "${tr1[@]}" --data "$IN/flip-$t-$v.h5"; done
  refuse train "truncated to half: $t.h5" "trunc-$t-half.h5" "${tr1[@]}" --data "$IN/trunc-$t-half.h5"
  refuse train "truncated to 100 bytes: $t.h5" "trunc-$t-100.h5" "${tr1[@]}" --data "$IN/trunc-$t-100.h5"
  survive train "4 KiB zeroed: $t.h5" "${tr1[@]}" --data "$IN/zeroblock-$t.h5"
done

# ==== train: --config =========================================================================
refuse train "config is a directory" "emptydir" "${tr1[@]}" --config "$IN/emptydir"
refuse train "config is a FIFO" "fifo" "${tr1[@]}" --config "$IN/fifo"
refuse train "config missing" "none.toml" "${tr1[@]}" --config "$IN/none.toml"
refuse train "config is /dev/zero" "/dev/zero" "${tr1[@]}" --config /dev/zero
AS=1 refuse train "config unreadable (ordinary user)" "unreadable.toml" "${tr1[@]}" --config "$IN/unreadable.toml"
refuse train "config is random bytes" "random.bin" "${tr1[@]}" --config "$IN/random.bin"
refuse train "config is an HDF5 file" "g.h5" "${tr1[@]}" --config "$IN/g.h5"
refuse train "config: unknown key" "not_an_option" "${tr1[@]}" --config "$IN/unknown-key.toml"
refuse train "config: syntax error" "broken.toml" "${tr1[@]}" --config "$IN/broken.toml"
refuse train "config: string for an integer" "hidden" "${tr1[@]}" --config "$IN/string-int.toml"
refuse train "config: 8.5 for an integer" "hidden" "${tr1[@]}" --config "$IN/float-int.toml"
refuse train "config: array value" "hidden" "${tr1[@]}" --config "$IN/array.toml"
refuse train "config: boolean for an integer" "hidden" "${tr1[@]}" --config "$IN/bool-int.toml"
refuse train "config: a [table]" "train" "${tr1[@]}" --config "$IN/table.toml"
refuse train "config: integer past int64" "overflow.toml" "${tr1[@]}" --config "$IN/overflow.toml"
refuse train "config: hidden 500000000" "--hidden" "${tr1[@]}" --config "$IN/huge-hidden.toml"
refuse train "config: lr = nan" "lr" "${tr1[@]}" --config "$IN/nan-lr.toml"
refuse train "config: lr = inf" "lr" "${tr1[@]}" --config "$IN/inf-lr.toml"
refuse train "config: seed = -1" "--seed" "${tr1[@]}" --config "$IN/neg-seed.toml"
refuse train "config: key 'config'" "config" "${tr1[@]}" --config "$IN/config-key.toml"
refuse train "config: key 'help'" "help" "${tr1[@]}" --config "$IN/help-key.toml"
refuse train "config: duplicate key" "duplicate.toml" "${tr1[@]}" --config "$IN/duplicate.toml"
refuse train "config: data = \"\"" "data" "${tr1[@]}" --config "$IN/empty-data.toml"
refuse train "config: a flag set to \"maybe\"" "quiet" --epochs 1 --threads 1 --config "$IN/bad-flag.toml"
refuse train "config given as empty string" "--config" "${tr1[@]}" --config ""
accept train "config: good file" 'said "test accuracy"' --config "$IN/good.toml"
accept train "config: empty file (defaults)" 'said "test accuracy"' "${tr1[@]}" --config "$IN/empty.txt"
accept train "config: UTF-8 byte-order mark" 'said "test accuracy"' --quiet --threads 1 --config "$IN/bom.toml"
accept train "command line wins over config" 'said "test accuracy"' --config "$IN/huge-hidden.toml" "${tr1[@]}" --hidden 4

# ==== train: --metrics outputs =================================================================
refuse train "metrics in a missing directory" "nodir" "${tr1[@]}" --metrics "$OUT/nodir/m.jsonl"
refuse train "metrics is a directory" "adir" "${tr1[@]}" --metrics "$OUT/adir"
refuse train "metrics under a plain file" "plainfile" "${tr1[@]}" --metrics "$OUT/plainfile/m.jsonl"
refuse train "metrics name of 255 characters (shortened in the line)" "file name is too long" "${tr1[@]}" --metrics "$OUT/$long"
refuse train "metrics name of 300 characters" "nnnn" "${tr1[@]}" --metrics "$OUT/$long$long"
refuse train "metrics to /dev/full" "/dev/full" "${tr1[@]}" --metrics /dev/full
refuse train "metrics to a FIFO without a reader" "fifo" "${tr1[@]}" --metrics "$OUT/fifo"
refuse train "metrics over its --data" "g.h5" "${tr1[@]}" --data "$IN/g.h5" --metrics "$IN/g.h5"
refuse train "metrics over --data through a link" "link-to-g.h5" "${tr1[@]}" --data "$IN/g.h5" --metrics "$IN/link-to-g.h5"
refuse train "metrics over its --config" "good.toml" --config "$IN/good.toml" --metrics "$IN/good.toml"
refuse train "metrics through a symlink loop" "loop-a" "${tr1[@]}" --metrics "$IN/loop-a"
refuse train "metrics empty string" "--metrics" "${tr1[@]}" --metrics ""
AS=1 refuse train "metrics in a read-only dir (user)" "ro" "${tr1[@]}" --metrics "$OUT/ro/m.jsonl"
AS=1 refuse train "metrics over a read-only file (user)" "locked.jsonl" "${tr1[@]}" --metrics "$OUT/rw/locked.jsonl"
AS=1 accept train "metrics into a writable dir (user)" 'jsonl_ok "$OUT/rw/fine.jsonl"' "${tr1[@]}" --metrics "$OUT/rw/fine.jsonl"
accept train "metrics through a symlink" '[[ -L $OUT/link.jsonl ]] && jsonl_ok "$OUT/real.jsonl"' "${tr1[@]}" --metrics "$OUT/link.jsonl"
accept train "metrics through a dangling symlink" '[[ -L $OUT/dangling.jsonl ]] && jsonl_ok "$OUT/made.jsonl"' "${tr1[@]}" --metrics "$OUT/dangling.jsonl"
accept train "metrics to /dev/null" "" "${tr1[@]}" --metrics /dev/null
accept train "metrics to /dev/stdout" 'said "\"summary\":true"' "${tr1[@]}" --metrics /dev/stdout
accept train "metrics replaces an old file" 'jsonl_ok "$OUT/m1.jsonl"' "${tr1[@]}" --metrics "$OUT/m1.jsonl"

# ==== train: checkpoints and resume (docs/checkpoints.md) =====================================
ck=(--data "$IN/g.h5" --quiet --threads 1)
refuse train "--checkpoint-every 0" "--checkpoint-every" "${ck[@]}" --checkpoint-dir "$OUT/c0" --checkpoint-every 0
refuse train "--checkpoint-every -5" "--checkpoint-every" "${ck[@]}" --checkpoint-dir "$OUT/c0" --checkpoint-every -5
refuse train "--keep -1" "--keep" "${ck[@]}" --checkpoint-dir "$OUT/c0" --keep -1
refuse train "--checkpoint-dir is a file" "g.h5" "${ck[@]}" --checkpoint-dir "$IN/g.h5"
refuse train "--checkpoint-dir under a file" "g.h5" "${ck[@]}" --checkpoint-dir "$IN/g.h5/sub"
refuse train "--resume a missing directory" "no such directory" "${ck[@]}" --resume "$OUT/none"
refuse train "--resume a directory without checkpoints" "holds no checkpoint" "${ck[@]}" --resume "$IN/ogb"
refuse train "--resume a file" "is not a directory" "${ck[@]}" --resume "$IN/gcn.h5"
refuse train "--resume with another --hidden" "--hidden" "${ck[@]}" --epochs 8 --resume "$IN/ckpt" --hidden 32
refuse train "--resume with another --lr" "--lr" "${ck[@]}" --epochs 8 --resume "$IN/ckpt" --lr 0.5
refuse train "--resume with another --seed" "--seed" "${ck[@]}" --epochs 8 --resume "$IN/ckpt" --seed 9
refuse train "--resume with another --adamw" "--adamw" "${ck[@]}" --epochs 8 --resume "$IN/ckpt" --adamw
refuse train "--resume with fewer --epochs" "--epochs" "${ck[@]}" --epochs 2 --resume "$IN/ckpt"
refuse train "--resume on other data (same widths)" "was trained on a graph of 64 nodes" --data "$IN/sbm.h5" --quiet --threads 1 --epochs 8 --resume "$IN/ckpt"
accept train "--resume continues to --epochs" 'said "best validation"' "${ck[@]}" --epochs 6 --resume "$IN/ckpt"
accept train "--resume at --epochs trains nothing" 'said "best validation"' "${ck[@]}" --epochs 4 --resume "$IN/ckpt"
NP=2 accept train "--resume on 2 ranks" 'said "best validation"' "${ck[@]}" --grid 2x1x1 --epochs 6 --resume "$IN/ckpt"
accept train "--checkpoint-dir created, --keep 1" '[[ $(ls "$OUT/c1" | wc -l) -eq 1 ]]' "${ck[@]}" --epochs 5 \
  --checkpoint-dir "$OUT/c1" --checkpoint-every 1 --keep 1

# ==== predict ====================================================================================
pr=(--data "$IN/g.h5" --quiet --threads 1)
refuse predict "no --checkpoint" "--checkpoint" "${pr[@]}" -o "$OUT/pr.h5"
refuse predict "no -o" "-o" "${pr[@]}" --checkpoint "$IN/gcn.h5"
refuse predict "checkpoint missing" "none.h5" "${pr[@]}" --checkpoint "$IN/none.h5" -o "$OUT/pr.h5"
refuse predict "checkpoint is a directory" "ckpt" "${pr[@]}" --checkpoint "$IN/ckpt" -o "$OUT/pr.h5"
refuse predict "checkpoint is a graph" "g.h5" "${pr[@]}" --checkpoint "$IN/g.h5" -o "$OUT/pr.h5"
refuse predict "checkpoint is a GPT model" "model.h5" "${pr[@]}" --checkpoint "$IN/model.h5" -o "$OUT/pr.h5"
refuse predict "checkpoint is text" "text.txt" "${pr[@]}" --checkpoint "$IN/text.txt" -o "$OUT/pr.h5"
refuse predict "model of another graph" "gcn.h5" --data "$IN/cora.h5" --quiet --threads 1 --checkpoint "$IN/gcn.h5" -o "$OUT/pr.h5"
refuse predict "-o is --data" "g.h5" "${pr[@]}" --checkpoint "$IN/gcn.h5" -o "$IN/g.h5"
refuse predict "-o is --checkpoint" "gcn.h5" "${pr[@]}" --checkpoint "$IN/gcn.h5" -o "$IN/gcn.h5"
refuse predict "-o in a missing directory" "nodir" "${pr[@]}" --checkpoint "$IN/gcn.h5" -o "$OUT/nodir/pr.h5"
refuse predict "-o /dev/null (HDF5 needs a file)" "/dev/null" "${pr[@]}" --checkpoint "$IN/gcn.h5" -o /dev/null
refuse predict "--grid 2x1x1 on one process" "--grid" "${pr[@]}" --checkpoint "$IN/gcn.h5" -o "$OUT/pr.h5" --grid 2x1x1
accept predict "every node once" 'pred_ok "$OUT/pr.h5"' \
  "${pr[@]}" --checkpoint "$IN/gcn.h5" -o "$OUT/pr.h5"
accept predict "a checkpoint" '[[ -s $OUT/pr2.h5 ]]' "${pr[@]}" --checkpoint "$IN/ckpt/checkpoint-00000004.h5" -o "$OUT/pr2.h5"
NP=4 accept predict "on 4 ranks" '[[ -s $OUT/pr4.h5 ]]' "${pr[@]}" --grid 2x2x1 --checkpoint "$IN/gcn.h5" -o "$OUT/pr4.h5"

# ==== prepare ====================================================================================
refuse prepare "input missing" "nope.h5" "$IN/nope.h5" -o "$OUT/p.h5"
refuse prepare "input is a directory" "emptydir" "$IN/emptydir" -o "$OUT/p.h5"
refuse prepare "input is a FIFO" "fifo" "$IN/fifo" -o "$OUT/p.h5"
refuse prepare "input is empty" "empty.txt" "$IN/empty.txt" -o "$OUT/p.h5"
refuse prepare "input is random bytes" "random.bin" "$IN/random.bin" -o "$OUT/p.h5"
refuse prepare "input is a GPT checkpoint" "model.h5" "$IN/model.h5" -o "$OUT/p.h5"
refuse prepare "input has NaN features" "/features" "$IN/feat-nan.h5" -o "$OUT/p.h5"
refuse prepare "input with a bad column" "/graph/indices" "$IN/col-big.h5" -o "$OUT/p.h5"
refuse prepare "input with negative weights" "/graph/values" "$IN/values-negative.h5" -o "$OUT/p.h5"
refuse prepare "input truncated" "trunc-g-half.h5" "$IN/trunc-g-half.h5" -o "$OUT/p.h5"
refuse prepare "input byte flip in the signature" "flip-g-sig.h5" "$IN/flip-g-sig.h5" -o "$OUT/p.h5"
survive prepare "input byte flip at 50%" "$IN/flip-g-50.h5" -o "$OUT/pf.h5"
AS=1 refuse prepare "input unreadable (user)" "unreadable.h5" "$IN/unreadable.h5" -o "$OUT/rw/p.h5"
refuse prepare "output missing (-o absent)" "--out" "$IN/g.h5"
refuse prepare "output over its input" "g.h5" "$IN/g.h5" -o "$IN/g.h5"
refuse prepare "output over its input via a link" "link-to-g.h5" "$IN/g.h5" -o "$IN/link-to-g.h5"
refuse prepare "output is a directory" "adir" "$IN/g.h5" -o "$OUT/adir"
refuse prepare "output in a missing dir" "nodir" "$IN/g.h5" -o "$OUT/nodir/p.h5"
refuse prepare "output to /dev/full" "/dev/full" "$IN/g.h5" -o /dev/full
refuse prepare "output to a FIFO" "fifo" "$IN/g.h5" -o "$OUT/fifo"
refuse prepare "output name of 255 characters (shortened in the line)" "file name is too long" "$IN/g.h5" -o "$OUT/$long"
AS=1 refuse prepare "output in a read-only dir (user)" "ro" "$IN/g.h5" -o "$OUT/ro/p.h5"
AS=1 refuse prepare "output over a read-only file (user)" "locked.h5" "$IN/g.h5" -o "$OUT/rw/locked.h5"
refuse prepare "--balance metis without --grid" "--grid" "$IN/g.h5" -o "$OUT/p.h5" --balance metis
refuse prepare "--balance bogus" "--balance" "$IN/g.h5" -o "$OUT/p.h5" --balance bogus
refuse prepare "--balance-seed -2" "--balance-seed" "$IN/g.h5" -o "$OUT/p.h5" --balance-seed -2
refuse prepare "--grid 0x1x1" "--grid" "$IN/g.h5" -o "$OUT/p.h5" --balance metis --grid 0x1x1
refuse prepare "--grid huge for metis" "--grid" "$IN/g.h5" -o "$OUT/p.h5" --balance metis --grid 65536x65535x65521
refuse prepare "two inputs" "command line" "$IN/g.h5" "$IN/sbm.h5" -o "$OUT/p.h5"
accept prepare "output through a dangling symlink" '[[ -L $OUT/link.h5 ]] && graph_ok "$OUT/real.h5"' "$IN/g.h5" -o "$OUT/link.h5" -q
accept prepare "prepare a prepared file" 'graph_ok "$OUT/pp.h5"' "$IN/prep.h5" -o "$OUT/pp.h5" -q
accept prepare "metis on a 2x2x1 grid" 'graph_ok "$OUT/pm.h5"' "$IN/g.h5" -o "$OUT/pm.h5" --balance metis --grid 2x2x1 -q
accept prepare "graph without edges" 'graph_ok "$OUT/pe.h5"' "$IN/no-edges.h5" -o "$OUT/pe.h5" -q
refuse prepare "an empty graph" "empty-graph.h5" "$IN/empty-graph.h5" -o "$OUT/p.h5"

# ==== generate rmat / sbm ========================================================================
g="generate rmat"
refuse "$g" "--scale 0" "--scale" --scale 0 -o "$OUT/r.h5"
refuse "$g" "--scale -1" "--scale" --scale -1 -o "$OUT/r.h5"
refuse "$g" "--scale 64" "--scale" --scale 64 -o "$OUT/r.h5"
refuse "$g" "--scale 34 (needs too much)" "--scale" --scale 34 --edge-factor 1 --feature-width 1 -o "$OUT/r.h5"
refuse "$g" "--edge-factor 0" "--edge-factor" --scale 4 --edge-factor 0 -o "$OUT/r.h5"
refuse "$g" "--edge-factor -4" "--edge-factor" --scale 4 --edge-factor -4 -o "$OUT/r.h5"
refuse "$g" "--edge-factor 2^40" "--edge-factor" --scale 4 --edge-factor 1099511627776 -o "$OUT/r.h5"
refuse "$g" "--feature-width 0" "--feature-width" --scale 4 --feature-width 0 -o "$OUT/r.h5"
refuse "$g" "--feature-width 4000000" "--feature-width" --scale 20 --feature-width 4000000 -o "$OUT/r.h5"
refuse "$g" "--classes 0" "--classes" --scale 4 --classes 0 -o "$OUT/r.h5"
refuse "$g" "--classes -2" "--classes" --scale 4 --classes -2 -o "$OUT/r.h5"
refuse "$g" "--classes 2^31" "--classes" --scale 4 --classes 2147483648 -o "$OUT/r.h5"
refuse "$g" "--seed -1" "--seed" --scale 4 --seed -1 -o "$OUT/r.h5"
refuse "$g" "--seed 2^64" "--seed" --scale 4 --seed 18446744073709551616 -o "$OUT/r.h5"
refuse "$g" "-o missing" "--out" --scale 4
refuse "$g" "-o empty string" "--out" --scale 4 -o ""
refuse "$g" "-o in a missing directory" "nodir" --scale 4 -o "$OUT/nodir/r.h5"
refuse "$g" "-o is a directory" "adir" --scale 4 -o "$OUT/adir"
refuse "$g" "-o to /dev/full" "/dev/full" --scale 4 -o /dev/full
refuse "$g" "-o to a FIFO" "fifo" --scale 4 -o "$OUT/fifo"
refuse "$g" "-o name of 255 characters (shortened in the line)" "file name is too long" --scale 4 -o "$OUT/$long"
refuse "$g" "-o over an input-like file via loop" "loop-a" --scale 4 -o "$IN/loop-a"
AS=1 refuse "$g" "-o in a read-only dir (user)" "ro" --scale 4 -o "$OUT/ro/r.h5"
refuse "$g" "--scale 1 (2 nodes: a split without a node)" "--scale" --scale 1 --edge-factor 1 --feature-width 1 --classes 2 -o "$OUT/r1.h5"
accept "$g" "--scale 4 (16 nodes, every split)" 'graph_ok "$OUT/r1.h5"' --scale 4 --edge-factor 1 --feature-width 1 --classes 2 -o "$OUT/r1.h5"
accept "$g" "--seed 2^64-1" 'graph_ok "$OUT/r2.h5"' --scale 4 --seed 18446744073709551615 -o "$OUT/r2.h5"
g="generate sbm"
refuse "$g" "--nodes 0" "--nodes" --nodes 0 -o "$OUT/s.h5"
refuse "$g" "--nodes -5" "--nodes" --nodes -5 -o "$OUT/s.h5"
refuse "$g" "--classes 0" "--classes" --nodes 100 --classes 0 -o "$OUT/s.h5"
refuse "$g" "--classes above --nodes" "--classes" --nodes 10 --classes 11 -o "$OUT/s.h5"
refuse "$g" "--avg-degree -1" "--avg-degree" --nodes 100 --avg-degree -1 -o "$OUT/s.h5"
refuse "$g" "--avg-degree nan" "--avg-degree" --nodes 100 --avg-degree nan -o "$OUT/s.h5"
refuse "$g" "--avg-degree 1e308" "--avg-degree" --nodes 100 --avg-degree 1e308 -o "$OUT/s.h5"
refuse "$g" "--avg-degree 500 on 1e8 nodes" "--avg-degree" --nodes 100000000 --avg-degree 500 -o "$OUT/s.h5"
refuse "$g" "--homophily 2" "--homophily" --nodes 100 --homophily 2 -o "$OUT/s.h5"
refuse "$g" "--homophily -0.1" "--homophily" --nodes 100 --homophily -0.1 -o "$OUT/s.h5"
refuse "$g" "--feature-width 0" "--feature-width" --nodes 100 --feature-width 0 -o "$OUT/s.h5"
refuse "$g" "--feature-signal -1" "--feature-signal" --nodes 100 --feature-signal -1 -o "$OUT/s.h5"
refuse "$g" "--train-fraction 1.5" "--train-fraction" --nodes 100 --train-fraction 1.5 -o "$OUT/s.h5"
refuse "$g" "--train-fraction -0.1" "--train-fraction" --nodes 100 --train-fraction -0.1 -o "$OUT/s.h5"
refuse "$g" "train + val fractions above 1" "fraction" --nodes 100 --train-fraction 0.7 --val-fraction 0.5 -o "$OUT/s.h5"
refuse "$g" "--train-fraction 0 (empty train mask)" "--train-fraction" --nodes 100 --train-fraction 0 -o "$OUT/s.h5"
refuse "$g" "--val-fraction nan" "--val-fraction" --nodes 100 --val-fraction nan -o "$OUT/s.h5"
refuse "$g" "-o to /dev/full" "/dev/full" --nodes 100 -o /dev/full
refuse "$g" "--nodes 2 --classes 1: a split without a node" "fraction" --nodes 2 --classes 1 --avg-degree 1 -o "$OUT/s1.h5"
accept "$g" "--nodes 20 --classes 1" 'graph_ok "$OUT/s1.h5"' --nodes 20 --classes 1 --avg-degree 1 -o "$OUT/s1.h5"
accept "$g" "--avg-degree 0 (no edges)" 'graph_ok "$OUT/s0.h5"' --nodes 50 --avg-degree 0 -o "$OUT/s0.h5"

# ==== convert edgelist ===========================================================================
c="convert edgelist"
refuse "$c" "input missing" "nope.txt" "$IN/nope.txt" -o "$OUT/e.h5"
refuse "$c" "input is a directory" "emptydir" "$IN/emptydir" -o "$OUT/e.h5"
refuse "$c" "empty file" "empty.txt" "$IN/empty.txt" -o "$OUT/e.h5"
refuse "$c" "comments only" "comments.txt" "$IN/comments.txt" -o "$OUT/e.h5"
refuse "$c" "random bytes" "random.bin" "$IN/random.bin" -o "$OUT/e.h5"
refuse "$c" "an HDF5 file" "g.h5" "$IN/g.h5" -o "$OUT/e.h5"
refuse "$c" "bad token" "bad-token.txt:3" "$IN/bad-token.txt" -o "$OUT/e.h5"
refuse "$c" "negative id" "negative-id.txt:2" "$IN/negative-id.txt" -o "$OUT/e.h5"
refuse "$c" "id past int64" "overflow-id.txt:1" "$IN/overflow-id.txt" -o "$OUT/e.h5"
refuse "$c" "id 2^63-1 with --num-nodes" "max-id.txt" "$IN/max-id.txt" --num-nodes 10 -o "$OUT/e.h5"
refuse "$c" "NaN weight" "nan-weight.txt:1" "$IN/nan-weight.txt" -o "$OUT/e.h5"
refuse "$c" "inf weight" "inf-weight.txt:1" "$IN/inf-weight.txt" -o "$OUT/e.h5"
refuse "$c" "weight 1e39 (past float)" "big-weight.txt:1" "$IN/big-weight.txt" -o "$OUT/e.h5"
refuse "$c" "weight is a word" "text-weight.txt:1" "$IN/text-weight.txt" -o "$OUT/e.h5"
refuse "$c" "one column" "one-column.txt:1" "$IN/one-column.txt" -o "$OUT/e.h5"
refuse "$c" "four columns" "four-columns.txt:1" "$IN/four-columns.txt" -o "$OUT/e.h5"
refuse "$c" "NUL byte in a line" "nul.txt:1" "$IN/nul.txt" -o "$OUT/e.h5"
refuse "$c" "id written 1e3" "sci-id.txt:1" "$IN/sci-id.txt" -o "$OUT/e.h5"
refuse "$c" "id written 0x10" "hex-id.txt:1" "$IN/hex-id.txt" -o "$OUT/e.h5"
refuse "$c" "empty field" "empty-field.txt:1" "$IN/empty-field.txt" -o "$OUT/e.h5"
refuse "$c" "line of 20 MB" "long-line.txt:1" "$IN/long-line.txt" -o "$OUT/e.h5"
refuse "$c" "truncated gzip" "cut.gz" "$IN/cut.gz" -o "$OUT/e.h5"
refuse "$c" "corrupt gzip" "corrupt.gz" "$IN/corrupt.gz" -o "$OUT/e.h5"
refuse "$c" "gzip magic only" "magic-only.gz" "$IN/magic-only.gz" -o "$OUT/e.h5"
AS=1 refuse "$c" "unreadable (user)" "unreadable.txt" "$IN/unreadable.txt" -o "$OUT/rw/e.h5"
refuse "$c" "--base 2" "--base" "$IN/tri.txt" --base 2 -o "$OUT/e.h5"
refuse "$c" "--base -1" "--base" "$IN/tri.txt" --base -1 -o "$OUT/e.h5"
refuse "$c" "--base 1 with id 0" "tri.txt:1" "$IN/tri.txt" --base 1 -o "$OUT/e.h5"
refuse "$c" "--num-nodes -1" "--num-nodes" "$IN/tri.txt" --num-nodes -1 -o "$OUT/e.h5"
refuse "$c" "--num-nodes 2 with id 2" "tri.txt" "$IN/tri.txt" --num-nodes 2 -o "$OUT/e.h5"
refuse "$c" "--num-nodes 8e9" "--num-nodes" "$IN/tri.txt" --num-nodes 8000000000 -o "$OUT/e.h5"
refuse "$c" "--synthetic-features bogus" "--synthetic-features" "$IN/tri.txt" --synthetic-features bogus -o "$OUT/e.h5"
refuse "$c" "--feature-width 0" "--feature-width" "$IN/tri.txt" --synthetic-features random --feature-width 0 -o "$OUT/e.h5"
refuse "$c" "--feature-width 2^40" "the graph needs" "$IN/tri.txt" --synthetic-features random --feature-width 1099511627776 -o "$OUT/e.h5"
refuse "$c" "--feature-width 1e10 (needs too much)" "the graph needs" "$IN/tri.txt" --synthetic-features random --feature-width 10000000000 -o "$OUT/e.h5"
refuse "$c" "--classes 0" "--classes" "$IN/tri.txt" --classes 0 -o "$OUT/e.h5"
refuse "$c" "--classes -1" "--classes" "$IN/tri.txt" --classes -1 -o "$OUT/e.h5"
refuse "$c" "-o over the input" "tri.txt" "$IN/tri.txt" -o "$IN/tri.txt"
refuse "$c" "-o to /dev/full" "/dev/full" "$IN/tri.txt" -o /dev/full
refuse "$c" "-o in a missing dir" "nodir" "$IN/tri.txt" -o "$OUT/nodir/e.h5"
accept "$c" "CRLF line ends" 'said "3 nodes"' "$IN/crlf.txt" -o "$OUT/crlf.h5"
accept "$c" "no newline at the end" 'said "3 nodes"' "$IN/no-newline.txt" -o "$OUT/nonl.h5"
accept "$c" "signed ids +5 -0" 'graph_ok "$OUT/signed.h5"' "$IN/signed-id.txt" -o "$OUT/signed.h5"
accept "$c" "self-loop only" 'graph_ok "$OUT/self.h5"' "$IN/self-loop.txt" -o "$OUT/self.h5"
accept "$c" "duplicate edges" 'graph_ok "$OUT/dupes.h5"' "$IN/dupes.txt" -o "$OUT/dupes.h5"
accept "$c" "gzip input" 'said "3 nodes"' "$IN/tri.txt.gz" -o "$OUT/gz.h5"
STDIN=$IN/tri.txt accept "$c" "standard input" 'said "3 nodes"' - -o "$OUT/stdin.h5"
STDIN=$IN/random.bin refuse "$c" "random bytes on standard input" "standard input" - -o "$OUT/e.h5"
timeout 20 sh -c 'sleep 0.3; cat "$0" >"$1"' "$IN/tri.txt" "$IN/fifo" & bg_pids+=($!)
accept "$c" "FIFO with a writer" 'said "3 nodes"' "$IN/fifo" -o "$OUT/fifo-in.h5"
# node files (--nodes), .npy features (--features), --split
printf 'id,label,split\n0,a,train\n1,b,test\n2,a,val\n7,b,\n' >"$IN/nodes.csv"
printf 'id,label\n0,0\n1,1\n0,1\n' >"$IN/nodes-dup.csv"
printf 'id,label,f0\n0,0,1\n1,1\n2,0,3\n' >"$IN/nodes-ragged.csv"
printf 'id,label,f0\n0,0,1\n1,1,nan\n2,0,3\n' >"$IN/nodes-nan.csv"
printf 'id,label,split\n0,0,train\n1,1,bogus\n2,0,test\n' >"$IN/nodes-split.csv"
printf 'id,label\n0,0\n1,1\n' >"$IN/nodes-short.csv"
printf 'id,label\n0,0\n1,1\n2,1\n' >"$IN/nodes-nosplit.csv"
printf 'id,label\n0,"unterminated\n1,1\n2,0\n' >"$IN/nodes-quote.csv"
printf '\x93NUMPY\x01\x00\x20\x00{'"'"'descr'"'"': '"'"'<f4'"'"', '"'"'shape'"'"': (3, 2)' >"$IN/cut.npy"
head -c 64 "$IN/random.bin" >"$IN/random.npy"
accept "$c" "node file: isolated node 7 kept" 'said "4 nodes"' "$IN/tri.txt" --nodes "$IN/nodes.csv" -o "$OUT/nodes.h5"
accept "$c" "--split on a node file without one" 'said "3 train"' "$IN/tri.txt" --nodes "$IN/nodes-nosplit.csv" --split 1,0,0 -o "$OUT/nsplit.h5"
refuse "$c" "node file missing" "nope.csv" "$IN/tri.txt" --nodes "$IN/nope.csv" -o "$OUT/e.h5"
refuse "$c" "node file is random bytes" "random.bin" "$IN/tri.txt" --nodes "$IN/random.bin" -o "$OUT/e.h5"
refuse "$c" "duplicate id in the node file" "nodes-dup.csv:4" "$IN/tri.txt" --nodes "$IN/nodes-dup.csv" -o "$OUT/e.h5"
refuse "$c" "ragged node file" "nodes-ragged.csv:3" "$IN/tri.txt" --nodes "$IN/nodes-ragged.csv" -o "$OUT/e.h5"
refuse "$c" "NaN feature in the node file" "nodes-nan.csv:3" "$IN/tri.txt" --nodes "$IN/nodes-nan.csv" -o "$OUT/e.h5"
refuse "$c" "bad split value" "nodes-split.csv:3" "$IN/tri.txt" --nodes "$IN/nodes-split.csv" -o "$OUT/e.h5"
refuse "$c" "unterminated quote" "nodes-quote.csv:2" "$IN/tri.txt" --nodes "$IN/nodes-quote.csv" -o "$OUT/e.h5"
refuse "$c" "edge endpoint not in the node file" "tri.txt:" "$IN/tri.txt" --nodes "$IN/nodes-short.csv" -o "$OUT/e.h5"
refuse "$c" "--label-column missing" "--label-column" "$IN/tri.txt" --nodes "$IN/nodes.csv" --label-column y -o "$OUT/e.h5"
refuse "$c" "--split with a split column" "--split" "$IN/tri.txt" --nodes "$IN/nodes.csv" --split 0.5,0.5,0 -o "$OUT/e.h5"
refuse "$c" "--split 0.5,0.5" "--split" "$IN/tri.txt" --nodes "$IN/nodes-short.csv" --split 0.5,0.5 -o "$OUT/e.h5"
refuse "$c" "--split nan,0,0" "--split" "$IN/tri.txt" --nodes "$IN/nodes-short.csv" --split nan,0,0 -o "$OUT/e.h5"
refuse "$c" "--features truncated .npy" "cut.npy" "$IN/tri.txt" --features "$IN/cut.npy" -o "$OUT/e.h5"
refuse "$c" "--features random bytes" "random.npy" "$IN/tri.txt" --features "$IN/random.npy" -o "$OUT/e.h5"
refuse "$c" "--features a directory" "emptydir" "$IN/tri.txt" --features "$IN/emptydir" -o "$OUT/e.h5"
refuse "$c" "--features degree (old spelling)" "--synthetic-features" "$IN/tri.txt" --features degree -o "$OUT/e.h5"
refuse "$c" "--seed (old spelling)" "--seed" "$IN/tri.txt" --seed 3 -o "$OUT/e.h5"
refuse "$c" "-o over the node file" "nodes.csv" "$IN/tri.txt" --nodes "$IN/nodes.csv" -o "$IN/nodes.csv"

# ==== convert mtx ================================================================================
c="convert mtx"
refuse "$c" "header declares 1.5e9 rows" "huge-rows.mtx" "$IN/huge-rows.mtx" -o "$OUT/m.h5"
refuse "$c" "header declares 1e12 entries" "huge-nnz.mtx" "$IN/huge-nnz.mtx" -o "$OUT/m.h5"
refuse "$c" "negative row count" "negative-rows.mtx" "$IN/negative-rows.mtx" -o "$OUT/m.h5"
refuse "$c" "rectangular 3x4" "rectangular.mtx" "$IN/rectangular.mtx" -o "$OUT/m.h5"
refuse "$c" "index 0 (1-based format)" "zero-index.mtx" "$IN/zero-index.mtx" -o "$OUT/m.h5"
refuse "$c" "row past the size" "row-range.mtx" "$IN/row-range.mtx" -o "$OUT/m.h5"
refuse "$c" "NaN value" "nan-value.mtx" "$IN/nan-value.mtx" -o "$OUT/m.h5"
refuse "$c" "value missing" "missing-value.mtx" "$IN/missing-value.mtx" -o "$OUT/m.h5"
refuse "$c" "complex field" "complex.mtx" "$IN/complex.mtx" -o "$OUT/m.h5"
refuse "$c" "hermitian symmetry" "hermitian.mtx" "$IN/hermitian.mtx" -o "$OUT/m.h5"
refuse "$c" "array format" "array.mtx" "$IN/array.mtx" -o "$OUT/m.h5"
refuse "$c" "skew-symmetric" "skew.mtx" "$IN/skew.mtx" -o "$OUT/m.h5"
refuse "$c" "more entries than declared" "too-many.mtx" "$IN/too-many.mtx" -o "$OUT/m.h5"
refuse "$c" "banner only" "header-only.mtx" "$IN/header-only.mtx" -o "$OUT/m.h5"
refuse "$c" "no banner" "no-banner.mtx" "$IN/no-banner.mtx" -o "$OUT/m.h5"
refuse "$c" "size line of two numbers" "short-size.mtx" "$IN/short-size.mtx" -o "$OUT/m.h5"
refuse "$c" "integer value past int64" "int-overflow.mtx" "$IN/int-overflow.mtx" -o "$OUT/m.h5"
refuse "$c" "empty file" "empty.txt" "$IN/empty.txt" -o "$OUT/m.h5"
refuse "$c" "random bytes" "random.bin" "$IN/random.bin" -o "$OUT/m.h5"
refuse "$c" "truncated gzip" "cut.gz" "$IN/cut.gz" -o "$OUT/m.h5"
refuse "$c" "--feature-width -3" "--feature-width" "$IN/ok.mtx" --synthetic-features random --feature-width -3 -o "$OUT/m.h5"
refuse "$c" "-o over the input" "ok.mtx" "$IN/ok.mtx" -o "$IN/ok.mtx"
accept "$c" "valid file" 'graph_ok "$OUT/ok.h5"' "$IN/ok.mtx" -o "$OUT/ok.h5"
accept "$c" "valid gzip file" 'graph_ok "$OUT/okgz.h5"' "$IN/ok.mtx.gz" -o "$OUT/okgz.h5"
survive "$c" "banner in odd case" "$IN/case.mtx" -o "$OUT/case.h5"
survive "$c" "no entries (3 isolated nodes)" "$IN/no-entries.mtx" -o "$OUT/none.h5"

# ==== convert ogb ================================================================================
c="convert ogb"
refuse "$c" "directory missing" "nope" "$IN/nope" -o "$OUT/o.h5"
refuse "$c" "a file, not a directory" "tri.txt" "$IN/tri.txt" -o "$OUT/o.h5"
refuse "$c" "an empty directory" "emptydir" "$IN/emptydir" -o "$OUT/o.h5"
refuse "$c" "--split missing" "nope" "$IN/ogb" --split nope -o "$OUT/o.h5"
refuse "$c" "--split ../.. (leaves the dataset)" "no such file" "$IN/ogb" --split ../.. -o "$OUT/o.h5"
refuse "$c" "node count is a word" "num-node-list" "$IN/ogb-nodes-garbage" -o "$OUT/o.h5"
refuse "$c" "node count negative" "num-node-list" "$IN/ogb-nodes-negative" -o "$OUT/o.h5"
refuse "$c" "node count 8e9" "num-node-list" "$IN/ogb-nodes-huge" -o "$OUT/o.h5"
refuse "$c" "edge endpoint out of range" "edge.csv.gz" "$IN/ogb-edge-range" -o "$OUT/o.h5"
refuse "$c" "feature rows of uneven width" "node-feat.csv.gz" "$IN/ogb-feat-columns" -o "$OUT/o.h5"
refuse "$c" "NaN feature" "node-feat.csv.gz" "$IN/ogb-feat-nan" -o "$OUT/o.h5"
refuse "$c" "label is a word" "node-label.csv.gz" "$IN/ogb-label-text" -o "$OUT/o.h5"
refuse "$c" "label negative" "node-label.csv.gz" "$IN/ogb-label-negative" -o "$OUT/o.h5"
refuse "$c" "train index out of range" "train.csv.gz" "$IN/ogb-train-range" -o "$OUT/o.h5"
survive "$c" "node features missing (they are optional)" "$IN/ogb-no-feat" -o "$OUT/o.h5"
refuse "$c" "two splits, no --split" "split" "$IN/ogb-two-splits" -o "$OUT/o.h5"
refuse "$c" "edge file not gzip" "edge.csv.gz" "$IN/ogb-plain-edge" -o "$OUT/o.h5"
accept "$c" "valid fixture" 'graph_ok "$OUT/ogb.h5"' "$IN/ogb" -o "$OUT/ogb.h5"
accept "$c" "two splits, --split time" 'graph_ok "$OUT/ogb2.h5"' "$IN/ogb-two-splits" --split time -o "$OUT/ogb2.h5"

# ==== convert planetoid ==========================================================================
c="convert planetoid"
refuse "$c" "input missing" "ind.cora" "$IN/nope" -o "$OUT/pl.h5"
refuse "$c" "input is a file" "tri.txt" "$IN/tri.txt" -o "$OUT/pl.h5"
refuse "$c" "input dir empty" "ind.cora" "$IN/emptydir" -o "$OUT/pl.h5"
refuse "$c" "--data empty string" "--data" --data "" -o "$OUT/pl.h5"
refuse "$c" "--name bogus" "--name" "$IN/emptydir" --name bogus -o "$OUT/pl.h5"
refuse "$c" "input missing (option absent)" "data" -o "$OUT/pl.h5"
if [[ -n $planetoid_src ]]; then
  accept "$c" "real Cora files" 'graph_ok "$OUT/pl.h5"' "$IN/pl" -o "$OUT/pl.h5"
  refuse "$c" "Cora files as --name citeseer" "citeseer" "$IN/pl" --name citeseer -o "$OUT/plc.h5"
  refuse "$c" "ind.cora.graph missing" "ind.cora.graph" "$IN/pl-no-graph" -o "$OUT/plx.h5"
  refuse "$c" "ind.cora.x truncated" "ind.cora.x" "$IN/pl-trunc-x" -o "$OUT/plx.h5"
  refuse "$c" "ind.cora.y empty" "ind.cora.y" "$IN/pl-empty-y" -o "$OUT/plx.h5"
  refuse "$c" "ind.cora.graph random bytes" "ind.cora.graph" "$IN/pl-garbage-graph" -o "$OUT/plx.h5"
  refuse "$c" "x and y swapped" "ind.cora" "$IN/pl-swap-x-y" -o "$OUT/plx.h5"
  refuse "$c" "test index out of range" "test.index" "$IN/pl-index-range" -o "$OUT/plx.h5"
  refuse "$c" "test index negative" "test.index" "$IN/pl-index-negative" -o "$OUT/plx.h5"
  refuse "$c" "test index a word" "test.index" "$IN/pl-index-text" -o "$OUT/plx.h5"
  refuse "$c" "test index empty" "test.index" "$IN/pl-index-empty" -o "$OUT/plx.h5"
  refuse "$c" "ind.cora.ty is a FIFO" "ind.cora.ty" "$IN/pl-fifo" -o "$OUT/plx.h5"
  refuse "$c" "ind.cora.y is a directory" "ind.cora.y" "$IN/pl-dir-y" -o "$OUT/plx.h5"
  survive "$c" "byte flip in ind.cora.allx" "$IN/pl-flip-allx" -o "$OUT/plf1.h5"
  survive "$c" "byte flip in ind.cora.graph" "$IN/pl-flip-graph" -o "$OUT/plf2.h5"
  refuse "$c" "-o over an input file" "ind.cora.x" "$IN/pl" -o "$IN/pl/ind.cora.x"
fi

# ==== plan =======================================================================================
refuse plan "--ranks absent" "--ranks"
refuse plan "--ranks 0" "--ranks" --ranks 0
refuse plan "--ranks -4" "--ranks" --ranks -4
refuse plan "--ranks abc" "--ranks" --ranks abc
refuse plan "--ranks 2^31" "--ranks" --ranks 2147483648
refuse plan "--ranks 1e9 (more than the limit)" "--ranks" --ranks 1000000000
refuse plan "--ranks-per-node 0" "--ranks-per-node" --ranks 4 --ranks-per-node 0
survive plan "--ranks-per-node 3 of 4 (a partial node)" --ranks 4 --ranks-per-node 3
survive plan "--bandwidth one value (both links)" --ranks 4 --bandwidth 100
refuse plan "--bandwidth words" "--bandwidth" --ranks 4 --bandwidth a,b
refuse plan "--bandwidth 0,0" "--bandwidth" --ranks 4 --bandwidth 0,0
refuse plan "--bandwidth nan,1" "--bandwidth" --ranks 4 --bandwidth nan,1
refuse plan "--latency -1,2" "--latency" --ranks 4 --latency -1,2
refuse plan "--gemm-gflops 0" "--gemm-gflops" --ranks 4 --gemm-gflops 0
refuse plan "--gemm-gflops inf" "--gemm-gflops" --ranks 4 --gemm-gflops inf
refuse plan "--spmm-gbs -5" "--spmm-gbs" --ranks 4 --spmm-gbs -5
refuse plan "--layers 0" "--layers" --ranks 4 --layers 0
refuse plan "--hidden 0" "--hidden" --ranks 4 --hidden 0
refuse plan "--hidden 1e30" "--hidden" --ranks 4 --hidden 1e30
refuse plan "--dropout 1.5" "--dropout" --ranks 4 --dropout 1.5
refuse plan "--transport carrier-pigeon" "--transport" --ranks 4 --transport carrier-pigeon
refuse plan "--ranks 2.5 (not an integer)" "--ranks" --ranks 2.5
refuse plan "--hidden 1.5 (not an integer)" "--hidden" --ranks 4 --hidden 1.5
refuse plan "--comm-variant bogus" "--comm-variant" --ranks 4 --comm-variant bogus
refuse plan "--agg-chunks 0" "--agg-chunks" --ranks 4 --agg-chunks 0
refuse plan "--agg-chunks 4097" "--agg-chunks" --ranks 4 --agg-chunks 4097
refuse plan "--memory-per-rank 3Q" "--memory-per-rank" --ranks 4 --memory-per-rank 3Q
accept plan "--memory-per-rank 1K (nothing fits)" 'said "no grid fits"' --ranks 4 --memory-per-rank 1K
accept plan "the graph as positional argument" 'said "g\.h5: 64 nodes"' "$IN/g.h5" --ranks 1
refuse plan "--data missing" "nope.h5" --ranks 4 --data "$IN/nope.h5"
refuse plan "--data random bytes" "random.bin" --ranks 4 --data "$IN/random.bin"
refuse plan "--data a FIFO" "fifo" --ranks 4 --data "$IN/fifo"
refuse plan "--data declares 2^62 nodes" "nodes-2e62.h5" --ranks 4 --data "$IN/nodes-2e62.h5"
accept plan "8 ranks" 'said "2x2x2|1x"' --ranks 8
accept plan "--json" 'json_ok "$LOG/out"' --ranks 6 --json
accept plan "--ranks 1" "" --ranks 1
p="plan gpt"
refuse "$p" "--ranks 0" "--ranks" --ranks 0
refuse "$p" "--heads 0" "--heads" --ranks 4 --heads 0
refuse "$p" "--embed not divisible by --heads" "--embed" --ranks 4 --embed 100 --heads 3
refuse "$p" "--vocab 0" "--vocab" --ranks 4 --vocab 0
refuse "$p" "--block -1" "--block" --ranks 4 --block -1
refuse "$p" "--batch 0" "--batch" --ranks 4 --batch 0
refuse "$p" "--grad-accum 0" "--grad-accum" --ranks 4 --grad-accum 0
refuse "$p" "--bucket-mb -1" "--bucket-mb" --ranks 4 --bucket-mb -1
refuse "$p" "--bucket-mb nan" "--bucket-mb" --ranks 4 --bucket-mb nan
refuse "$p" "--precision fp16" "--precision" --ranks 4 --precision fp16
survive "$p" "--memory-per-rank 1K (nothing fits)" --ranks 4 --memory-per-rank 1K
refuse "$p" "--embed 2^40" "--embed" --ranks 4 --embed 1099511627776 --heads 1
accept "$p" "4 ranks --json" 'json_ok "$LOG/out"' --ranks 4 --json

# ==== inspect ====================================================================================
refuse inspect "file missing" "nope.h5" "$IN/nope.h5"
refuse inspect "file is a directory" "emptydir" "$IN/emptydir"
refuse inspect "file is a FIFO" "fifo" "$IN/fifo"
refuse inspect "file is empty" "empty.txt" "$IN/empty.txt"
refuse inspect "file is random bytes" "random.bin" "$IN/random.bin"
refuse inspect "file is a GPT checkpoint" "model.h5" "$IN/model.h5"
refuse inspect "file truncated" "trunc-g-half.h5" "$IN/trunc-g-half.h5"
refuse inspect "indptr not monotone" "/graph/indptr" "$IN/indptr-nonmono.h5"
refuse inspect "column out of range" "/graph/indices" "$IN/col-big.h5"
refuse inspect "declares 2^62 nodes" "nodes-2e62.h5" "$IN/nodes-2e62.h5"
refuse inspect "an empty graph" "empty-graph.h5" "$IN/empty-graph.h5"
AS=1 refuse inspect "unreadable (user)" "unreadable.h5" "$IN/unreadable.h5"
refuse inspect "--grid 2x2" "--grid" "$IN/g.h5" --grid 2x2
refuse inspect "--grid 1x1x100000000" "--grid" "$IN/g.h5" --grid 1x1x100000000
refuse inspect "--balance random" "--balance" "$IN/g.h5" --grid 2x2x2 --balance random
refuse inspect "--layers 0" "--layers" "$IN/g.h5" --layers 0
refuse inspect "--layers abc" "--layers" "$IN/g.h5" --layers abc
refuse inspect "--balance-seed -1" "--balance-seed" "$IN/g.h5" --grid 2x1x1 --balance permute --balance-seed -1
refuse inspect "no file" "--data is required"
for v in sig sbver; do refuse inspect "byte flip: model.h5 $v" "flip-model-$v.h5" "$IN/flip-model-$v.h5"; done
for v in eof 5 25 50 98; do survive inspect "byte flip: g.h5 at $v" "$IN/flip-g-$v.h5"; done
accept inspect "--json" 'json_ok "$LOG/out"' "$IN/g.h5" --json --grid 2x2x1 --balance permute
accept inspect "a prepared file" 'said "nodes"' "$IN/prep.h5"
accept inspect "a graph without edges" 'said "nodes"' "$IN/no-edges.h5" --grid 2x1x1

# ==== gpt train ==================================================================================
t="gpt train"
refuse "$t" "--data missing" "nope.txt" "${gpt1[@]}" --data "$IN/nope.txt"
refuse "$t" "--data a directory" "emptydir" "${gpt1[@]}" --data "$IN/emptydir"
refuse "$t" "--data empty string" "--data" "${gpt1[@]}" --data ""
refuse "$t" "--data empty file" "empty.txt" "${gpt1[@]}" --data "$IN/empty.txt"
refuse "$t" "--data shorter than a block" "--data: the training split has" $(gpt1_but --block) --data "$IN/short.txt" --block 64
refuse "$t" "--data invalid UTF-8" "bad-utf8.txt" "${gpt1[@]}" --data "$IN/bad-utf8.txt"
refuse "$t" "--data random bytes" "random.bin" "${gpt1[@]}" --data "$IN/random.bin" --vocab 100
refuse "$t" "--data an HDF5 file as text" "g.h5" "${gpt1[@]}" --data "$IN/g.h5"
AS=1 refuse "$t" "--data unreadable (user)" "unreadable.txt" "${gpt1[@]}" --data "$IN/unreadable.txt"
refuse "$t" "token file, wrong magic" "magic.bin" "${gpt1[@]}" --data "$IN/magic.bin" --vocab 100
refuse "$t" "token file, wrong version" "version.bin" "${gpt1[@]}" --data "$IN/version.bin" --vocab 100
refuse "$t" "token file declares 2^30 tokens" "declares-more.bin" "${gpt1[@]}" --data "$IN/declares-more.bin" --vocab 100
refuse "$t" "token file, negative count" "negative-count.bin" "${gpt1[@]}" --data "$IN/negative-count.bin" --vocab 100
refuse "$t" "token file, header cut" "header-only.bin" "${gpt1[@]}" --data "$IN/header-only.bin" --vocab 100
refuse "$t" "token file, no tokens" "zero-tokens.bin" "${gpt1[@]}" --data "$IN/zero-tokens.bin" --vocab 100
refuse "$t" "token ids past --vocab" "tok.bin" "${gpt1[@]}" --data "$IN/tok.bin" --vocab 50
refuse "$t" "token file without --vocab" "--vocab" "${gpt1[@]}" --data "$IN/tok.bin"
refuse "$t" "--vocab with a text file" "--vocab" "${gpt1[@]}" --data "$IN/text.txt" --vocab 65
refuse "$t" "--vocab -1" "--vocab" "${gpt1[@]}" --data "$IN/tok.bin" --vocab -1
refuse "$t" "--vocab past int64" "--vocab" "${gpt1[@]}" --data "$IN/tok.bin" --vocab 99999999999999999999
refuse "$t" "--val-data missing" "nope.bin" "${gpt1[@]}" --data "$IN/tok.bin" --vocab 100 --val-data "$IN/nope.bin"
refuse "$t" "--val-data with a text file" "--val-data" "${gpt1[@]}" --data "$IN/text.txt" --val-data "$IN/tok.bin"
refuse "$t" "--layers 0" "--layers" "${gpt1[@]}" --data "$IN/text.txt" --layers 0
refuse "$t" "--heads 0" "--heads" "${gpt1[@]}" --data "$IN/text.txt" --heads 0
refuse "$t" "--embed 0" "--embed" "${gpt1[@]}" --data "$IN/text.txt" --embed 0
refuse "$t" "--embed 100 --heads 6" "--embed" $(gpt1_but --embed --heads) --data "$IN/text.txt" --embed 100 --heads 6
refuse "$t" "--embed 1048576 (needs too much)" "--embed" $(gpt1_but --embed --heads) --data "$IN/text.txt" --embed 1048576 --heads 1
refuse "$t" "--block 0" "--block" "${gpt1[@]}" --data "$IN/text.txt" --block 0
refuse "$t" "--block past the corpus" "--block" "${gpt1[@]}" --data "$IN/text.txt" --block 100000
refuse "$t" "--batch 0" "--batch" "${gpt1[@]}" --data "$IN/text.txt" --batch 0
refuse "$t" "--batch 2^62" "--batch" "${gpt1[@]}" --data "$IN/text.txt" --batch 4611686018427387904
refuse "$t" "--iters -1" "--iters" "${gpt1[@]}" --data "$IN/text.txt" --iters -1
refuse "$t" "--lr nan" "--lr" "${gpt1[@]}" --data "$IN/text.txt" --lr nan
refuse "$t" "--lr -1" "--lr" "${gpt1[@]}" --data "$IN/text.txt" --lr -1
refuse "$t" "--lr 1e30 (loss diverges)" "loss" $(gpt1_but --iters) --iters 4 --data "$IN/text.txt" --lr 1e30
refuse "$t" "--min-lr -1" "--min-lr" "${gpt1[@]}" --data "$IN/text.txt" --min-lr -1
refuse "$t" "--warmup -1" "--warmup" "${gpt1[@]}" --data "$IN/text.txt" --warmup -1
refuse "$t" "--weight-decay -1" "--weight-decay" "${gpt1[@]}" --data "$IN/text.txt" --weight-decay -1
refuse "$t" "--beta2 1" "--beta2" "${gpt1[@]}" --data "$IN/text.txt" --beta2 1
refuse "$t" "--beta2 -0.5" "--beta2" "${gpt1[@]}" --data "$IN/text.txt" --beta2 -0.5
refuse "$t" "--dropout 1" "--dropout" "${gpt1[@]}" --data "$IN/text.txt" --dropout 1
refuse "$t" "--grad-clip -1" "--grad-clip" "${gpt1[@]}" --data "$IN/text.txt" --grad-clip -1
refuse "$t" "--grad-accum 0" "--grad-accum" "${gpt1[@]}" --data "$IN/text.txt" --grad-accum 0
refuse "$t" "--eval-every -1" "--eval-every" "${gpt1[@]}" --data "$IN/text.txt" --eval-every -1
refuse "$t" "--eval-iters 0 with evaluation" "--eval-iters" $(gpt1_but --eval-every) --data "$IN/text.txt" --eval-every 1 --eval-iters 0
refuse "$t" "--seed 2^64" "--seed" "${gpt1[@]}" --data "$IN/text.txt" --seed 18446744073709551616
refuse "$t" "--grid 2x1x1 on one rank" "--grid" "${gpt1[@]}" --data "$IN/text.txt" --grid 2x1x1
refuse "$t" "--dp 0" "--dp" "${gpt1[@]}" --data "$IN/text.txt" --dp 0
refuse "$t" "--dp 2^31-1 (overflows ranks)" "--dp" "${gpt1[@]}" --data "$IN/text.txt" --dp 2147483647 --grid 2x1x1
refuse "$t" "--zero 4" "--zero" "${gpt1[@]}" --data "$IN/text.txt" --zero 4
refuse "$t" "--zero -1" "--zero" "${gpt1[@]}" --data "$IN/text.txt" --zero -1
refuse "$t" "--bucket-mb 0" "--bucket-mb" "${gpt1[@]}" --data "$IN/text.txt" --bucket-mb 0
refuse "$t" "--bucket-mb 1e30" "--bucket-mb" "${gpt1[@]}" --data "$IN/text.txt" --bucket-mb 1e30
refuse "$t" "--precision fp16" "--precision" "${gpt1[@]}" --data "$IN/text.txt" --precision fp16
refuse "$t" "--memory-per-rank 1K" "--memory-per-rank" "${gpt1[@]}" --data "$IN/text.txt" --memory-per-rank 1K
refuse "$t" "--threads -1" "--threads" "${gpt1[@]}" --data "$IN/text.txt" --threads -1
refuse "$t" "--save in a missing dir" "nodir" "${gpt1[@]}" --data "$IN/text.txt" --save "$OUT/nodir/m.h5"
refuse "$t" "--save over --data" "text.txt" "${gpt1[@]}" --data "$IN/text.txt" --save "$IN/text.txt"
refuse "$t" "--save to /dev/full" "/dev/full" "${gpt1[@]}" --data "$IN/text.txt" --save /dev/full
refuse "$t" "--save to a FIFO" "fifo" "${gpt1[@]}" --data "$IN/text.txt" --save "$OUT/fifo"
refuse "$t" "--save is a directory" "adir" "${gpt1[@]}" --data "$IN/text.txt" --save "$OUT/adir"
refuse "$t" "--metrics to /dev/full" "/dev/full" "${gpt1[@]}" --data "$IN/text.txt" --metrics /dev/full
refuse "$t" "--metrics same as --save" "same" "${gpt1[@]}" --data "$IN/text.txt" --metrics "$OUT/same.h5" --save "$OUT/same.h5"
refuse "$t" "--config FIFO" "fifo" "${gpt1[@]}" --data "$IN/text.txt" --config "$IN/fifo"
refuse "$t" "--config heads = 0" "--heads" --data "$IN/text.txt" --config "$IN/gpt-heads0.toml"
refuse "$t" "--config with a GCN-only key" "hidden" "${gpt1[@]}" --data "$IN/text.txt" --config "$IN/huge-hidden.toml"
accept "$t" "tiny run, --save, metrics" '[[ -s $OUT/m.h5 ]] && jsonl_ok "$OUT/gm.jsonl"' "${gpt1[@]}" --data "$IN/text.txt" --save "$OUT/m.h5" --metrics "$OUT/gm.jsonl"
accept "$t" "--iters 0 saves the initial weights" '[[ -s $OUT/m0.h5 ]]' $(gpt1_but --iters) --iters 0 --data "$IN/text.txt" --save "$OUT/m0.h5"
accept "$t" "--config file" 'said "parameters"' --data "$IN/text.txt" --config "$IN/gpt-good.toml"
accept "$t" "token file" 'said "parameters"' "${gpt1[@]}" --data "$IN/tok.bin" --vocab 100
refuse "$t" "a one-character corpus (no validation split)" "validation split" "${gpt1[@]}" --data "$IN/one-char.txt"
accept "$t" "--eval-every 0: no validation loss claimed" '! said "best validation loss 0"' $(gpt1_but --iters) --iters 2 --data "$IN/text.txt"
STDIN=$IN/text.txt refuse "$t" "--data - is not a file" "-" "${gpt1[@]}" --data -

# ==== gpt sample =================================================================================
s="gpt sample"
refuse "$s" "--model absent" "--model"
refuse "$s" "--model missing" "none.h5" --model "$IN/none.h5"
refuse "$s" "--model empty string" "--model" --model ""
refuse "$s" "--model a directory" "emptydir" --model "$IN/emptydir"
refuse "$s" "--model a FIFO" "fifo" --model "$IN/fifo"
refuse "$s" "--model empty file" "empty.txt" --model "$IN/empty.txt"
refuse "$s" "--model random bytes" "random.bin" --model "$IN/random.bin"
refuse "$s" "--model a graph file" "g.h5" --model "$IN/g.h5"
AS=1 refuse "$s" "--model unreadable (user)" "unreadable.h5" --model "$IN/unreadable.h5"
for m in model-no-wte:wte model-wte-shape:wte model-no-vocab:vocab model-layers-1000:model-layers-1000.h5 \
         model-heads-0:model-heads-0.h5 model-heads-3:model-heads-3.h5 model-block-0:model-block-0.h5 \
         model-vocab-mismatch:model-vocab-mismatch.h5 model-embed-huge:model-embed-huge.h5 \
         model-format-graph:model-format-graph.h5 model-version-7:model-version-7.h5 model-nan:model-nan.h5; do
  refuse "$s" "edited model: ${m%%:*}" "${m#*:}" --model "$IN/${m%%:*}.h5" --tokens 5 --threads 1
done
survive "$s" "edited model: float64 wpe" --model "$IN/model-f64.h5" --tokens 5 --threads 1
for v in sig sbver; do refuse "$s" "byte flip: model.h5 $v" "flip-model-$v.h5" --model "$IN/flip-model-$v.h5" --tokens 5; done
for v in eof 2 10 50 75 98; do survive "$s" "byte flip: model.h5 at $v" --model "$IN/flip-model-$v.h5" --tokens 5 --threads 1; done
refuse "$s" "truncated model" "trunc-model-half.h5" --model "$IN/trunc-model-half.h5" --tokens 5
survive "$s" "4 KiB zeroed model" --model "$IN/zeroblock-model.h5" --tokens 5 --threads 1
refuse "$s" "--tokens -1" "--tokens" --model "$IN/model.h5" --tokens -1
refuse "$s" "--tokens 2^31" "--tokens" --model "$IN/model.h5" --tokens 2147483648
refuse "$s" "--temperature 0" "--temperature" --model "$IN/model.h5" --temperature 0
refuse "$s" "--temperature -1" "--temperature" --model "$IN/model.h5" --temperature -1
refuse "$s" "--temperature inf" "--temperature" --model "$IN/model.h5" --temperature inf
refuse "$s" "--temperature 1e39 (past float)" "--temperature" --model "$IN/model.h5" --temperature 1e39
refuse "$s" "--top-k -1" "--top-k" --model "$IN/model.h5" --top-k -1
refuse "$s" "--seed -1" "--seed" --model "$IN/model.h5" --seed -1
refuse "$s" "--prompt outside the vocabulary" "--prompt" --model "$IN/model.h5" --prompt "ΩΩ"
refuse "$s" "--prompt with a control character" "--prompt" --model "$IN/model.h5" --prompt $'\x01'
refuse "$s" "--backend tpu" "--backend" --model "$IN/model.h5" --backend tpu
accept "$s" "--tokens 0" 'said "ROMEO"' --model "$IN/model.h5" --tokens 0 --prompt ROMEO --threads 1
accept "$s" "--top-k past the vocabulary" '[[ -s $LOG/out ]]' --model "$IN/model.h5" --tokens 10 --top-k 1000 --threads 1
accept "$s" "--temperature 1e-30" '[[ -s $LOG/out ]]' --model "$IN/model.h5" --tokens 10 --temperature 1e-30 --threads 1
accept "$s" "prompt longer than the block" '[[ -s $LOG/out ]]' --model "$IN/model.h5" --tokens 5 --prompt "$(printf 'a%.0s' {1..200})" --threads 1
refuse "$s" "empty prompt" "--prompt" --model "$IN/model.h5" --tokens 5 --prompt "" --threads 1
accept "$s" "model via a symlink" '[[ -s $LOG/out ]]' --model "$OUT/link-model.h5" --tokens 5 --threads 1

# ==== signals: no temporary file, no output ========================================================
interrupt "generate rmat" "SIGINT while writing" INT "$OUT/big-int.h5" "$OUT/big-int.h5.tmp.*" \
  --scale 16 --edge-factor 8 --feature-width 512 -o "$OUT/big-int.h5"
interrupt "generate rmat" "SIGTERM while writing" TERM "$OUT/big-term.h5" "$OUT/big-term.h5.tmp.*" \
  --scale 16 --edge-factor 8 --feature-width 512 -o "$OUT/big-term.h5"
interrupt "generate rmat" "SIGHUP while writing" HUP "$OUT/big-hup.h5" "$OUT/big-hup.h5.tmp.*" \
  --scale 16 --edge-factor 8 --feature-width 512 -o "$OUT/big-hup.h5"
interrupt train "SIGTERM mid-run with --metrics: ends the epoch" TERM "=$OUT/killed.jsonl" - \
  --epochs 1000000 --quiet --threads 1 --metrics "$OUT/killed.jsonl"
interrupt train "SIGINT mid-run with --metrics: ends the epoch" INT "=$OUT/killed2.jsonl" - \
  --epochs 1000000 --quiet --threads 1 --metrics "$OUT/killed2.jsonl"
interrupt train "SIGTERM mid-run with --checkpoint-dir" TERM "=$OUT/killed3.jsonl" - \
  --epochs 1000000 --quiet --threads 1 --metrics "$OUT/killed3.jsonl" --checkpoint-dir "$OUT/ckpt-sig" --checkpoint-every 1000000
interrupt train "SIGHUP mid-run: ends at once" HUP "$OUT/killed4.jsonl" - \
  --epochs 1000000 --quiet --threads 1 --metrics "$OUT/killed4.jsonl"
interrupt "gpt train" "SIGINT mid-run with --save: ends the step" INT "=$OUT/killed-g.jsonl" - \
  --iters 1000000 --layers 1 --heads 2 --embed 16 --block 16 --batch 2 --threads 1 --quiet \
  --data "$IN/text.txt" --save "$OUT/killed.h5" --metrics "$OUT/killed-g.jsonl"
interrupt "gpt train" "SIGTERM mid-run with --checkpoint-dir: ends the step" TERM "=$OUT/killed2-g.jsonl" - \
  --iters 1000000 --layers 1 --heads 2 --embed 16 --block 16 --batch 2 --threads 1 --quiet \
  --data "$IN/text.txt" --checkpoint-dir "$OUT/gpt-sig" --metrics "$OUT/killed2-g.jsonl"
interrupt "gpt train" "SIGHUP mid-run with --save: ends at once" HUP "$OUT/killed3.h5" - \
  --iters 1000000 --layers 1 --heads 2 --embed 16 --block 16 --batch 2 --threads 1 --quiet \
  --data "$IN/text.txt" --save "$OUT/killed3.h5"

# ==== under MPI ==================================================================================
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 refuse train "MPI 2: bad option printed once" "--epochs" --grid 2x1x1 --epochs -1 --quiet
  NP=4 refuse train "MPI 4: missing data printed once" "nope.h5" --grid 2x2x1 "${tr1[@]}" --data "$IN/nope.h5"
  NP=4 refuse train "MPI 4: NaN features" "/features" --grid 2x2x1 "${tr1[@]}" --data "$IN/feat-nan.h5"
  NP=4 refuse train "MPI 4: loss overflow (3e38 features)" "loss" --grid 2x2x1 --epochs 3 --quiet --threads 1 --data "$IN/feat-3e38.h5"
  NP=2 refuse train "MPI 2: grid of 1 rank on 2" "--grid: 1x1x1" "${tr1[@]}" --grid 1x1x1
  NP=2 accept train "MPI 2: no --grid (auto)" 'said "best validation"' "${tr1[@]}"
  NP=3 refuse gpt "MPI 3: --dp 2 of 3 ranks" "--dp: 2 replicas need a multiple of 2 ranks" train --iters 1 --threads 1 --dp 2
  NP=2 refuse train "MPI 2: --config FIFO" "fifo" --grid 2x1x1 "${tr1[@]}" --config "$IN/fifo"
  NP=4 refuse train "MPI 4: all labels -1" "/masks/train" --grid 1x2x2 "${tr1[@]}" --data "$IN/labels-all-unlabelled.h5"
  NP=2 refuse train "MPI 2: metrics to /dev/full" "/dev/full" --grid 2x1x1 "${tr1[@]}" --metrics /dev/full
  NP=2 refuse "gpt train" "MPI 2: invalid UTF-8 corpus" "bad-utf8.txt" "${gpt1[@]}" --grid 2x1x1 --data "$IN/bad-utf8.txt"
  NP=4 refuse "gpt train" "MPI 4: --dp 2 --zero 5" "--zero" "${gpt1[@]}" --grid 2x1x1 --dp 2 --zero 5 --data "$IN/text.txt"
  NP=2 CHECK='said "test accuracy"' execute 0 train "MPI 2: a valid 2x1x1 run" "" --grid 2x1x1 "${tr1[@]}"
fi

fi  # the built-in cases

# ==== the parts: scripts/red-team.d/*.sh ==========================================================
for part in "$repo"/scripts/red-team.d/*.sh; do
  [[ -e $part ]] || continue
  [[ -z ${RED_TEAM_PART:-} || $(basename "$part" .sh) == "$RED_TEAM_PART" ]] || continue
  # shellcheck source=/dev/null
  source "$part"
done

# ==== summary ====================================================================================
printf '%s\n' "$(printf '%.0s-' {1..108})"
if ((nfail > 0)); then
  echo "Failed cases:"
  for f in "${failures[@]}"; do echo "$f"; done
fi
echo "$n cases, $npass passed, $nfail failed"
((nfail == 0))
