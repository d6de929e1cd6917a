# Two `plexus gpt train --metrics` runs train alike: the same number of steps, per-step and
# validation losses within 1e-5 relative, the gradient norm (a sum of squares of float sums)
# within 1e-4, the same parameter count. Exit 1 with the first difference.
# Usage: gpt_runs_match.py REFERENCE.jsonl RUN.jsonl STEPS
import json
import sys

ref, got = ([json.loads(line) for line in open(p)] for p in sys.argv[1:3])
steps = [(a, b) for a, b in zip(ref, got) if "iter" in a]
want = int(sys.argv[3])
assert len(steps) == want and all("iter" in b for _, b in steps), f"{want} steps each"
for a, b in steps:
    for key, tol in (("loss", 1e-5), ("val_loss", 1e-5), ("grad_norm", 1e-4)):
        if key in a or key in b:
            rel = abs(a[key] - b[key]) / abs(a[key])
            assert rel <= tol, f"step {a['iter']} {key}: {a[key]} vs {b[key]} (relative {rel:.2e})"
assert ref[-1]["params"] == got[-1]["params"], "parameter counts differ"
