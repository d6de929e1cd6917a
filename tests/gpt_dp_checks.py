# A `plexus gpt train --dp D --zero S --metrics` run against the model and ZeRO's formulas:
#  - the bytes of every step on each axis, d included, equal `plexus plan gpt --json`'s for the
#    same (grid, D, stage) (an evaluation, before step 1 and after step 5, gathers the weights
#    over Z, so those steps take the plan's bytes_step_weights_gathered);
#  - for D <= 4, the summary's parameter, gradient and optimizer bytes are ZeRO's formulas for the
#    run's precision (fp32: 4Ψ + 4Ψ + 8Ψ; bf16: 2Ψ + 2Ψ + 12Ψ), split over D as the stage says.
# Exit 1 with the first difference.
# Usage: gpt_dp_checks.py RUN.jsonl PLAN.json GRID D STAGE
import json
import sys

got = [json.loads(line) for line in open(sys.argv[1])]
grid, D, S = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
steps = [s for s in got if "iter" in s]
plan = next(p for p in json.load(open(sys.argv[2]))["grids"] if (p["grid"], p["dp"], p["zero"]) == (grid, D, S))
for s in steps:
    want = plan["bytes_step_weights_gathered" if s["iter"] in (1, 6) else "bytes_step"]
    for axis in "xyzd":
        assert abs(s["comm_bytes"][axis] - want[axis]) <= 1e-9 * max(1.0, want[axis]), \
            f"step {s['iter']} axis {axis}: measured {s['comm_bytes'][axis]}, model {want[axis]}"
    assert s["comm_bytes"]["d"] > 0
summary = got[-1]
assert summary["dp"] == D and summary["zero"] == S
if D <= 4:  # Ψ: the largest replica shard of a rank; B: its block
    m = summary["memory"]
    psi, blk = m["shard_params"], m["zero_block_params"]
    assert blk == -(-psi // D), (psi, blk)
    p, g, o = (2, 2, 12) if summary["precision"] == "bf16" else (4, 4, 8)
    want = {0: (p * psi, g * psi, o * psi), 1: (p * psi, g * psi, o * blk),
            2: (p * psi, g * blk, o * blk), 3: (p * blk, g * blk, o * blk)}[S]
    got_mem = (m["param_bytes"], m["grad_bytes"], m["optimizer_bytes"])
    assert got_mem == want, f"param, grad, optimizer bytes {got_mem}, {summary['precision']} ZeRO-{S} says {want}"
