#!/usr/bin/env bash
# One command on a GPU machine: plexus gpt train --backend cuda against the plain-PyTorch peer
# (examples/bench/gpt_torch_peer.py --device cuda) on the same model, data and GPU, in one run,
# at each multiply precision: fp32 (TF32 off on both sides), tf32, and bf16 (plexus
# --matmul-precision bf16 against torch.autocast(bfloat16); fp32 weights and Adam on both).
# The peer runs twice per precision: explicit masked-softmax attention (plexus's math) and
# F.scaled_dot_product_attention (flash). Then plexus's kernel breakdown (--profile, bf16).
#   examples/bench/run_gpu_gpt_bench.sh [--steps S] [--precisions "fp32 tf32 bf16"] [-- MODEL OPTIONS...]
# Default model: nanoGPT's Shakespeare-character configuration (6 layers, 6 heads, embed 384,
# block 256, batch 64, dropout 0.2). A figure is the median step, the first step skipped.
# MFU: model FLOPs per second over the GPU's dense peak for that precision (env PEAK_TFLOPS_FP32,
# _TF32, _BF16; default the H100/H200 SXM datasheet: 67, 494.5, 989.4).
# Env: BUILD (default build), PYTHON (default python3), OUT (logs; default $BUILD/bench).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PYTHON="${PYTHON:-python3}"
STEPS=40 PRECISIONS="fp32 tf32 bf16"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) STEPS="$2"; shift 2 ;;
    --precisions) PRECISIONS="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
MODEL=(--layers 6 --heads 6 --embed 384 --block 256 --batch 64 --dropout 0.2 "$@")
DATA="$ROOT/data/tinyshakespeare.txt"
DIR="${OUT:-$BUILD/bench}"; mkdir -p "$DIR"
LOG="$DIR/gpugpt"
[[ -x "$BUILD/plexus" ]] || { echo "build first: cmake --build build -j --target plexus" >&2; exit 1; }

for prec in $PRECISIONS; do
  echo "== $prec"
  "$BUILD/plexus" gpt train --backend cuda --data "$DATA" "${MODEL[@]}" --iters "$STEPS" --eval-every 0 \
    --matmul-precision "$prec" -q --metrics "$LOG.plexus.$prec.jsonl" >/dev/null
  peer=(--device cuda); [[ $prec == tf32 ]] && peer+=(--tf32); [[ $prec == bf16 ]] && peer+=(--bf16)
  for attn in explicit flash; do
    extra=(); [[ $attn == flash ]] && extra=(--flash)
    "$PYTHON" -W ignore "$ROOT/examples/bench/gpt_torch_peer.py" --data "$DATA" "${MODEL[@]}" --iters "$STEPS" \
      "${peer[@]}" "${extra[@]}" >"$LOG.torch.$prec.$attn.txt"
  done
done
"$BUILD/plexus" gpt train --backend cuda --data "$DATA" "${MODEL[@]}" --iters 20 --eval-every 0 \
  --matmul-precision bf16 -q --profile >"$LOG.profile.txt" 2>&1 || true

"$PYTHON" - "$LOG" "$PRECISIONS" "${MODEL[@]}" <<'PY'
import json, os, statistics, sys
log, precs = sys.argv[1], sys.argv[2].split()
opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
L, C, T, B = (int(opts[k]) for k in ("--layers", "--embed", "--block", "--batch"))
V = 65  # tiny Shakespeare's characters
tokens = B * T
flops = 3 * (2 * tokens * (12 * L * C * C + V * C) + 2 * B * T * T * C * L)  # fwd + 2x bwd; causal attention
peak = {"fp32": float(os.environ.get("PEAK_TFLOPS_FP32", 67)), "tf32": float(os.environ.get("PEAK_TFLOPS_TF32", 494.5)),
        "bf16": float(os.environ.get("PEAK_TFLOPS_BF16", 989.4))}
def plexus(p):
    rows = [json.loads(l) for l in open(f"{log}.plexus.{p}.jsonl")]
    return statistics.median(x["step_seconds"] for x in rows if "iter" in x and x["iter"] > 1)
def torch(p, attn):
    rec = next(json.loads(l[11:]) for l in open(f"{log}.torch.{p}.{attn}.txt") if l.startswith("BENCH_JSON "))
    return statistics.median(rec["step_seconds"][1:]) if "step_seconds" in rec else rec["step_seconds_median"], rec
print(f"\n== GPT {L} layers, embed {C}, block {T}, batch {B}: median step; tokens/s; MFU of the dense peak")
print(f"{'':10s} {'plexus ms':>10s} {'torch expl':>11s} {'torch flash':>12s} {'px/expl':>8s} {'px/flash':>9s} "
      f"{'plexus tok/s':>13s} {'flash tok/s':>12s} {'plexus MFU':>11s} {'flash MFU':>10s}")
out = {}
for p in precs:
    a = plexus(p); (e, rec), (f, _) = torch(p, "explicit"), torch(p, "flash")
    mfu = lambda s: flops / s / (peak[p] * 1e12)
    print(f"{p:10s} {a * 1e3:10.2f} {e * 1e3:11.2f} {f * 1e3:12.2f} {e / a:8.3f} {f / a:9.3f} "
          f"{tokens / a:13.0f} {tokens / f:12.0f} {mfu(a):11.1%} {mfu(f):10.1%}")
    out[p] = {"plexus_step_seconds": a, "torch_explicit_step_seconds": e, "torch_flash_step_seconds": f}
print(f"(px/expl, px/flash: the peer's step over plexus's -- plexus's throughput relative to the peer's; >= 1.0 is par)")
print(f"device {rec.get('device_name')}, torch {rec.get('torch_version')}; model FLOPs per step {flops / 1e9:.1f} G")
print("BENCH_JSON " + json.dumps({"impl": "gpu_gpt_side_by_side", "model_flops_per_step": flops, "results": out}))
PY
echo "== plexus kernel breakdown (bf16, --profile: $LOG.profile.txt)"
sed -n '/^kernel/,$p' "$LOG.profile.txt" | head -40
