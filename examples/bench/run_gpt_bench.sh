#!/usr/bin/env bash
# One command: plexus gpt train (CPU backend) against the plain-PyTorch peer
# (examples/bench/gpt_torch_peer.py) on the same model, data and threads, in one run.
#   examples/bench/run_gpt_bench.sh [--threads T] [--steps S] [--rounds R] [-- MODEL OPTIONS...]
# Default model: nanoGPT's baby GPT (4 layers, 4 heads, embed 128, block 64, batch 12) on the
# bundled tiny Shakespeare. The two programs alternate R rounds of S steps each; a round's
# figure is its median step (the first step of a round is skipped), the result the median
# over rounds. Also: this machine's SGEMM rate (bench_sgemm, the same threads), the model's
# GFLOP/s against it, and plexus's kernel breakdown (--profile, one extra round).
# Env: BUILD (default build), PYTHON (default /usr/bin/python3: needs torch and h5py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-/usr/bin/python3}"
THREADS=2 STEPS=40 ROUNDS=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
MODEL=(--layers 4 --heads 4 --embed 128 --block 64 --batch 12 "$@")
DATA="$ROOT/data/tinyshakespeare.txt"
DIR="$BUILD/bench"; mkdir -p "$DIR"
LOG="$DIR/gpt_$(date +%Y%m%d_%H%M%S)"
[[ -x "$BUILD/plexus" && -x "$BUILD/examples/bench_sgemm" ]] || { echo "build first: cmake --build build -j" >&2; exit 1; }
source "$ROOT/examples/bench/same_blas_kernels.sh" "$BUILD/plexus"

# The peer's attention: F.scaled_dot_product_attention where this torch has it (--flash), else explicit.
FLASH=$("$PYTHON" -c 'import torch.nn.functional as F; print("--flash" * hasattr(F, "scaled_dot_product_attention"))')

"$BUILD/examples/bench_sgemm" --threads "$THREADS" | tee "$LOG.sgemm.txt"
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r"
  "$BUILD/plexus" gpt train --data "$DATA" "${MODEL[@]}" --iters "$STEPS" --eval-every 0 --threads "$THREADS" -q \
    --metrics "$LOG.plexus.$r.jsonl" >/dev/null
  "$PYTHON" "$ROOT/examples/bench/gpt_torch_peer.py" --data "$DATA" "${MODEL[@]}" --iters "$STEPS" \
    --threads "$THREADS" $FLASH >"$LOG.torch.$r.txt"
done
"$BUILD/plexus" gpt train --data "$DATA" "${MODEL[@]}" --iters "$STEPS" --eval-every 0 --threads "$THREADS" -q \
  --profile >"$LOG.profile.txt"

"$PYTHON" - "$LOG" "$ROUNDS" "$THREADS" "${MODEL[@]}" <<'PY'
import json, statistics, sys
log, rounds, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
opts = dict(zip(sys.argv[4::2], sys.argv[5::2]))
L, H, C, T, B = (int(opts[k]) for k in ("--layers", "--heads", "--embed", "--block", "--batch"))
V = 65  # tiny Shakespeare's characters
def plexus_round(r):
    rows = [json.loads(l) for l in open(f"{log}.plexus.{r}.jsonl")]
    return statistics.median(x["step_seconds"] for x in rows if "iter" in x and x["iter"] > 1)
def torch_round(r):
    rec = next(json.loads(l[11:]) for l in open(f"{log}.torch.{r}.txt") if l.startswith("BENCH_JSON "))
    return rec["step_seconds_median"], rec["torch_version"]
px = [plexus_round(r) for r in range(1, rounds + 1)]
tc = [torch_round(r) for r in range(1, rounds + 1)]
p, t = statistics.median(px), statistics.median(x for x, _ in tc)
peak = next(json.loads(l[11:]) for l in open(f"{log}.sgemm.txt") if l.startswith("BENCH_JSON "))["gflops"]
tokens = B * T
# forward 2·tokens·(12·L·C² + V·C) for the linears and the head, 2·B·T²·C·L for causal attention
# (half of QKᵀ and PV); backward twice the forward.
flops = 3 * (2 * tokens * (12 * L * C * C + V * C) + 2 * B * T * T * C * L)
print(f"\n== baby GPT step, {threads} threads, {rounds} alternating rounds (median of round medians)")
print(f"{'':28s} {'plexus':>10s} {'torch ' + tc[0][1]:>16s}")
print(f"{'step ms':28s} {p * 1e3:10.2f} {t * 1e3:16.2f}")
print(f"{'tokens/s':28s} {tokens / p:10.0f} {tokens / t:16.0f}")
print(f"{'model GFLOP/s':28s} {flops / p / 1e9:10.1f} {flops / t / 1e9:16.1f}")
print(f"{'of SGEMM peak ' + f'{peak:.1f} GFLOP/s':28s} {flops / p / 1e9 / peak:9.1%} {flops / t / 1e9 / peak:15.1%}")
print(f"rounds plexus ms: {[round(x * 1e3, 1) for x in px]}; torch ms: {[round(x * 1e3, 1) for x, _ in tc]}")
print(f"step ratio plexus/torch = {p / t:.3f} (goal <= 0.6, issue 48: {'MET' if p / t <= 0.6 else 'NOT MET'})")
print("BENCH_JSON " + json.dumps({"impl": "gpt_side_by_side", "ratio": p / t, "plexus_step_seconds": p,
                                  "torch_step_seconds": t, "sgemm_gflops": peak, "model_flops_per_step": flops}))
PY
echo "== plexus kernel breakdown (one more run with --profile: $LOG.profile.txt)"
sed -n '/^family/,$p' "$LOG.profile.txt"
