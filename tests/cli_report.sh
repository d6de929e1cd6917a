#!/usr/bin/env bash
# `plexus report`: metrics files of the older form (no header, one comm_seconds number) and the
# newer (header, comm_seconds per axis), a run still going, a GPT run, real runs on Cora; the
# table, --csv and --json; bad input.
# Usage: cli_report.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"

# Hand-written files. Medians leave the first epoch out: old 0.6 s, new 0.3 s (speed-up 2).
cat >"$work/old.jsonl" <<'EOF'
{"epoch": 1, "loss": 2.0, "train_acc": 0.1, "val_acc": 0.20, "test_acc": 0.21, "val_loss": 2.0, "epoch_seconds": 1.0, "train_seconds": 0.9, "compute_seconds": 0.8, "comm_seconds": 0.2, "comm_bytes": {"total": 300, "x": 100, "y": 100, "z": 100}, "rank0_comm_bytes": {"x": 50, "y": 50, "z": 50}}
{"epoch": 2, "loss": 1.5, "train_acc": 0.3, "val_acc": 0.50, "test_acc": 0.52, "val_loss": 1.5, "epoch_seconds": 0.5, "train_seconds": 0.4, "compute_seconds": 0.4, "comm_seconds": 0.1, "comm_bytes": {"total": 600, "x": 200, "y": 200, "z": 200}, "rank0_comm_bytes": {"x": 100, "y": 100, "z": 100}}
{"epoch": 3, "loss": 1.2, "train_acc": 0.4, "val_acc": 0.40, "test_acc": 0.41, "val_loss": 1.6, "epoch_seconds": 0.7, "train_seconds": 0.6, "compute_seconds": 0.5, "comm_seconds": 0.2, "comm_bytes": {"total": 600, "x": 200, "y": 200, "z": 200}, "rank0_comm_bytes": {"x": 100, "y": 100, "z": 100}}
{"epoch": 4, "loss": 1.1, "train_acc": 0.5, "val_acc": 0.45, "test_acc": 0.44, "val_loss": 1.7, "epoch_seconds": 0.6, "train_seconds": 0.5, "compute_seconds": 0.45, "comm_seconds": 0.15, "comm_bytes": {"total": 600, "x": 200, "y": 200, "z": 200}, "rank0_comm_bytes": {"x": 100, "y": 100, "z": 100}}
{"summary": true, "best_val_acc": 0.5, "test_acc": 0.52, "total_seconds": 2.8, "peak_rss_bytes": 1048576, "peak_tensor_bytes": 524288, "ranks": 8, "grid": "2x2x2", "comm_variant": "baseline", "backend": "cpu"}
EOF
header() {  # header HIDDEN: a newer-form first line
  echo '{"config": true, "command": "train", "version": "0.1.0", "data": "g.h5", "grid": "1x2x1", "ranks": 2, "threads": 1, "backend": "cpu", "started": "2026-11-24T02:00:00Z", "options": {"layers": 2, "hidden": '"$1"', "epochs": 200, "lr": 0.01, "grid": "auto", "metrics": "x.jsonl"}, "reductions": {"comm_seconds": "max over ranks"}}'
}
new_epoch() {  # new_epoch N SECONDS VAL_ACC
  echo '{"epoch": '"$1"', "loss": 1.0, "train_acc": 0.5, "val_acc": '"$3"', "test_acc": 0.6, "val_loss": 1.0, "epoch_seconds": '"$2"', "train_seconds": 0.2, "compute_seconds": 0.1, "comm_seconds": {"total": 0.2, "x": 0.0, "y": 0.2, "z": 0.0}, "comm_seconds_mean": {"total": 0.1, "x": 0.0, "y": 0.1, "z": 0.0}, "comm_bytes": {"total": 4096, "x": 0, "y": 4096, "z": 0}, "rank0_comm_bytes": {"x": 0, "y": 2048, "z": 0}}'
}
{ header 16; new_epoch 1 2.0 0.3; new_epoch 2 0.3 0.7; new_epoch 3 0.3 0.6
  echo '{"summary": true, "best_val_acc": 0.7, "test_acc": 0.65, "total_seconds": 2.6, "peak_rss_bytes": 2097152, "peak_tensor_bytes": 1048576, "ranks": 2, "grid": "1x2x1", "comm_variant": "baseline", "backend": "cpu"}'
} >"$work/new.jsonl"
# Still going: no summary, and a last line half written (no newline yet).
{ header 64; new_epoch 1 1.0 0.2; new_epoch 2 0.4 0.8; printf '{"epoch": 3, "loss": 0.' ; } >"$work/going.jsonl"
{ echo '{"iter": 1, "loss": 4.2, "lr": 0.001, "grad_norm": 1.0, "step_seconds": 0.9, "tokens_per_second": 100, "comm_bytes": {"total": 0, "x": 0, "y": 0, "z": 0, "d": 0}, "val_loss": 4.1}'
  echo '{"iter": 2, "loss": 3.9, "lr": 0.001, "grad_norm": 1.0, "step_seconds": 0.2, "tokens_per_second": 500, "comm_bytes": {"total": 0, "x": 0, "y": 0, "z": 0, "d": 0}, "val_loss": 3.7}'
  echo '{"summary": true, "iters_done": 2, "best_val_loss": 3.7, "total_seconds": 1.1, "peak_rss_bytes": 1000, "peak_tensor_bytes": 500, "ranks": 1, "grid": "1x1x1", "dp": 1, "backend": "cpu"}'
} >"$work/gpt.jsonl"

# The table: one column per run, --hidden differs (--lr does not), per-axis comm where recorded.
if "$plexus" report "$work/old.jsonl" "$work/new.jsonl" "$work/going.jsonl" >"$work/table" 2>&1 &&
   grep -Eq '^--hidden +- +16 +64$' "$work/table" && ! grep -q -- '--lr' "$work/table" &&
   ! grep -q -- '--metrics' "$work/table" &&
   grep -Eq '^status +done +done +running$' "$work/table" &&
   grep -Eq '^epochs done +4 +3 +2$' "$work/table" &&
   grep -Eq '^epoch s \(median\) +0\.6000 +0\.3000 +0\.4000$' "$work/table" &&
   grep -Eq '^ +comm s y +- +0\.2000 +0\.2000$' "$work/table" &&
   grep -Eq '^speed-up vs first +1\.00x +2\.00x +1\.50x$' "$work/table"; then ok; else fail table; cat "$work/table"; fi

# CSV: one row per run, the same figures as numbers; a running run's best so far.
if "$plexus" report --csv "$work/old.jsonl" "$work/new.jsonl" "$work/going.jsonl" "$work/gpt.jsonl" >"$work/csv" 2>&1 &&
   $py -c "
import csv
rows = list(csv.DictReader(open('$work/csv')))
assert [r['run'] for r in rows] == ['old', 'new', 'going', 'gpt'], rows
old, new, going, gpt = rows
assert float(old['median_step_seconds']) == 0.6 and float(new['median_step_seconds']) == 0.3, rows
assert float(new['speedup']) == 2.0 and abs(float(going['speedup']) - 1.5) < 1e-12, rows
assert float(old['median_comm_seconds_total']) == 0.15 and old['median_comm_seconds_y'] == '', old
assert float(old['comm_bytes_x']) == 200 and float(new['comm_bytes_y']) == 4096, rows
assert float(old['best_val_acc']) == 0.5 and float(old['test_acc']) == 0.52, old
assert going['status'] == 'running' and float(going['best_val_acc']) == 0.8 and float(going['test_acc']) == 0.6, going
assert old['grid'] == '2x2x2' and new['ranks'] == '2' and going['--hidden'] == '64' and old['--hidden'] == '', rows
assert float(gpt['best_val_loss']) == 3.7 and float(gpt['median_step_seconds']) == 0.2 and gpt['steps_done'] == '2', gpt
assert float(old['peak_rss_bytes']) == 1048576, old
"; then ok; else fail csv; cat "$work/csv"; fi

# JSON parses: one object per run, the same keys.
if "$plexus" report --json "$work/old.jsonl" "$work/gpt.jsonl" >"$work/json" 2>&1 &&
   $py -c "
import json
d = json.load(open('$work/json'))
assert [r['run'] for r in d] == ['old', 'gpt'] and d[1]['best_val_loss'] == 3.7 and d[0]['best_val_loss'] is None, d
assert d[0]['median_step_seconds'] == 0.6 and abs(d[1]['speedup'] - 3.0) < 1e-12, d
"; then ok; else fail json; cat "$work/json"; fi
# A GPT run alone speaks of steps.
if "$plexus" report "$work/gpt.jsonl" >"$work/table" 2>&1 && grep -Eq '^step s \(median\) +0\.2000$' "$work/table" &&
   grep -Eq '^best val loss +3\.7000$' "$work/table" && ! grep -q 'val acc' "$work/table"; then ok; else fail gpt; cat "$work/table"; fi

# The GNN's kind is a row of every GNN comparison, first among the options, and each kind's
# options are rows where a run has that kind ("-" for the others); a file from before --model
# (none recorded) is a GCN's, a GPT run has no kind.
kind_header() {  # kind_header FIELDS: a newer-form header whose run resolved its model to FIELDS
  echo '{"config": true, "command": "train", "version": "0.1.0", "data": "g.h5", "grid": "1x2x1", "ranks": 2, "threads": 1, "backend": "cpu", "started": "2026-11-25T02:00:00Z", '"$1"', "options": {"model": "gcn", "aggregator": null, "normalize": false, "gin-eps": null, "train-eps": false, "heads": null, "out-heads": null, "attn-dropout": null, "negative-slope": null, "layers": 2, "hidden": 16}, "reductions": {}}'
}
{ kind_header '"model": "sage", "aggregator": "sum", "normalize": true'; new_epoch 1 1.0 0.5; new_epoch 2 0.5 0.6; } >"$work/sage.jsonl"
{ kind_header '"model": "gin", "gin_eps": 0.25, "train_eps": false'; new_epoch 1 1.0 0.5; new_epoch 2 0.5 0.6; } >"$work/gin.jsonl"
{ kind_header '"model": "gat", "heads": 8, "out_heads": 1, "attn_dropout": 0.6, "negative_slope": 0.2'; new_epoch 1 1.0 0.5; new_epoch 2 0.5 0.6; } >"$work/gat.jsonl"
{ kind_header '"model": "gcn"'; new_epoch 1 1.0 0.5; new_epoch 2 0.5 0.6; } >"$work/gcn.jsonl"
if "$plexus" report "$work/old.jsonl" "$work/gcn.jsonl" "$work/sage.jsonl" "$work/gin.jsonl" "$work/gat.jsonl" >"$work/table" 2>&1 &&
   grep -Eq '^--model +gcn +gcn +sage +gin +gat$' "$work/table" &&
   grep -Eq '^--aggregator +- +- +sum +- +-$' "$work/table" && grep -Eq '^--normalize +- +- +true +- +-$' "$work/table" &&
   grep -Eq '^--gin-eps +- +- +- +0.25 +-$' "$work/table" && grep -Eq '^--train-eps +- +- +- +false +-$' "$work/table" &&
   grep -Eq '^--heads +- +- +- +- +8$' "$work/table" && grep -Eq '^--out-heads +- +- +- +- +1$' "$work/table" &&
   grep -Eq '^--attn-dropout +- +- +- +- +0.6$' "$work/table" && grep -Eq '^--negative-slope +- +- +- +- +0.2$' "$work/table" &&
   [[ $(grep -m1 -n -- '^--' "$work/table" | cut -d: -f2) == --model* ]] &&
   "$plexus" report "$work/new.jsonl" "$work/gcn.jsonl" >"$work/gcn-only" 2>&1 &&
   grep -Eq '^--model +gcn +gcn$' "$work/gcn-only" &&
   ! grep -Eq -- '^--(aggregator|normalize|gin-eps|train-eps|heads|out-heads|attn-dropout|negative-slope)' "$work/gcn-only" &&
   "$plexus" report "$work/gpt.jsonl" >"$work/gpt-only" 2>&1 && ! grep -q -- '--model' "$work/gpt-only" &&
   "$plexus" report --csv "$work/sage.jsonl" "$work/gin.jsonl" "$work/gpt.jsonl" >"$work/csv" 2>&1 &&
   $py -c "
import csv
sage, gin, gpt = csv.DictReader(open('$work/csv'))
assert (sage['--model'], sage['--aggregator'], sage['--normalize'], sage['--gin-eps']) == ('sage', 'sum', 'true', ''), sage
assert (gin['--model'], gin['--gin-eps'], gin['--train-eps'], gin['--aggregator']) == ('gin', '0.25', 'false', ''), gin
assert gpt['--model'] == '', gpt
"; then ok; else fail "model kinds"; cat "$work/table" "$work/csv"; fi
{ kind_header '"model": 3'; new_epoch 1 1.0 0.5; } >"$work/model-number.jsonl"
expect_error model-type "model-number.jsonl: line 1: field 'model': expected a string, got 3" report "$work/model-number.jsonl"
{ kind_header '"model": "gin", "gin_eps": "small"'; new_epoch 1 1.0 0.5; } >"$work/eps-text.jsonl"
expect_error gin-eps-type "eps-text.jsonl: line 1: field 'gin_eps': expected a number or null, got a string" report "$work/eps-text.jsonl"
{ kind_header '"model": "gat", "heads": 0'; new_epoch 1 1.0 0.5; } >"$work/heads-zero.jsonl"
expect_error gat-heads-type "heads-zero.jsonl: line 1: field 'heads': expected an integer >= 1, got 0" report "$work/heads-zero.jsonl"
# A GPT run's --heads is its own option, not GAT's: a row only where GPT runs differ in it.
gpt_header() {  # gpt_header HEADS
  echo '{"config": true, "command": "gpt train", "version": "0.1.0", "data": "t.txt", "grid": "1x1x1", "ranks": 1, "options": {"heads": '"$1"', "layers": 2}, "reductions": {}}'
}
{ gpt_header 4; cat "$work/gpt.jsonl"; } >"$work/gpt4.jsonl"
{ gpt_header 6; cat "$work/gpt.jsonl"; } >"$work/gpt6.jsonl"
if "$plexus" report "$work/gpt4.jsonl" >"$work/table" 2>&1 && ! grep -q -- '--heads' "$work/table" &&
   "$plexus" report "$work/gpt4.jsonl" "$work/gpt6.jsonl" >"$work/table" 2>&1 && grep -Eq '^--heads +4 +6$' "$work/table"
then ok; else fail "gpt heads"; cat "$work/table"; fi

# Real runs on Cora: the options that differ, and medians that match the files.
for h in 16 32; do
  "$plexus" train --epochs 3 --hidden $h --quiet --metrics "$work/cora$h.jsonl" >/dev/null 2>&1 || fail "train $h"
done
if "$plexus" report "$work/cora16.jsonl" "$work/cora32.jsonl" >"$work/table" 2>&1 &&
   grep -Eq '^--hidden +16 +32$' "$work/table" && ! grep -q -- '--epochs' "$work/table" &&
   grep -Eq '^--model +gcn +gcn$' "$work/table" &&
   grep -Eq '^speed-up vs first +1\.00x' "$work/table" &&
   "$plexus" report --csv "$work/cora16.jsonl" "$work/cora32.jsonl" >"$work/csv" 2>&1 &&
   $py -c "
import csv, json, statistics
rows = list(csv.DictReader(open('$work/csv')))
for r, h in zip(rows, (16, 32)):
    lines = [json.loads(l) for l in open(f'$work/cora{h}.jsonl')]
    epochs = [l for l in lines if 'epoch' in l]
    summary = lines[-1]
    assert len(epochs) == 3 and summary.get('summary') and r['status'] == 'done', r
    assert abs(float(r['median_step_seconds']) - statistics.median(e['epoch_seconds'] for e in epochs[1:])) < 1e-12, r
    assert float(r['best_val_acc']) == summary['best_val_acc'] and float(r['test_acc']) == summary['test_acc'], r
    assert r['--hidden'] == str(h) and r['grid'] == '1x1x1', r
t0, t1 = (float(r['median_step_seconds']) for r in rows)
assert abs(float(rows[1]['speedup']) - t0 / t1) < 1e-9, rows
"; then ok; else fail cora; cat "$work/table" "$work/csv"; fi

# Bad input: one line naming the file (and the line), exit 2.
expect_error missing "$work/nope.jsonl: no such file" report "$work/new.jsonl" "$work/nope.jsonl"
{ header 16; echo 'not json'; new_epoch 1 1.0 0.1; } >"$work/bad.jsonl"
expect_error not-json "$work/bad.jsonl: line 2: not JSON" report "$work/bad.jsonl"
{ header 16; echo '[1, 2]'; } >"$work/array.jsonl"
expect_error not-object "$work/array.jsonl: line 2: not a JSON object" report "$work/array.jsonl"
header 16 >"$work/header_only.jsonl"
expect_error no-epoch "$work/header_only.jsonl: has no epoch" report "$work/header_only.jsonl"
: >"$work/empty.jsonl"
expect_error empty "$work/empty.jsonl: has no epoch" report "$work/empty.jsonl"
expect_error directory "$work: is a directory" report "$work"
expect_error csv-and-json "command line" report --csv --json "$work/new.jsonl"
expect_error no-files "command line" report


# Fields of the wrong type: one line naming the file, the line and the field (never a status or
# a figure printed for them). Each case edits one field of a valid file.
wrong_type() {  # wrong_type NAME LINE_NUMBER PYTHON_EDIT_OF_d WANT
  $py -c "
import json, sys
lines = open('$work/new.jsonl').read().splitlines()
d = json.loads(lines[$2 - 1]); $3; lines[$2 - 1] = json.dumps(d)
open('$work/$1.jsonl', 'w').write('\n'.join(lines) + '\n')"
  expect_error "type-$1" "$work/$1.jsonl: line $2: field $4" report "$work/$1.jsonl"
}
wrong_type interrupted 5 'd["interrupted"] = "yes"' "'interrupted': expected true or false, got a string"
wrong_type summary-marker 5 'd["summary"] = 1' "'summary': expected true or false, got 1"
wrong_type acc-string 3 'd["val_acc"] = "0.9"' "'val_acc': expected a number in \[0, 1\] or null, got a string"
wrong_type acc-above-1 3 'd["test_acc"] = 7' "'test_acc': expected a number in \[0, 1\] or null, got 7"
wrong_type seconds-negative 2 'd["epoch_seconds"] = -1' "'epoch_seconds': expected a number >= 0"
wrong_type comm-array 4 'd["comm_seconds"] = [1, 2]' "'comm_seconds': expected a number >= 0 or an object"
wrong_type bytes-string-axis 2 'd["comm_bytes"]["y"] = "many"' "'comm_bytes': expected an object of numbers"
wrong_type epoch-float 3 'd["epoch"] = 2.5' "'epoch': expected an integer >= 1, got 2.5"
wrong_type grid-number 5 'd["grid"] = 8' "'grid': expected a string, got 8"
wrong_type ranks-zero 1 'd["ranks"] = 0' "'ranks': expected an integer >= 1, got 0"
wrong_type options-list 1 'd["options"] = []' "'options': expected an object, got an array"
wrong_type peak-bool 5 'd["peak_rss_bytes"] = True' "'peak_rss_bytes': expected a number >= 0 or null, got true"

# A run without validation nodes: its accuracies are null, and the report shows no validation
# accuracy and the last epoch's test accuracy ("-" where nothing was evaluated).
"$plexus" generate sbm --nodes 120 --classes 3 --feature-width 8 --seed 3 -o "$work/sbm.h5" >/dev/null 2>&1 || fail sbm
$py -c "
import h5py
with h5py.File('$work/sbm.h5', 'r+') as f:
    v = f['masks/val'][...]; t = f['masks/test'][...]; f['masks/test'][...] = t | v; f['masks/val'][...] = 0 * v"
if "$plexus" train --data "$work/sbm.h5" --epochs 3 --threads 1 --quiet --metrics "$work/noval.jsonl" >"$work/out" 2>&1 &&
   grep -q 'best validation accuracy not evaluated (no validation node); last epoch 3' "$work/out" &&
   "$plexus" report --json "$work/noval.jsonl" >"$work/json" 2>&1 &&
   $py -c "
import json
lines = [json.loads(l) for l in open('$work/noval.jsonl')]
epochs, s = [l for l in lines if 'epoch' in l], lines[-1]
assert all(e['val_acc'] is None and e['val_loss'] is None and 0 <= e['test_acc'] <= 1 for e in epochs), epochs
assert s['best_val_acc'] is None and s['best_epoch'] == 3 and s['test_acc'] == epochs[-1]['test_acc'], s
r = json.load(open('$work/json'))[0]
assert r.get('best_val_acc') is None and r['test_acc'] == epochs[-1]['test_acc'], r
"; then ok; else fail no-val-run; cat "$work/out" "$work/json"; fi
# The same run still going (no summary): the last epoch's test accuracy, no best validation.
head -n 3 "$work/noval.jsonl" >"$work/noval-going.jsonl"
if "$plexus" report --csv "$work/noval-going.jsonl" >"$work/csv" 2>&1 &&
   $py -c "
import csv, json
r = list(csv.DictReader(open('$work/csv')))[0]
last = [json.loads(l) for l in open('$work/noval-going.jsonl')][-1]
assert r['status'] == 'running' and r.get('best_val_acc', '') == '' and float(r['test_acc']) == last['test_acc'], r
"; then ok; else fail no-val-going; cat "$work/csv"; fi

# A name that is not UTF-8 (any bytes may name a file): the JSON has it with \xHH escapes.
bad=$'run\xff'
cp "$work/new.jsonl" "$work/$bad.jsonl"
if "$plexus" report --json "$work/$bad.jsonl" >"$work/json" 2>"$work/err" &&
   $py -c "
import json
r = json.load(open('$work/json'))[0]
assert r['run'] == 'run\\\\xFF' and r['file'].endswith('/run\\\\xFF.jsonl'), r
"; then ok; else fail non-utf8-name; cat "$work/err"; fi

echo "cli_report: $passed passed, $failures failed"
((failures == 0))
