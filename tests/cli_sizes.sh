#!/usr/bin/env bash
# Sizes are checked, not discovered by the kernel's OOM killer (include/plexus/sizes.hpp): tiny
# files and options that declare huge sizes end at once with exit 2 and one line naming the
# option or file and the bytes needed against the bytes available; products of sizes never wrap.
# Every case runs under `timeout`, so a regression (an allocation that swaps or is killed) fails
# instead of hanging.
# Usage: cli_sizes.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
source "$src/tests/lib_cli.sh"
# Under timeout: 124 (a hang, or an allocation that did not fail) is not 2.
plexus_bin=$plexus
plexus() { timeout 30 "$plexus_bin" "$@"; }
plexus=plexus

# ---- products of sizes in options: overflow-checked and bounded ------------------------------
expect_error grid-wraps "--grid: 3x3x954437177 has 8589934593 ranks, more than the 16777216" train --grid 3x3x954437177
expect_error grid-overflow "--grid: the rank count of 2147483647x2147483647x2147483647 .* is too large" \
  train --grid 2147483647x2147483647x2147483647
expect_error dp-overflow "--dp: .* more than the 16777216" gpt train --dp 2147483647 --grid 2x1x1
expect_error metis-parts "--grid: .* more than the 16777216" \
  prepare "$cora" -o "$work/p.h5" --balance metis --grid 65536x65535x65521
[[ -e "$work/p.h5" ]] && fail "prepare wrote a file despite the error"
expect_error inspect-grid "--grid: 1x1x100000000 has 100000000 ranks" inspect "$cora" --grid 1x1x100000000

# ---- train: the analytic model against the memory available, before the load ----------------
expect_error hidden "--hidden: training needs .* TiB (largest rank of grid 1x1x1.* and does not fit: .* available per rank" \
  train --hidden 500000000 --epochs 1
expect_error budget "--memory-per-rank: training needs .* does not fit: 64.00 MiB per rank" \
  train --hidden 100000 --epochs 1 --memory-per-rank 64M
# A 12 KB-sized file declaring 200 million classes (Cora with its attribute changed).
cp "$cora" "$work/classes.h5"
$py -c "import h5py, numpy, sys; f = h5py.File(sys.argv[1], 'r+'); f.attrs['num_classes'] = numpy.int32(200000000)" \
  "$work/classes.h5"
expect_error classes "$work/classes.h5: training needs .* 200000000 classes" train --data "$work/classes.h5" --epochs 1
if "$plexus" train --epochs 2 --quiet >/dev/null 2>"$work/err"; then ok; else fail "cora trains"; cat "$work/err"; fi
# An address-space limit (ulimit -v) bounds what this process can allocate, whatever the node
# has free: a run of about 3.2 GiB is refused under a 3 GB limit (exit 2, the limit's room named,
# not "out of memory" with exit 1). (--hidden 60000: with --layer-order auto the narrowing last
# layer transforms first, and --hidden 40000 needs only 2.1 GiB, 2.9 aggregating first.)
bash -c 'ulimit -v 3000000; exec "$@"' _ timeout 60 "$plexus_bin" train --epochs 1 --quiet --hidden 60000 >/dev/null 2>"$work/err"
rc=$?
if [[ $rc -eq 2 ]] && grep -Eq "^plexus: error: --hidden: training needs .* available per rank$" "$work/err" &&
   $py -c 'import re,sys; m=re.search(r"([0-9.]+) (KiB|MiB|GiB) available", open(sys.argv[1]).read()); sys.exit(not m or (m.group(2) == "GiB" and float(m.group(1)) > 3))' "$work/err"
then ok; else fail "ulimit -v bounds the memory budget (rc=$rc)"; cat "$work/err"; fi

# ---- gpt train: the model of docs/data-parallel.md ----------------------------------------------
expect_error gpt-embed "--embed: training needs" gpt train --embed 1048576 --heads 1 --iters 1
expect_error gpt-batch "--batch: training needs" gpt train --batch 100000000 --iters 1
expect_error gpt-embed-bound "--embed: must be between 1 and 2^20" gpt train --embed 1099511627776 --heads 1 --iters 1
expect_error plan-gpt-embed "--embed: must be between 1 and 2^20" plan gpt --ranks 4 --embed 1099511627776 --heads 1
expect_error plan-gpt-buckets "--bucket-mb: .* gradient buckets of --bucket-mb 1e-05: at most 1e6" \
  plan gpt --ranks 4 --bucket-mb 0.00001 --embed 2048 --layers 48 --heads 16
expect_error gpt-overflow "--batch: " \
  gpt train --batch 4611686018427387904 --iters 1

# ---- readers: the declared sizes before allocating ----------------------------------------------
printf '%%%%MatrixMarket matrix coordinate pattern general\n8000000000 8000000000 3\n1 2\n2 3\n3 1\n' >"$work/huge.mtx"
expect_error mtx-rows "$work/huge.mtx: the graph needs .* (8000000000 rows and 3 entries declared) and does not fit" \
  convert mtx "$work/huge.mtx" -o "$work/m.h5"
[[ -e "$work/m.h5" ]] && fail "convert mtx wrote a file despite the error"
printf '0 1\n1 2\n' >"$work/edges.txt"
expect_error edgelist-nodes "--num-nodes: the graph needs" convert edgelist "$work/edges.txt" --num-nodes 8000000000 -o "$work/e.h5"
mkdir -p "$work/ogb/raw"
echo 8000000000 | gzip >"$work/ogb/raw/num-node-list.csv.gz"
printf '0,1\n' | gzip >"$work/ogb/raw/edge.csv.gz"
expect_error ogb-nodes "num-node-list.csv.gz: the graph needs" convert ogb "$work/ogb" -o "$work/o.h5"

# ---- generators: the options' sizes ---------------------------------------------------------
expect_error rmat-scale "--scale: the graph needs" generate rmat --scale 34 --edge-factor 1 --feature-width 1 -o "$work/r.h5"
expect_error rmat-features "--feature-width: the graph needs" generate rmat --scale 20 --feature-width 4000000 -o "$work/r.h5"
expect_error sbm-degree "--avg-degree: the graph needs" generate sbm --nodes 100000000 --avg-degree 500 -o "$work/s.h5"

echo "cli_sizes: $passed passed, $failures failed"
((failures == 0))
