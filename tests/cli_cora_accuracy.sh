#!/usr/bin/env bash
# Acceptance: `plexus train` with the defaults on the bundled Cora reproduces Kipf & Welling:
# mean test accuracy over 10 seeds >= 80.5 %, every seed >= 79 %.
# Usage: cli_cora_accuracy.sh PLEXUS_BINARY SOURCE_DIR
set -eu
plexus=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for seed in 1 2 3 4 5 6 7 8 9 10; do
  "$plexus" train --seed "$seed" --quiet --metrics "$work/$seed.jsonl" >/dev/null
done
/usr/bin/python3 - "$work" <<'PY'
import json, sys
accs = [json.loads(open(f"{sys.argv[1]}/{s}.jsonl").read().splitlines()[-1])["test_acc"] for s in range(1, 11)]
mean = sum(accs) / len(accs)
print("test accuracy per seed:", " ".join(f"{a:.3f}" for a in accs), f"mean {mean:.4f}")
ok = mean >= 0.805 and min(accs) >= 0.79
print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
sys.exit(0 if ok else 1)
PY
