#!/usr/bin/env bash
# Generation with and without the KV cache, one prompt and a batch of 8, against a hand-written
# cached greedy loop in PyTorch (gpt_generate_peer.py), on this machine in one run.
#
#   examples/bench/run_gpt_generate.sh [BUILD_DIR] [THREADS]
#
# A model of GPT-2's shape with a context of 512 (`gpt train --iters 0`: its initial weights; speed
# does not depend on them; MODEL="--layers 6 --heads 6 --embed 384" sets its size, default the
# baby GPT's 4 x 4 x 128), a 256-character prompt from tiny
# Shakespeare, 256 new tokens greedy (--top-k 1). Prints each run's stderr line and the ratios:
# tokens/s with the cache over without (acceptance: >= 20), a batch of 8 over one (>= 4), and
# plexus's decode time per token over the peer's (<= 0.8). KEEP=DIR keeps the files; PYTHON
# (default /usr/bin/python3) needs torch and h5py. NO_CACHE=0 skips the run without the cache
# (a whole window pass a token: minutes on a model of GPT-2's size) and the ratios it gives.
set -euo pipefail
PYTHON="${PYTHON:-/usr/bin/python3}"
build=${1:-build}
threads=${2:-1}
plexus=$(realpath "$build/plexus")
source "$(dirname "${BASH_SOURCE[0]}")/same_blas_kernels.sh" "$build/plexus"
here=$(cd "$(dirname "$0")" && pwd)
data=${DATA:-$(realpath "$here/../../data/tinyshakespeare.txt")}
work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[[ -n "${KEEP:-}" ]] || trap 'rm -rf "$work"' EXIT

# shellcheck disable=SC2086
"$plexus" gpt train --data "$data" --iters 0 --block 512 ${MODEL:-} --save "$work/m.h5" --quiet --threads "$threads" >/dev/null
python3 - "$data" "$work" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
open(sys.argv[2] + "/prompt.txt", "w", encoding="utf-8").write(text[:256].replace("\n", " ") + "\n")
with open(sys.argv[2] + "/prompts8.txt", "w", encoding="utf-8") as f:
    for i in range(8):
        f.write(text[1000 * i:1000 * i + 256].replace("\n", " ") + "\n")
PY
prompt=$(head -c 256 "$work/prompt.txt")
run() {  # name, args...: the stderr line of gpt sample
  local name=$1; shift
  "$plexus" gpt sample --model "$work/m.h5" --tokens 256 --top-k 1 --threads "$threads" "$@" >"$work/$name.out" 2>"$work/$name.err"
  echo "$name: $(tail -1 "$work/$name.err")"
}
run cache --prompt "$prompt"
if [[ ${NO_CACHE:-1} != 0 ]]; then run nocache --prompt "$prompt" --no-kv-cache; fi
run batch8 --prompts "$work/prompts8.txt"
"$PYTHON" "$here/gpt_generate_peer.py" --model "$work/m.h5" --prompt-file "$work/prompt.txt" --tokens 256 \
  --threads "$threads" | tee "$work/peer.out"
python3 - "$work" "$prompt" <<'PY'
import json, re, sys
work, prompt = sys.argv[1], sys.argv[2]
def stats(name):
    line = open(f"{work}/{name}.err").read().strip().splitlines()[-1]
    m = re.search(r"(\d+) tokens in ([\d.]+) s: ([\d.]+) tokens/s, first token after ([\d.]+) s", line)
    n, s, tps, first = int(m[1]), float(m[2]), float(m[3]), float(m[4])
    return {"tokens": n, "seconds": s, "tps": tps, "first": first}
import os
c, b = stats("cache"), stats("batch8")
w = stats("nocache") if os.path.exists(f"{work}/nocache.err") else None
peer = json.loads(open(f"{work}/peer.out").read().split("BENCH_JSON ", 1)[1])
text = open(f"{work}/cache.out").read().rstrip("\n")
same = text == open(f"{work}/nocache.out").read().rstrip("\n") if w else "not run (NO_CACHE=0)"
peer_same = text[len(prompt):] == peer["text"]
decode = (c["seconds"] - c["first"]) / (c["tokens"] - 1)
if w:
    print(f"tokens/s: cache {c['tps']:.1f}, no cache {w['tps']:.1f}: {c['tps'] / w['tps']:.1f}x (goal >= 20); "
          f"first token {c['first']:.3f} s vs {w['first']:.3f} s")
decode_rate = lambda r, prompts: prompts * (r["tokens"] // prompts - 1) / (r["seconds"] - r["first"])
print(f"batch of 8: {b['tps']:.1f} tokens/s, {b['tps'] / c['tps']:.2f}x one prompt's (goal >= 4); after the first "
      f"token {decode_rate(b, 8):.1f} vs {decode_rate(c, 1):.1f} tokens/s: {decode_rate(b, 8) / decode_rate(c, 1):.2f}x; "
      f"first token {b['first']:.3f} s vs {c['first']:.3f} s")
print(f"decode per token: plexus {decode * 1e3:.3f} ms, torch {peer['decode_seconds_per_token'] * 1e3:.3f} ms: "
      f"{decode / peer['decode_seconds_per_token']:.2f}x (goal <= 0.8); first token plexus {c['first']:.3f} s, "
      f"torch {peer['first_token_seconds']:.3f} s")
print(f"same text with and without the cache: {same}; the same greedy tokens as the peer: {peer_same}")
PY
