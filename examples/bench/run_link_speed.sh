#!/usr/bin/env bash
# One full-batch epoch of link prediction against PyG on the same graph and threads (issue 46,
# acceptance 7): PyG's link_pred model (GCN 128 -> 64, dot decoder) on a planted-community graph
# of NODES nodes (default 200,000; 128 features, mean degree 10), `plexus train --task link` and
# examples/bench/pyg_link_epoch.py, each the median of EPOCHS epochs.
# With DECODER mlp both score pairs by OGB's LinkPredictor (3 layers, 128 wide) on z_u * z_v.
#   examples/bench/run_link_speed.sh BUILD_DIR [NODES] [THREADS] [EPOCHS] [DECODER]
set -euo pipefail
build=${1:?usage: run_link_speed.sh BUILD_DIR [NODES] [THREADS] [EPOCHS] [DECODER]}
source "$(dirname "${BASH_SOURCE[0]}")/same_blas_kernels.sh" "$build/plexus"
nodes=${2:-200000} threads=${3:-2} epochs=${4:-5} decoder=${5:-dot}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/plexus" generate sbm --nodes "$nodes" --feature-width 128 --avg-degree 10 --classes 16 -o "$work/g.h5" >/dev/null
OMP_NUM_THREADS=$threads /usr/bin/python3 "$(dirname "$0")/pyg_link_epoch.py" "$work/g.h5" --epochs "$epochs" \
  --threads "$threads" --decoder "$decoder" | tee "$work/peer.txt" | head -1
"$build/plexus" train --data "$work/g.h5" --task link --hidden 128 --embedding-width 64 --dropout 0 --weight-decay 0 \
  --epochs "$epochs" --threads "$threads" --grid 1x1x1 --decoder "$decoder" --quiet --metrics "$work/m.jsonl" >/dev/null
/usr/bin/python3 - "$work/m.jsonl" "$work/peer.txt" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ep = [l for l in lines if "epoch" in l and not l.get("summary")]
step = statistics.median(l["train_seconds"] for l in ep)
epoch = statistics.median(l["epoch_seconds"] for l in ep)
peer = json.loads([l for l in open(sys.argv[2]) if l.startswith("PEER_JSON")][0][10:])
print(f"plexus: training step {step:.3f} s, epoch {epoch:.3f} s (median of {len(ep)}; the epoch includes the "
      f"validation and test ROC-AUC)")
print(f"ratio plexus / PyG: step {step / peer['step_seconds']:.2f}, epoch {epoch / peer['epoch_seconds']:.2f} "
      f"({peer['nodes']} nodes, {peer['edges']} stored edges, {peer['threads']} threads)")
PY
