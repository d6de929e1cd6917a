#!/usr/bin/env bash
# Nothing a run does not own is deleted or overwritten (docs/checkpoints.md "Whose checkpoints",
# docs/hardening.md), from the user's side, on 1 and 2 ranks:
#  - every checkpoint carries its run's identity; --keep removes only the run's own; a
#    --checkpoint-dir holding another run's checkpoints, an older plexus's (outside the
#    directory resumed from), a user's file or a link loop named like one is refused with one
#    line, everything in it left as it was; --resume A --checkpoint-dir B continues A's run in B;
#  - old checkpoints without an identity still resume, and are never rotated away;
#  - --save-model, --save and --metrics naming a checkpoint of the run (by any path or link) are
#    refused as two outputs naming one file;
#  - a second run on a locked --checkpoint-dir or --metrics is refused, naming the holder;
#  - --metrics on the file behind standard output or error writes there without overwriting
#    what is printed (train and gpt train).
# Usage: cli_ownership.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$(realpath "$1") src=$(realpath "$2")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
source "$src/tests/lib_cli.sh"
cd "$work" || exit 1
tr=(train --threads 1 -q)
run_id() {
  "$py" -c 'import h5py,sys; v=h5py.File(sys.argv[1]).attrs.get("run_id", b"none"); print(v.decode() if isinstance(v, bytes) else v)' "$1"
}
listing() { (cd "$1" && ls -A | tr '\n' ' '); }
state() { (cd "$1" && find . -printf '%y %p %l\n' | sort; find . -type f -exec md5sum {} + | sort); }

# ---- identity and rotation, 2 ranks --------------------------------------------------------------
mpirun -np 2 "$plexus" "${tr[@]}" --grid 2x1x1 --epochs 6 --checkpoint-dir a --checkpoint-every 1 --keep 2 >/dev/null
[[ $(listing a) == "checkpoint-00000005.h5 checkpoint-00000006.h5 " ]] && ok || fail "keep 2 on 2 ranks: $(listing a)"
id5=$(run_id a/checkpoint-00000005.h5) id6=$(run_id a/checkpoint-00000006.h5)
[[ ${#id5} -eq 32 && $id5 == "$id6" ]] && ok || fail "one run identity in each checkpoint: $id5 $id6"

# A second run into the same directory: refused, the first run's checkpoints untouched.
before=$(state a)
mpi_error "another run's checkpoints" "a: holds files named like checkpoints that are not this run's: a/checkpoint-00000005.h5 is a checkpoint of another run (and 1 more)" \
  "${tr[@]}" --grid 2x2x1 --epochs 4 --checkpoint-dir a
[[ $(state a) == "$before" ]] && ok || fail "a refused run changed the directory"

# Resumed in place: the same run, the same identity; rotation goes on over its checkpoints.
mpirun -np 2 "$plexus" "${tr[@]}" --grid 1x2x1 --epochs 9 --resume a --checkpoint-dir a --checkpoint-every 1 --keep 2 >/dev/null
[[ $(listing a) == "checkpoint-00000008.h5 checkpoint-00000009.h5 " && $(run_id a/checkpoint-00000009.h5) == "$id5" ]] &&
  ok || fail "resumed in place: $(listing a) $(run_id a/checkpoint-00000009.h5)"

# --resume A --checkpoint-dir B: A's run continued in B (A untouched); a new run into A refused.
before=$(state a)
"$plexus" "${tr[@]}" --epochs 11 --resume a --checkpoint-dir b --checkpoint-every 1 --keep 1 >/dev/null
[[ $(state a) == "$before" && $(listing b) == "checkpoint-00000011.h5 " && $(run_id b/checkpoint-00000011.h5) == "$id5" ]] &&
  ok || fail "--resume a --checkpoint-dir b: $(listing b)"
"$plexus" "${tr[@]}" --epochs 12 --resume b --checkpoint-dir a --keep 0 >/dev/null && [[ -e a/checkpoint-00000012.h5 ]] &&
  ok || fail "--resume b --checkpoint-dir a: the same run"
# B holding the same run's checkpoints of the epochs to come: they are the run's, rewritten.
"$plexus" "${tr[@]}" --epochs 12 --resume b --checkpoint-dir a --checkpoint-every 1 --keep 0 >/dev/null &&
  [[ $(run_id a/checkpoint-00000012.h5) == "$id5" ]] && ok || fail "the same run's checkpoint rewritten"
mkdir -p other && "$plexus" "${tr[@]}" --epochs 2 --checkpoint-dir other >/dev/null
expect_error "--resume a --checkpoint-dir other (another run's)" "other/checkpoint-00000002.h5 is a checkpoint of another run" \
  "${tr[@]}" --epochs 13 --resume a --checkpoint-dir other

# ---- checkpoints without an identity (an older plexus): resumed, never rotated away -----------------
mkdir -p old && cp a/checkpoint-00000008.h5 a/checkpoint-00000009.h5 old/
"$py" -c 'import h5py,sys
for p in sys.argv[1:]:
    with h5py.File(p, "r+") as f: del f.attrs["run_id"]' old/*.h5
expect_error "old checkpoints in a new run's directory" "old/checkpoint-00000008.h5 is a checkpoint written without a run identity" \
  "${tr[@]}" --epochs 12 --checkpoint-dir old
mpirun -np 2 "$plexus" "${tr[@]}" --grid 2x1x1 --epochs 12 --resume old --checkpoint-dir old --checkpoint-every 1 --keep 1 >/dev/null &&
  [[ $(listing old) == "checkpoint-00000008.h5 checkpoint-00000009.h5 checkpoint-00000012.h5 " ]] &&
  ok || fail "resume old checkpoints in place: $(listing old)"
new=$(run_id old/checkpoint-00000012.h5)
[[ ${#new} -eq 32 && $new != "$id5" ]] && ok || fail "a resumed old checkpoint gets a fresh identity: $new"
"$plexus" "${tr[@]}" --epochs 14 --resume old --checkpoint-dir old --checkpoint-every 1 --keep 1 >/dev/null &&
  [[ $(listing old) == "checkpoint-00000008.h5 checkpoint-00000009.h5 checkpoint-00000014.h5 " ]] &&
  ok || fail "resumed again: $(listing old)"

# ---- what is named like a checkpoint but is not one ----------------------------------------------------
mkdir -p user && echo "my notes" >user/checkpoint-00000001.h5 && echo '{}' >user/run.jsonl
before=$(state user)
expect_error "a user's file named like a checkpoint" "user/checkpoint-00000001.h5 cannot be read" "${tr[@]}" --epochs 3 --checkpoint-dir user
mpi_error "a user's file named like a checkpoint" "user/checkpoint-00000001.h5 cannot be read" "${tr[@]}" --grid 2x2x1 --epochs 3 --checkpoint-dir user
[[ $(state user) == "$before" ]] && ok || fail "the user's files changed"
mkdir -p loop && ln -s checkpoint-00000001.h5 loop/checkpoint-00000001.h5
expect_error "--resume: a link loop" "loop/checkpoint-00000001.h5: is named like a checkpoint but is a symbolic link loop" \
  "${tr[@]}" --epochs 3 --resume loop
mpi_error "--resume: a link loop" "symbolic link loop" "${tr[@]}" --grid 2x2x1 --epochs 3 --resume loop
expect_error "--checkpoint-dir: a link loop" "loop/checkpoint-00000001.h5 is a symbolic link loop" "${tr[@]}" --epochs 3 --checkpoint-dir loop
mkdir -p dirs/checkpoint-00000004.h5
expect_error "--checkpoint-dir: a directory named like a checkpoint" "is a directory" "${tr[@]}" --epochs 3 --checkpoint-dir dirs
expect_error "gpt: a link loop" "symbolic link loop" gpt train --iters 2 --threads 1 -q --checkpoint-dir loop

# ---- outputs naming a checkpoint of the run ----------------------------------------------------------------
expect_error "--save-model names the final checkpoint" "--save-model names a file of --checkpoint-dir s" \
  "${tr[@]}" --epochs 10 --checkpoint-dir s --save-model s/checkpoint-00000010.h5
ln -s s/checkpoint-00000004.h5 model-link.h5
expect_error "--save-model: a link to a checkpoint name" "--save-model names a file of --checkpoint-dir s" \
  "${tr[@]}" --epochs 10 --checkpoint-dir s --save-model model-link.h5
expect_error "--metrics names a checkpoint" "--metrics names a file of --checkpoint-dir" \
  "${tr[@]}" --epochs 10 --checkpoint-dir s --metrics ./s/../s/checkpoint-00000001.h5
expect_error "gpt --save names a checkpoint" "--save names a file of --checkpoint-dir g" \
  gpt train --iters 4 --threads 1 -q --checkpoint-dir g --save g/checkpoint-00000004.h5
[[ ! -e s && ! -e g ]] && ok || fail "a refused run created its checkpoint directory"

# ---- locks ---------------------------------------------------------------------------------------------------
"$plexus" train --threads 1 --epochs 1000000 --checkpoint-dir busy --checkpoint-every 1000000 --metrics busy.jsonl >busy.out 2>&1 &
holder=$!
for _ in $(seq 200); do grep -q "^epoch" busy.out 2>/dev/null && break; sleep 0.1; done
expect_error "a locked --checkpoint-dir" "busy: in use by another plexus run (pid $holder on $(hostname)); wait for it or use another --checkpoint-dir" \
  "${tr[@]}" --epochs 2 --checkpoint-dir busy
mpi_error "a locked --checkpoint-dir" "busy: in use by another plexus run (pid $holder" "${tr[@]}" --grid 2x2x1 --epochs 2 --checkpoint-dir busy
expect_error "a locked --metrics" "busy.jsonl: in use by another plexus run (pid $holder" "${tr[@]}" --epochs 2 --metrics busy.jsonl
expect_error "gpt: a locked --metrics" "in use by another plexus run" gpt train --iters 2 --threads 1 -q --metrics busy.jsonl
kill -TERM "$holder"; wait "$holder"
[[ ! -e busy/.plexus-lock && ! -e busy.jsonl.lock ]] && ok || fail "the lock files stayed after the run: $(ls -A busy)"
"$py" -c 'import json,sys; r=[json.loads(l) for l in open("busy.jsonl")]; sys.exit(not r[-1]["interrupted"])' &&
  ok || fail "the locked metrics file was damaged by the refused runs"

# ---- --metrics on the file behind standard output or error ---------------------------------------------------
# jsonl_and_text FILE N [json]: the file holds the header first, N epoch/step lines and the
# summary, each whole, among the progress lines (none with a third argument).
jsonl_and_text() {
  "$py" - "$@" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
rows = [json.loads(l) for l in lines if l.startswith("{")]
assert rows[0]["config"] and rows[-1]["summary"], (rows[0], rows[-1])
assert len([r for r in rows if "epoch" in r or "iter" in r]) == int(sys.argv[2]), len(rows)
assert len(sys.argv) > 3 or any(not l.startswith("{") for l in lines), "no progress text"
EOF
}
"$plexus" train --threads 1 --epochs 3 --metrics /dev/stdout >so.txt && jsonl_and_text so.txt 3 && ok || fail "--metrics /dev/stdout > file"
"$plexus" train --threads 1 --epochs 3 --metrics so2.txt >so2.txt && jsonl_and_text so2.txt 3 && ok || fail "--metrics FILE > FILE"
"$plexus" train --threads 1 --epochs 3 --metrics /dev/stderr 2>se.txt >/dev/null && jsonl_and_text se.txt 3 json && ok || fail "--metrics /dev/stderr 2> file"
mpirun -np 2 "$plexus" train --threads 1 --grid 2x1x1 --epochs 3 --metrics /proc/self/fd/1 >so3.txt && jsonl_and_text so3.txt 3 &&
  ok || fail "--metrics /proc/self/fd/1 on 2 ranks"
"$plexus" gpt train --iters 3 --threads 1 --eval-every 0 --metrics /dev/stdout >go.txt && jsonl_and_text go.txt 3 &&
  ok || fail "gpt --metrics /dev/stdout > file"
expect_error "--save-model on the file behind stdout" "is the same file as standard output" \
  "${tr[@]}" --epochs 2 --save-model "$work/out"

echo "cli_ownership: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
