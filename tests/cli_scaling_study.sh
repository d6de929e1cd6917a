#!/usr/bin/env bash
# examples/scaling/study.py end to end on a tiny R-MAT graph (P = 1, 2; every grid; 2 epochs):
# study.csv has a row per run with the measured bytes per axis equal to plexus plan's model,
# the three plots are PNG files, and the report of the fastest grid per P is written.
# Usage: cli_scaling_study.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1
src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
unset SLURM_JOB_ID  # mpirun, also when the tests run inside an allocation

if ! $py -c "import matplotlib" 2>/dev/null; then
  echo "cli_scaling_study: skipped (no matplotlib: apt-get install python3-matplotlib)"
  exit 0
fi

study=$work/study
if $py "$src/examples/scaling/study.py" --rmat-scale 8 --ranks 1,2 --epochs 2 --hidden 16 --plexus "$plexus" \
     --out "$study" >"$work/log" 2>&1; then ok; else fail study; tail -20 "$work/log"; fi

# One row per run (1x1x1; 1x1x2, 1x2x1, 2x1x1), every column, bytes as the model predicts.
if $py -c "
import csv
rows = list(csv.DictReader(open('$study/study.csv')))
assert [(r['P'], r['grid']) for r in rows] == [('1', '1x1x1'), ('2', '1x1x2'), ('2', '1x2x1'), ('2', '2x1x1')], rows
for col in ('median_epoch_seconds', 'median_compute_seconds', 'median_comm_seconds', 'comm_seconds_x', 'bytes_x',
            'model_bytes_z', 'test_acc', 'peak_rss_bytes'):
    assert all(r[col] != '' for r in rows), col
for r in rows:
    assert r['status'] == 'done' and r['epochs'] == '2', r
    for a in 'xyz':
        assert float(r['bytes_' + a]) == float(r['model_bytes_' + a]), (r['grid'], a, r)
    # A grid communicates on the axes it splits, and only there.
    assert all((float(r['bytes_' + a]) > 0) == (n > 1) for a, n in zip('xyz', map(int, r['grid'].split('x')))), r
" 2>"$work/err"; then ok; else fail csv; cat "$work/err" "$study/study.csv"; fi

# The plots are PNG files (the 8-byte signature), the report names the fastest grid of each P.
for png in epoch_split bytes_vs_model speedup; do
  if [[ -s $study/$png.png ]] && [[ $(head -c 8 "$study/$png.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; then ok
  else fail "png $png"; fi
done
if grep -Eq '^speed-up vs first +1\.00x' "$study/report.txt" && grep -q "in 4 of 4 runs" "$work/log"; then ok
else fail report; cat "$study/report.txt"; tail -3 "$work/log"; fi

echo "cli_scaling_study: $passed passed, $failures failed"
((failures == 0))
