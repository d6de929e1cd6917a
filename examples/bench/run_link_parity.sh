#!/usr/bin/env bash
# Link prediction against PyG's link_pred example on Cora, on the same 10 splits (issue 46,
# acceptance 2, for the dot decoder): the peer writes its splits, the engine's pieces train on
# them (examples/bench/link_pieces_parity.cpp, until `plexus train --task link` exists).
#   examples/bench/run_link_parity.sh BUILD_DIR [PLANETOID_DIR] [GRID]
set -euo pipefail
build=${1:?usage: run_link_parity.sh BUILD_DIR [PLANETOID_DIR] [GRID]}
raw=${2:-$(dirname "$0")/../../../shared/datasets/planetoid}
grid=${3:-1x1x1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/raw"
cp "$raw"/ind.cora.* "$work/raw/"
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} /usr/bin/python3 "$(dirname "$0")/pyg_link_peer.py" "$work/raw" --seeds 10 \
  --write-split "$work/split" | tail -1
"$build/examples/link_pieces_parity" "$work/split" --seeds 10 --grid "$grid" | tail -1 | cut -c1-200
