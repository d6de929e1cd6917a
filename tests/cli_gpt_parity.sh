#!/usr/bin/env bash
# PyTorch parity: examples/bench/gpt_torch_peer.py starts from the weights
# `plexus gpt train --iters 0 --save` wrote, draws the same batches and takes the same AdamW
# steps; its per-step losses match the engine's within 1e-4 relative over 20 steps (dropout 0),
# tied and untied, with gradient accumulation and clipping.
# Usage: cli_gpt_parity.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
source "$src/tests/lib_cli.sh"
text=$src/data/tinyshakespeare.txt
peer=$src/examples/bench/gpt_torch_peer.py
$py -c "import torch, h5py" || { echo "FAIL: python3-torch and python3-h5py are needed (scripts/install-deps.sh --tests)"; exit 1; }

parity() {  # parity NAME OPTIONS...
  local name=$1; shift
  "$plexus" gpt train --data "$text" "$@" --iters 0 --save "$work/$name.h5" --threads 2 --quiet >/dev/null &&
    "$plexus" gpt train --data "$text" "$@" --iters 20 --threads 2 --quiet --metrics "$work/$name.jsonl" >/dev/null || {
    fail "$name: plexus"; return; }
  if $py "$peer" --data "$text" --model "$work/$name.h5" "$@" --iters 20 --threads 2 --compare "$work/$name.jsonl" \
      --tol 1e-4 >"$work/$name.out" 2>&1; then
    ok; grep "parity over" "$work/$name.out"
  else
    fail "$name: torch parity"; cat "$work/$name.out"
  fi
}
common=(--warmup 5 --lr 2e-3 --min-lr 2e-4 --eval-every 0 --dropout 0)
parity tied --layers 2 --heads 4 --embed 64 --block 32 --batch 6 "${common[@]}"
parity untied --layers 2 --heads 2 --embed 48 --block 16 --batch 4 --untie --grad-accum 2 --grad-clip 0.5 "${common[@]}"

echo "$passed passed, $failures failed"
((failures == 0))
