#!/usr/bin/env bash
# Link prediction against PyG's link_pred example on Cora (issue 46, acceptance 2, for the dot
# decoder), two ways: on the peer's own 10 splits (the peer writes them, the engine's pieces train
# on them: examples/bench/link_pieces_parity.cpp), and `plexus train --task link` on its own 10
# splits (seeds 0..9 of random_link_split, the same shares), the mean test ROC-AUC of each.
# With DECODER mlp (acceptance 2's second half) both score pairs by OGB's LinkPredictor (3 layers,
# 128 wide) on z_u * z_v; the pieces' run on the peer's splits is the dot decoder's only.
#   examples/bench/run_link_parity.sh BUILD_DIR [PLANETOID_DIR] [GRID] [DECODER]
set -euo pipefail
build=${1:?usage: run_link_parity.sh BUILD_DIR [PLANETOID_DIR] [GRID] [DECODER]}
source "$(dirname "${BASH_SOURCE[0]}")/same_blas_kernels.sh" "$build/plexus"
raw=${2:-$(dirname "$0")/../../../shared/datasets/planetoid}
grid=${3:-1x1x1}
decoder=${4:-dot}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/raw"
cp "$raw"/ind.cora.* "$work/raw/"
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} /usr/bin/python3 "$(dirname "$0")/pyg_link_peer.py" "$work/raw" --seeds 10 \
  --decoder "$decoder" --write-split "$work/split" | tail -1
if [ "$decoder" = dot ]; then
  "$build/examples/link_pieces_parity" "$work/split" --seeds 10 --grid "$grid" | tail -1 | cut -c1-200
fi
# The command: GCN 128 -> 64, dot decoder, no dropout or decay, Adam 0.01, 100 epochs; the test
# ROC-AUC at the best validation ROC-AUC (the summary's test_auc).
cora=$(dirname "$0")/../../data/cora.h5
for seed in 0 1 2 3 4 5 6 7 8 9; do
  "$build/plexus" train --data "$cora" --task link --seed "$seed" --hidden 128 --embedding-width 64 --dropout 0 \
    --weight-decay 0 --lr 0.01 --epochs 100 --grid 1x1x1 --decoder "$decoder" --quiet --metrics "$work/cli$seed.jsonl" >/dev/null
done
/usr/bin/python3 - "$work" "$decoder" <<'PY'
import json, statistics, sys
auc = [json.loads(open(f"{sys.argv[1]}/cli{k}.jsonl").read().splitlines()[-1])["test_auc"] for k in range(10)]
print(f"plexus train --task link --decoder {sys.argv[2]}, own splits: test ROC-AUC {statistics.mean(auc):.4f} +- {statistics.stdev(auc):.4f} "
      f"over {len(auc)} seeds")
PY
