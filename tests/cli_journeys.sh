#!/usr/bin/env bash
# The user's journeys around a run, checked from the user's side (issue 15):
#  - the metrics file is readable line by line while the run goes (header first: the effective
#    configuration, data path and version), and ends with the summary;
#  - progress: plain flushed lines with a count and an ETA into a file; a bar redrawn in place
#    on a terminal; nothing with --quiet or --log-level warn; no colour codes outside a terminal;
#  - --grid auto (the default) under mpirun -np 6 picks plan's best grid and trains as 1 rank does;
#  - one command line: the input as --data or positional everywhere; "did you mean" for mistyped
#    options and subcommands; renamed options point at their new name; errors point at the
#    subcommand's own --help.
# Usage: cli_journeys.sh PLEXUS SOURCE_DIR
set -u
plexus=$(realpath "$1") src=$2
source "$src/tests/lib_cli.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd "$work"

# ---- live metrics and progress lines, read while the run goes --------------------------------
"$plexus" train --data "$cora" --threads 1 --epochs 100000 --metrics live.jsonl >live.out 2>live.err &
job=$!
for _ in $(seq 300); do [[ -f live.jsonl && $(wc -l <live.jsonl) -ge 4 ]] && break; sleep 0.1; done
running=0; kill -0 "$job" 2>/dev/null && running=1
cp live.jsonl live.partial; cp live.out live.out.partial
kill -TERM "$job"; wait "$job"; rc=$?
if [[ $running -ne 1 ]]; then fail "metrics while running"; echo "  the run ended early (rc $rc)"; cat live.err
elif "$py" - live.partial live.jsonl "$cora" <<'EOF'
import json, sys
partial = [json.loads(l) for l in open(sys.argv[1])]
final = [json.loads(l) for l in open(sys.argv[2])]
h = partial[0]
assert h["config"] is True and h["command"] == "train", h
assert h["data"] == sys.argv[3] and h["version"] and h["grid"] == "1x1x1" and h["ranks"] == 1 and h["threads"] == 1, h
o = h["options"]
assert o["epochs"] == 100000 and o["hidden"] == 16 and o["lr"] == 0.01 and o["seed"] == 42 and o["adamw"] is False, o
assert "comm_seconds" in h["reductions"] and "comm_bytes" in h["reductions"], h["reductions"]
epochs = [r for r in partial[1:] if "epoch" in r]
assert len(epochs) >= 3 and [r["epoch"] for r in epochs] == list(range(1, len(epochs) + 1)), partial
assert not any(r.get("summary") for r in partial), "summary before the end"
for r in epochs:
    assert set(r["comm_seconds"]) == {"total", "x", "y", "z"} and set(r["comm_bytes"]) >= {"total", "x", "y", "z"}, r
assert final[:len(partial)] == partial, "lines changed after they were written"
assert final[-1].get("summary") is True and final[-1]["interrupted"] is True, final[-1]
EOF
then ok; else fail "metrics while running"; fi
# Progress into a file: one flushed line per epoch with its count, total and ETA, before the end.
if grep -qE "^epoch +2/100000  loss [0-9.]+  train [0-9.]+  val [0-9.]+  test [0-9.]+  [0-9.]+ ms  ETA [0-9hms.]+$" live.out.partial &&
   ! grep -q $'\x1b' live.out; then ok
else fail "progress lines into a file"; head -5 live.out.partial | cat -v; fi

# ---- a terminal: a bar redrawn in place, with colour allowed; --quiet and --log-level warn ----
script -qec "TERM=xterm '$plexus' train --data '$cora' --threads 1 --epochs 5" /dev/null >tty.out 2>&1
if grep -q $'\r\x1b\\[Kepoch 5/5 \\[####################\\] 100%  ETA' tty.out; then ok
else fail "bar on a terminal"; cat -v tty.out | tail -3; fi
"$plexus" train --data "$cora" --threads 1 --epochs 3 --quiet >q.out 2>&1
if [[ $(wc -l <q.out) -eq 1 ]] && grep -q "^best validation accuracy" q.out; then ok; else fail "--quiet"; cat q.out; fi
"$plexus" --log-level warn train --data "$cora" --threads 1 --epochs 3 >w.out 2>&1
"$plexus" train --data "$cora" --threads 1 --epochs 3 --log-level warn >w2.out 2>&1
if [[ $(wc -l <w.out) -eq 1 ]] && cmp -s <(sed 's/([0-9.]* s training)//' w.out) <(sed 's/([0-9.]* s training)//' w2.out); then ok
else fail "--log-level warn"; cat w.out w2.out; fi
expect_error log-level-bad "--log-level" train --log-level loud

# ---- --grid auto under mpirun -np 6: plan's first grid, the 1-rank losses --------------------
"$plexus" train --data "$cora" --threads 1 --epochs 5 --metrics one.jsonl --quiet >/dev/null 2>&1
"$plexus" plan --data "$cora" --ranks 6 --json >plan6.json 2>&1
timeout 120 mpirun -np 6 "$plexus" train --data "$cora" --threads 1 --epochs 5 --metrics six.jsonl >six.out 2>six.err
rc=$?
if [[ $rc -eq 0 ]] && ! grep -q $'\x1b' six.out && "$py" - one.jsonl six.jsonl plan6.json <<'EOF'
import json, sys
one = [json.loads(l) for l in open(sys.argv[1])]
six = [json.loads(l) for l in open(sys.argv[2])]
best = json.load(open(sys.argv[3]))["grids"][0]["grid"]
assert six[0]["grid"] == best and six[0]["ranks"] == 6 and six[-1]["grid"] == best, (six[0]["grid"], best)
l1 = [r["loss"] for r in one if "epoch" in r]
l6 = [r["loss"] for r in six if "epoch" in r]
assert len(l1) == len(l6) == 5 and all(abs(a - b) <= 1e-5 * abs(a) for a, b in zip(l1, l6)), (l1, l6)
# The per-axis times: the maximum over ranks is at least their mean.
for r in six[1:-1]:
    for k in ("total", "x", "y", "z"):
        assert r["comm_seconds"][k] >= r["comm_seconds_mean"][k] >= 0, r
EOF
then ok; else fail "--grid auto under mpirun -np 6"; echo "  rc=$rc"; tail -3 six.err; fi
if grep -q "^\\[.*\\] \\[info\\] --grid auto: .* (the fastest of 9 grids for 6 ranks" six.out; then ok
else fail "--grid auto says what it chose"; head -3 six.out; fi
# gpt train: the replicas' grid is chosen the same way.
timeout 120 mpirun -np 2 "$plexus" gpt train --iters 2 --eval-every 0 --threads 1 --layers 1 --embed 32 --heads 2 \
  --block 16 --batch 2 --metrics gpt2.jsonl >gpt.out 2>gpt.err
if [[ $? -eq 0 ]] && "$py" -c "
import json, sys
h = json.loads(open('gpt2.jsonl').readline())
assert h['config'] and h['command'] == 'gpt train' and h['ranks'] == 2 and h['dp'] == 1, h
assert h['grid'] in ('2x1x1', '1x2x1', '1x1x2'), h['grid']"; then ok
else fail "gpt train --grid auto"; tail -3 gpt.err; fi
# An explicit grid must still match the ranks started.
mpi_error grid-mismatch "--grid: 1x1x1" train --data "$cora" --grid 1x1x1

# ---- one command line --------------------------------------------------------------------------
expect_error did-you-mean-option "unknown option '--epoch' of plexus train (did you mean --epochs?); see plexus train --help" \
  train --epoch 5
expect_error did-you-mean-prefix "(did you mean --hidden?)" train --hid 8
expect_error did-you-mean-subcommand "unknown subcommand 'trian' of plexus (did you mean train?); see plexus --help" trian
expect_error did-you-mean-nested "unknown subcommand 'trian' of plexus gpt (did you mean train?)" gpt trian
expect_error no-suggestion "unknown option '--frobnicate' of plexus train; see plexus train --help" train --frobnicate
expect_error renamed-seed "'--seed' of plexus prepare (now --balance-seed)" prepare "$cora" -o x.h5 --seed 3
expect_error renamed-symmetrize "(now --directed)" prepare "$cora" -o x.h5 --no-symmetrize
expect_error typed-layers "--layers" inspect "$cora" --layers three
expect_error help-pointer "; see plexus inspect --help" inspect "$cora" --layers three
# The input is --data or the first positional argument, the same in every subcommand.
for cmd in "inspect" "plan --ranks 2" "train --epochs 1 --quiet"; do
  # shellcheck disable=SC2086
  "$plexus" $cmd "$cora" >pos.out 2>&1; a=$?
  # shellcheck disable=SC2086
  "$plexus" $cmd --data "$cora" >opt.out 2>&1; b=$?
  if [[ $a -eq 0 && $b -eq 0 ]] && cmp -s <(sed 's/[0-9.]* s\b//g' pos.out) <(sed 's/[0-9.]* s\b//g' opt.out); then ok
  else fail "positional input: $cmd"; head -3 pos.out opt.out; fi
done
"$plexus" prepare --data "$cora" -o prep.h5 --balance-seed 2 --directed --quiet && [[ -s prep.h5 ]] && ok || fail "prepare --data"

# ---- OpenBLAS's kernels: never older than AVX2 on a CPU with AVX2 and FMA, on one rank or many
# (where OpenBLAS falls back to its SSE3 kernels plexus starts again with better ones named). ----
if [[ -z ${OPENBLAS_CORETYPE:-} ]] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  "$plexus" --version >ver.out 2>&1
  mpirun -np 2 "$plexus" train --grid 2x1x1 --data "$cora" --epochs 1 --threads 1 -q --metrics blas.jsonl >/dev/null 2>&1
  if grep -Eq "; (Haswell|Zen|SkylakeX|Cooperlake|SapphireRapids) kernels" ver.out &&
     "$py" -c "import json, sys; h = json.loads(open(sys.argv[1]).readline()); assert h['cpu_gemm'] == sys.argv[2], h['cpu_gemm']" \
       blas.jsonl "$(sed -n 's/^CPU GEMM: //p' ver.out)"; then ok
  else fail "OpenBLAS kernels"; cat ver.out; head -c 600 blas.jsonl; fi
fi

echo "cli_journeys: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
