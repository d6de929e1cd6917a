#!/usr/bin/env bash
# Every kind of bad input must end `plexus` with exit code 2 and exactly one line
# `plexus: error: <where>: <what>` naming the file (or option), and leave no output file.
# Usage: cli_bad_input.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passed=0

"$plexus" generate rmat --scale 6 --edge-factor 4 --feature-width 8 --classes 3 -o "$work/good.h5" >/dev/null || {
  echo "FAIL: could not generate the base graph"; exit 1; }

# expect_error NAME EXPECTED_SUBSTRING -- ARGS...
expect_error() {
  local name=$1 want=$2; shift 3
  "$plexus" "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(wc -l <"$work/err")
  if [[ $rc -ne 2 || $lines -ne 1 ]] || ! grep -q "^plexus: error: .*$want" "$work/err"; then
    echo "FAIL [$name]: rc=$rc, $lines stderr lines, wanted '$want':"; cat "$work/err"; failures=$((failures + 1))
  elif [[ -e "$work/metrics.jsonl" ]]; then
    echo "FAIL [$name]: a metrics file was left behind"; failures=$((failures + 1))
  else
    passed=$((passed + 1))
  fi
}

# mutate NAME PYTHON_CODE: copy good.h5 to NAME.h5 and run the code with `f` open for writing.
mutate() {
  cp "$work/good.h5" "$work/$1.h5"
  $py -c "import h5py, numpy as np
f = h5py.File('$work/$1.h5', 'r+')
$2
f.close()"
}

train() { expect_error "$1" "$2" -- train --epochs 2 --quiet --metrics "$work/metrics.jsonl" --data "${@:3}"; }

train missing-file "$work/nope.h5: no such file" "$work/nope.h5"
echo "hello" >"$work/text.h5"
train not-hdf5 "$work/text.h5: not an HDF5 file" "$work/text.h5"
mutate no-labels "del f['labels']"
train missing-dataset "no-labels.h5: /labels" "$work/no-labels.h5"
mutate float-indptr "d = f['graph/indptr'][...]; del f['graph/indptr']; f['graph/indptr'] = d.astype(np.float32)"
train wrong-dtype "/graph/indptr: expected int64, got float32" "$work/float-indptr.h5"
mutate short-features "d = f['features'][...]; del f['features']; f['features'] = d[:, :5]"
train wrong-shape "/features: expected shape" "$work/short-features.h5"
mutate nonmonotone "d = f['graph/indptr'][...]; d[3], d[4] = d[4] + 1, d[3]; f['graph/indptr'][...] = d"
train indptr-not-monotone "/graph/indptr" "$work/nonmonotone.h5"
mutate bad-end "d = f['graph/indptr'][...]; d[-1] -= 1; f['graph/indptr'][...] = d"
train indptr-end "/graph/indptr: last entry" "$work/bad-end.h5"
mutate bad-end-long "d = f['graph/indptr'][...]; d[-1] += 1; f['graph/indptr'][...] = d"
train indptr-end-past-nnz "/graph/indptr: entry indptr\[.*\] = .* outside \[0, nnz" "$work/bad-end-long.h5"
mutate bad-col "d = f['graph/indices'][...]; d[0] = 1 << 20; f['graph/indices'][...] = d"
train column-out-of-range "/graph/indices: column index" "$work/bad-col.h5"
# A header declaring far more edges than the file stores (one chunk of 2^40 written): refused
# before allocating, not an attempt at 8 TB.
mutate huge-indices "d = f['graph/indices'][...]; del f['graph/indices']; x = f.create_dataset('graph/indices', shape=(1 << 40,), dtype=np.int64, chunks=(len(d),)); x[:len(d)] = d"
train huge-declared "/graph/indices: declares 1099511627776 elements but stores only" "$work/huge-indices.h5"
mutate nan-feature "d = f['features'][...]; d[1, 2] = np.nan; f['features'][...] = d"
train nan-features "/features: NaN" "$work/nan-feature.h5"
mutate inf-feature "d = f['features'][...]; d[0, 0] = np.inf; f['features'][...] = d"
train inf-features "/features: " "$work/inf-feature.h5"
mutate big-label "d = f['labels'][...]; d[0] = 3; f['labels'][...] = d"
train label-range "/labels: label 3" "$work/big-label.h5"
mutate short-mask "d = f['masks/train'][...]; del f['masks/train']; f['masks/train'] = d[:-1]"
train mask-length "/masks/train" "$work/short-mask.h5"
$py -c "import h5py, numpy as np
f = h5py.File('$work/empty.h5', 'w'); f.attrs['format'] = 'plexus-graph'; f.attrs['format_version'] = np.int32(1)
f.attrs['num_nodes'] = np.int64(0); f.attrs['num_features'] = np.int64(1); f.attrs['num_classes'] = np.int32(2)
f.attrs['directed'] = np.int8(0); f['graph/indptr'] = np.zeros(1, np.int64); f['graph/indices'] = np.zeros(0, np.int64)
f['features'] = np.zeros((0, 1), np.float32); f['labels'] = np.zeros(0, np.int32)
for m in ('train', 'val', 'test'): f['masks/' + m] = np.zeros(0, np.uint8)
f.close()"
train empty-graph "empty graph" "$work/empty.h5"

opt() { expect_error "$1" "$2" -- train --epochs 2 --quiet --metrics "$work/metrics.jsonl" --data "$work/good.h5" "${@:3}"; }
opt negative-lr "--lr: " --lr -1
opt zero-epochs "--epochs: " --epochs 0
opt dropout-one "--dropout: " --dropout 1
opt zero-layers "--layers: " --layers 0
opt zero-hidden "--hidden: " --hidden 0
opt not-a-number "command line: " --hidden abc
opt unknown-option "command line: " --frobnicate 3
opt bad-grid "--grid: " --grid 2x0x1
# A mistyped subcommand or an option before it is named, not "a subcommand is required".
expect_error unknown-subcommand "command line: unknown subcommand 'trian' of plexus gpt" -- gpt trian
expect_error unknown-top-subcommand "command line: unknown subcommand 'frob' of plexus; see plexus --help" -- frob
expect_error option-before-subcommand "command line: unknown option '--frob' of plexus train; see plexus train --help" -- --frob train
# The error is one printable line whatever the name holds: a newline, a control byte, bytes
# that are not UTF-8 are escaped; valid UTF-8 stays as it is.
expect_error newline-in-name "no-such.nfile.x01.h5: no such file" -- train --data $'no-such\nfile\x01.h5'
expect_error bad-utf8-word "unknown subcommand 'tr.xFFain'" -- $'tr\xffain'
expect_error utf8-name "Ωmega.h5: no such file" -- train --data "Ωmega.h5"
opt grid-size "--grid: " --grid 2x1x1
opt too-many-threads "--threads: 100000 is too many" --threads 100000
opt bad-backend "command line: " --backend tpu
opt memory-budget "--memory-per-rank: .* does not fit: " --memory-per-rank 1K
opt memory-budget-text "--memory-per-rank: expected a positive size" --memory-per-rank lots
printf 'hidden = 8\nnot_an_option = 3\n' >"$work/bad-key.toml"
opt toml-unknown-key "bad-key.toml: unknown key 'not_an_option'" --config "$work/bad-key.toml"
printf 'hidden = [\n' >"$work/broken.toml"
opt toml-syntax "broken.toml: line " --config "$work/broken.toml"
printf 'hidden = true\n' >"$work/bool-int.toml"
opt toml-bool-for-number "bool-int.toml: key 'hidden' needs a value, not true or false" --config "$work/bool-int.toml"
printf 'adamw = 1\n' >"$work/int-flag.toml"
opt toml-number-for-flag "int-flag.toml: key 'adamw' is a flag: true or false" --config "$work/int-flag.toml"
printf 'lr = -3.0\n' >"$work/neg-lr.toml"
opt toml-bad-value "--lr: " --config "$work/neg-lr.toml"
# The GNN kind (--model) and the options of each kind: an unknown kind or aggregator, and an
# option of another kind than the run's, named in one line (on the command line or in --config).
opt model-unknown "--model: 'gpt' is not one of gcn, sage, gin, gat, " --model gpt
opt aggregator-unknown "--aggregator: 'max' is not one of mean, sum" --model sage --aggregator max
opt aggregator-of-gcn "--aggregator: only with --model sage" --aggregator sum
opt aggregator-of-gin "--aggregator: only with --model sage" --model gin --aggregator mean
opt normalize-of-gcn "--normalize: only with --model sage" --model gcn --normalize
opt gin-eps-of-sage "--gin-eps: only with --model gin" --model sage --gin-eps 0.1
opt train-eps-of-gcn "--train-eps: only with --model gin" --train-eps
opt gin-eps-nan "command line: --gin-eps: expected a finite number, got 'nan'" --model gin --gin-eps nan
opt gin-eps-huge "--gin-eps: must be a number in .-1e+06, 1e+06." --model gin --gin-eps 1e7
opt heads-of-gcn "--heads: only with --model gat" --heads 4
opt out-heads-of-sage "--out-heads: only with --model gat" --model sage --out-heads 2
opt attn-dropout-of-gin "--attn-dropout: only with --model gat" --model gin --attn-dropout 0.5
opt negative-slope-of-gcn "--negative-slope: only with --model gat" --model gcn --negative-slope 0.1
opt heads-zero "--heads: must be between 1 and 1024" --model gat --heads 0
opt out-heads-text "command line: --out-heads: expected a whole number" --model gat --out-heads two
opt attn-dropout-one "--attn-dropout: must be a number in .0, 1)" --model gat --attn-dropout 1
opt negative-slope-negative "--negative-slope: must be a number in .0, 1000." --model gat --negative-slope -0.2
opt hidden-of-heads "--hidden: must be a multiple of --heads (8)" --model gat --hidden 12
opt gat-aggregate-first "--layer-order: aggregate-first is not for gat layers: they transform first" --model gat --layer-order aggregate-first
opt gat-shard-adj "--shard-adj: is not supported for --model gat yet" --model gat --shard-adj
printf 'model = "gcn"\naggregator = "sum"\n' >"$work/gcn-aggregator.toml"
opt toml-aggregator-of-gcn "--aggregator: only with --model sage" --config "$work/gcn-aggregator.toml"
printf 'model = "sage"\n' >"$work/sage.toml"
opt toml-sage-with-gin-eps "--gin-eps: only with --model gin" --config "$work/sage.toml" --gin-eps 0.5
printf 'model = "sage"\nheads = 4\n' >"$work/sage-heads.toml"
opt toml-heads-of-sage "--heads: only with --model gat" --config "$work/sage-heads.toml"
printf 'model = "gat"\nheads = 3\nhidden = 16\n' >"$work/gat-heads.toml"
opt toml-gat-heads "--hidden: must be a multiple of --heads (3)" --config "$work/gat-heads.toml"
printf 'model = 3\n' >"$work/model-number.toml"
opt toml-model-number "--model: '3' is not one of gcn, sage, gin, gat, " --config "$work/model-number.toml"
expect_error plan-aggregator-of-gcn "--aggregator: only with --model sage" -- plan --ranks 2 --data "$work/good.h5" --aggregator sum
expect_error plan-model-unknown "--model: 'gpt' is not one of" -- plan --ranks 2 --data "$work/good.h5" --model gpt
expect_error plan-heads-of-gcn "--heads: only with --model gat" -- plan --ranks 2 --data "$work/good.h5" --heads 2
expect_error gen-bad-scale "--scale" -- generate rmat --scale 0 -o "$work/x.h5"
expect_error sbm-classes-above-nodes "--classes: 11 classes for 10 nodes" -- generate sbm --nodes 10 --classes 11 -o "$work/x.h5"
expect_error sbm-empty-train "--train-fraction: must be in (0, 1]" -- generate sbm --nodes 100 --train-fraction 0 -o "$work/x.h5"
expect_error convert-missing-dir "ind.cora" -- convert planetoid "$work/none" -o "$work/x.h5"
[[ -e "$work/x.h5" ]] && { echo "FAIL: x.h5 written despite errors"; failures=$((failures + 1)); }

# Under MPI: a bad file must end every rank promptly with one plexus line and exit code 2,
# whether every rank meets the error or only the rank that reads the bad rows.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi_error() {
  local name=$1 want=$2; shift 2
  timeout 60 mpirun -np 4 "$plexus" train --grid 2x2x1 --epochs 2 --quiet "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(grep -c "^plexus: error: " "$work/err")
  if [[ $rc -ne 2 || $lines -ne 1 ]] || ! grep -q "^plexus: error: .*$want" "$work/err"; then
    echo "FAIL [mpi $name]: rc=$rc (124 = hang), $lines error lines:"; cat "$work/err"; failures=$((failures + 1))
  else
    passed=$((passed + 1))
  fi
}
mpi_error missing-file "nope.h5: no such file" --data "$work/nope.h5"
mpi_error option-of-another-kind "--train-eps: only with --model gin" --data "$work/good.h5" --model sage --train-eps
mpi_error gat-option-of-another-kind "--attn-dropout: only with --model gat" --data "$work/good.h5" --attn-dropout 0.5
mpi_error memory-budget "--memory-per-rank: .* does not fit: " --data "$work/good.h5" --memory-per-rank 1K
mpi_error one-rank-bad-column "/graph/indices: column index" --data "$work/bad-col.h5"
mutate last-row-bad "d = f['graph/indices'][...]; d[-1] = 1 << 20; f['graph/indices'][...] = d"
mpi_error last-rank-bad-column "/graph/indices: column index" --data "$work/last-row-bad.h5"
mpi_error nan-feature "/features: NaN" --data "$work/nan-feature.h5"
# indptr one short of nnz: only the rank that reads the last row can see it.
mpi_error indptr-end-short "/graph/indptr: last entry" --data "$work/bad-end.h5"

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
