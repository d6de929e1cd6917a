#!/usr/bin/env bash
# `plexus train` end to end on the bundled Cora: metrics file format, bit-for-bit
# determinism for a seed, a TOML config, the accuracy of the defaults, and --matmul-precision
# (recorded; the CPU backend computes in fp32 whatever it says).
# Usage: cli_train.sh PLEXUS_BINARY SOURCE_DIR
set -eu
plexus=$1
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$plexus" train --epochs 30 --seed 5 --quiet --metrics "$work/a.jsonl" >/dev/null
"$plexus" train --epochs 30 --seed 5 --quiet --metrics "$work/b.jsonl" >/dev/null
printf 'epochs = 30\nseed = 5\nhidden = 16\n' >"$work/run.toml"
"$plexus" train --config "$work/run.toml" --quiet --metrics "$work/c.jsonl" >/dev/null
"$plexus" train --config "$work/run.toml" --seed 6 --quiet --metrics "$work/d.jsonl" >/dev/null
"$plexus" train --epochs 30 --seed 5 --quiet --matmul-precision tf32 --backend cpu --metrics "$work/e.jsonl" >/dev/null
$py - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def load(name):
    rows = [json.loads(l) for l in open(f"{work}/{name}.jsonl")]
    return rows[1:-1], rows[-1]  # epochs (after the header), summary
a, sa = load("a"); b, sb = load("b"); c, sc = load("c"); d, sd = load("d"); e, se = load("e")
assert len(a) == 30 and [r["epoch"] for r in a] == list(range(1, 31)), "one object per epoch"
for key in ("epoch", "loss", "train_acc", "val_acc", "test_acc", "epoch_seconds", "train_seconds", "comm_bytes"):
    assert key in a[0], f"missing {key}"
assert all(0 < r["train_seconds"] <= r["epoch_seconds"] for r in a), "the training step is part of the epoch"
assert sa["summary"] is True and {"best_val_acc", "test_acc", "total_seconds"} <= sa.keys()
assert [r["loss"] for r in a] == [r["loss"] for r in b], "same seed must give the same losses bit for bit"
assert [r["loss"] for r in a] == [r["loss"] for r in c], "the TOML config must act like the options"
assert [r["loss"] for r in a] != [r["loss"] for r in d], "the command line must override the config"
assert a[-1]["loss"] < a[0]["loss"] * 0.8, "the loss must fall"
assert sa["best_val_acc"] == max(r["val_acc"] for r in a)
assert sa["matmul_precision"] == "fp32" and se["matmul_precision"] == "tf32"
assert [r["loss"] for r in a] == [r["loss"] for r in e], "the CPU backend multiplies in fp32 whatever is asked"
# The model kind, recorded in the header (resolved and as an option) and in the summary.
header = json.loads(open(f"{work}/a.jsonl").readline())
assert header["model"] == "gcn" and header["options"]["model"] == "gcn", header
assert "aggregator" not in header and header["options"]["aggregator"] is None, header
assert sa["model"] == "gcn" and "gin_eps" not in sa, sa
print("1 passed, 0 failed")
PY
