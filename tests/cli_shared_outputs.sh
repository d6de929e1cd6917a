#!/usr/bin/env bash
# Outputs every rank writes together — `train --save-model` and `--checkpoint-dir` (GCN), and
# `predict -o` — under mpirun with ranks that do not see the same working directory or folder
# (docs/hardening.md, "Outputs every rank writes"):
#  - ranks started in different working directories write one file, named from rank 0's;
#  - a rank on a "node" that does not share the output's folder (a mount namespace whose tmpfs
#    hides it, as a node-local folder would) ends every rank with one line naming the output
#    and the rank — never a hang — and leaves no temporary file.
# Usage: cli_shared_outputs.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
[[ $plexus == /* ]] || plexus=$PWD/$plexus
[[ $src == /* ]] || src=$PWD/$src
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
a=$work/a b=$work/b
mkdir -p "$a" "$b"
tr=(--data "$cora" --grid 2x1x1 --epochs 2 --quiet --threads 1)

# two ranks: rank 0 in $a, rank 1 in DIR (a different working directory), or hidden by a mount.
two_cwds() { local dir=$1; shift; timeout 60 mpirun -np 1 --wdir "$a" "$plexus" "$@" : -np 1 --wdir "$dir" "$plexus" "$@"; }
# rank 1 in a mount namespace where a tmpfs covers $a: the folder rank 0 writes is not there.
hidden() {
  timeout 60 mpirun -np 1 --wdir "$a" "$plexus" "$@" : -np 1 --wdir "$a" \
    unshare -m sh -c 'mount -t tmpfs none "$1" && cd "$1" && shift && exec "$@"' sh "$a" "$plexus" "$@"
}
unshare -m sh -c "mount -t tmpfs none '$b'" 2>"$work/unshare-err" ||
  { fail "mount namespaces (unshare -m, as root) are needed to hide a folder from one rank: $(cat "$work/unshare-err")"; }

# -- different working directories: one file, in rank 0's (inputs by absolute names, which every
#    rank reads) -------------------------------------------------------------------------------
if two_cwds "$b" train "${tr[@]}" --save-model m.h5 --checkpoint-dir ck >"$work/out" 2>"$work/err" &&
   [[ -f $a/m.h5 && -f $a/ck/checkpoint-00000002.h5 && ! -e $b/m.h5 && ! -e $b/ck ]]; then ok
else fail "different working directories: --save-model and --checkpoint-dir go to rank 0's"; cat "$work/err"; ls -R "$a" "$b"; fi
# (predict reads the model written above: it is whole.)
if two_cwds "$b" predict --data "$cora" --grid 2x1x1 --checkpoint "$a/m.h5" -o p.h5 --threads 1 >"$work/out" 2>"$work/err" &&
   [[ -f $a/p.h5 && ! -e $b/p.h5 ]]; then ok
else fail "different working directories: predict -o goes to rank 0's"; cat "$work/err"; fi

# -- a folder one rank does not see: one line, every rank ends, nothing left ---------------------
cp "$a/m.h5" "$work/model.h5"
expect_hidden() {  # NAME OUTPUT ARGS...
  local name=$1 output=$2; shift 2
  local before after start rc lines
  before=$(find "$a" | sort | md5sum)
  start=$(date +%s)
  hidden "$@" >"$work/out" 2>"$work/err"
  rc=$?
  lines=$(grep -c '^plexus: error: ' "$work/err")
  after=$(find "$a" | sort | md5sum)
  if [[ $rc -eq 2 && $lines -eq 1 && $before == "$after" ]] &&
     grep -q "^plexus: error: $output: rank 1 cannot open .*every rank reaches" "$work/err" &&
     (($(date +%s) - start < 30)); then ok
  else fail "hidden folder: $name (rc=$rc, 124 = hang; $lines error lines; folder changed: $([[ $before == "$after" ]] && echo no || echo yes))"
    cat "$work/err"; find "$a"; fi
}
expect_hidden "--save-model" out.h5 train "${tr[@]}" --save-model out.h5
expect_hidden "--checkpoint-dir (the folder it made is removed)" "ck2/checkpoint-00000000.h5" train "${tr[@]}" --checkpoint-dir ck2
expect_hidden "predict -o" pred.h5 predict --data "$cora" --grid 2x1x1 --checkpoint "$work/model.h5" -o pred.h5 --threads 1
# An absolute name hidden alike.
expect_hidden "--save-model by an absolute path" "$a/abs.h5" train "${tr[@]}" --save-model "$a/abs.h5"

echo "cli_shared_outputs: $passed passed, $failures failed"
((failures == 0))
