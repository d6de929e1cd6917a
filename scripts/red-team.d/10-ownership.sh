# Red-team part 10: nothing a run does not own is deleted or overwritten (issue 31, class 1;
# class 4 item 2; class 5's --save-model naming a checkpoint). docs/checkpoints.md "Whose
# checkpoints", docs/hardening.md "Outputs another run is writing".
#  - checkpoint directories: another run's checkpoints, an older plexus's, a user's or metrics
#    file named like one, link loops, dangling links, directories and FIFOs named like one are
#    refused (one line) and left as they were; rotation removes only the run's own;
#  - outputs naming a checkpoint of the run (any name it could write, by any path or link);
#  - locks: a second run on a --checkpoint-dir or --metrics in use is refused, naming the holder;
#  - --metrics on the file behind standard output or error (the runner sends stdout to a file).
# Scratch: $W/own (made here; never under $IN, whose files are checksummed per case).
own=$W/own
mkdir -p "$own"
ot=(--data "$IN/g.h5" --quiet --threads 1)  # a small train
og=(--data "$IN/text.txt" --layers 1 --heads 2 --embed 16 --block 16 --batch 2 --eval-every 0 --threads 1 --quiet)
own_state() { (cd "$1" && find . -printf '%y %p %l\n' | sort; find . -type f -exec md5sum {} + | sort) 2>/dev/null | md5sum; }
own_list() { (cd "$1" && ls -A | tr '\n' ' '); }
own_id() {
  $py -c 'import h5py,sys; v=h5py.File(sys.argv[1]).attrs.get("run_id", b"none"); print(v.decode() if isinstance(v, bytes) else v)' "$1" 2>/dev/null
}
# unchanged DESC DIR STATE: a row of its own saying that a refused case left DIR as it was.
unchanged() {
  if [[ $(own_state "$2") == "$3" ]]; then record train "$1: left as it was" "=" "-" PASS
  else record train "$1: left as it was" "=" "-" FAIL "the directory changed: $(own_list "$2")"; fi
}
own_setup() { "$plexus" train "${ot[@]}" "$@" >/dev/null 2>&1 || setup_fail "10-ownership: train $*"; }

# ---- another run's checkpoints (the issue's example: the older run's were kept, ours deleted) ----
own_setup --epochs 4 --checkpoint-dir "$own/a" --checkpoint-every 1 --keep 2
s=$(own_state "$own/a")
refuse train "reuse a directory of another run's checkpoints" "is a checkpoint of another run" \
  "${ot[@]}" --epochs 8 --checkpoint-dir "$own/a" --checkpoint-every 1 --keep 2
unchanged "another run's checkpoints" "$own/a" "$s"
refuse "gpt train" "a GCN run's checkpoints as gpt --checkpoint-dir" "is a checkpoint of another run" \
  "${og[@]}" --iters 2 --checkpoint-dir "$own/a"
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 refuse train "MPI 2: another run's checkpoints" "is a checkpoint of another run" \
    "${ot[@]}" --grid 2x1x1 --epochs 8 --checkpoint-dir "$own/a"
  unchanged "MPI 2: another run's checkpoints" "$own/a" "$s"
fi
a_id=$(own_id "$own/a/checkpoint-00000004.h5")
accept train "--resume in place: the same run, its own rotated" \
  "[[ \$(own_list $own/a) == 'checkpoint-00000006.h5 checkpoint-00000007.h5 ' && \$(own_id $own/a/checkpoint-00000007.h5) == $a_id ]]" \
  "${ot[@]}" --epochs 7 --resume "$own/a" --checkpoint-dir "$own/a" --checkpoint-every 1 --keep 2
accept train "--resume A --checkpoint-dir B (empty): A's run continued in B" \
  "[[ \$(own_list $own/b) == 'checkpoint-00000009.h5 ' && \$(own_id $own/b/checkpoint-00000009.h5) == $a_id && -e $own/a/checkpoint-00000007.h5 ]]" \
  "${ot[@]}" --epochs 9 --resume "$own/a" --checkpoint-dir "$own/b" --checkpoint-every 1 --keep 1
own_setup --epochs 2 --checkpoint-dir "$own/c"
s=$(own_state "$own/c")
refuse train "--resume A --checkpoint-dir B of another run" "$own/c/checkpoint-00000002.h5 is a checkpoint of another run" \
  "${ot[@]}" --epochs 12 --resume "$own/a" --checkpoint-dir "$own/c"
unchanged "--resume A --checkpoint-dir B of another run" "$own/c" "$s"

# ---- checkpoints without an identity (an older plexus) ---------------------------------------------------
mkdir -p "$own/old" && cp "$own/a/checkpoint-00000006.h5" "$own/a/checkpoint-00000007.h5" "$own/old/"
$py -c 'import h5py,sys
for p in sys.argv[1:]:
    with h5py.File(p, "r+") as f: del f.attrs["run_id"]' "$own"/old/*.h5 || setup_fail "10-ownership: h5py"
s=$(own_state "$own/old")
refuse train "a new run among checkpoints without an identity" "written without a run identity" \
  "${ot[@]}" --epochs 9 --checkpoint-dir "$own/old"
unchanged "checkpoints without an identity" "$own/old" "$s"
accept train "resume old checkpoints in place: never rotated away" \
  "[[ \$(own_list $own/old) == 'checkpoint-00000006.h5 checkpoint-00000007.h5 checkpoint-00000009.h5 ' ]]" \
  "${ot[@]}" --epochs 9 --resume "$own/old" --checkpoint-dir "$own/old" --checkpoint-every 1 --keep 1

# ---- files named like checkpoints that are not ----------------------------------------------------------
mkdir -p "$own/user" && echo "my notes" >"$own/user/checkpoint-00000001.h5"
s=$(own_state "$own/user")
refuse train "a user's file named like a checkpoint" "checkpoint-00000001.h5 cannot be read" \
  "${ot[@]}" --epochs 3 --checkpoint-dir "$own/user" --keep 1
unchanged "a user's file named like a checkpoint" "$own/user" "$s"
mkdir -p "$own/mjson" && printf '{"config": true}\n' >"$own/mjson/checkpoint-00000002.h5"
refuse train "an old metrics file named like a checkpoint" "checkpoint-00000002.h5 cannot be read" \
  "${ot[@]}" --epochs 3 --checkpoint-dir "$own/mjson"
mkdir -p "$own/loop" && ln -s checkpoint-00000001.h5 "$own/loop/checkpoint-00000001.h5"
refuse train "--resume: a symlink loop named like a checkpoint" "is named like a checkpoint but is a symbolic link loop" \
  "${ot[@]}" --epochs 3 --resume "$own/loop"
refuse train "--checkpoint-dir: a symlink loop named like one" "is a symbolic link loop" \
  "${ot[@]}" --epochs 3 --checkpoint-dir "$own/loop"
refuse "gpt train" "--resume: a symlink loop named like a checkpoint" "symbolic link loop" \
  "${og[@]}" --iters 2 --resume "$own/loop"
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 refuse train "MPI 2: --resume a symlink loop" "symbolic link loop" "${ot[@]}" --grid 2x1x1 --epochs 3 --resume "$own/loop"
fi
mkdir -p "$own/dangle" && ln -s gone.h5 "$own/dangle/checkpoint-00000003.h5"
refuse train "--resume: a dangling link named like a checkpoint" "dangling symbolic link" \
  "${ot[@]}" --epochs 3 --resume "$own/dangle"
mkdir -p "$own/subdir/checkpoint-00000005.h5"
refuse train "--resume: a directory named like a checkpoint" "is a directory" "${ot[@]}" --epochs 8 --resume "$own/subdir"
refuse train "--checkpoint-dir: a directory named like one" "is a directory" "${ot[@]}" --epochs 3 --checkpoint-dir "$own/subdir"
mkdir -p "$own/fifo" && mkfifo "$own/fifo/checkpoint-00000002.h5"
refuse train "--resume: a FIFO named like a checkpoint" "is a FIFO" "${ot[@]}" --epochs 3 --resume "$own/fifo"
refuse train "--checkpoint-dir: a FIFO named like one" "is a FIFO" "${ot[@]}" --epochs 3 --checkpoint-dir "$own/fifo"

# ---- outputs that name a checkpoint of the run --------------------------------------------------------------
refuse train "--save-model names the final checkpoint" "--save-model names a file of --checkpoint-dir" \
  "${ot[@]}" --epochs 10 --checkpoint-dir "$OUT/ck5" --save-model "$OUT/ck5/checkpoint-00000010.h5"
refuse train "--save-model names an earlier checkpoint" "--save-model names a file of --checkpoint-dir" \
  "${ot[@]}" --epochs 10 --checkpoint-dir "$own/s" --save-model "$own/s/checkpoint-00000003.h5"
ln -s "$own/s/checkpoint-00000010.h5" "$own/s-link.h5"
refuse train "--save-model: a link to a checkpoint's name" "--save-model names a file of --checkpoint-dir" \
  "${ot[@]}" --epochs 10 --checkpoint-dir "$own/s" --save-model "$own/s-link.h5"
refuse train "--metrics names a checkpoint" "--metrics names a file of --checkpoint-dir" \
  "${ot[@]}" --epochs 10 --checkpoint-dir "$own/s" --metrics "$own/s/../s/checkpoint-00000001.h5"
refuse "gpt train" "--save names the final checkpoint" "--save names a file of --checkpoint-dir" \
  "${og[@]}" --iters 4 --checkpoint-dir "$own/g" --save "$own/g/checkpoint-00000004.h5"
refuse "gpt train" "--metrics names the lock file" "--metrics names a file of --checkpoint-dir" \
  "${og[@]}" --iters 4 --checkpoint-dir "$own/g" --metrics "$own/g/.plexus-lock"
mkdir -p "$own/s2"
accept train "--save-model beside the checkpoints, named otherwise" \
  "[[ -e $own/s2/model.h5 && -e $own/s2/checkpoint-00000003.h5 ]]" \
  "${ot[@]}" --epochs 3 --checkpoint-dir "$own/s2" --save-model "$own/s2/model.h5"

# ---- locks: a second run on what a first one writes -----------------------------------------------------------
"$plexus" train --data "$IN/g.h5" --threads 1 --epochs 1000000 --checkpoint-dir "$own/busy" --checkpoint-every 1000000 \
  --metrics "$own/busy.jsonl" >"$own/busy.out" 2>&1 &
holder=$!
bg_pids+=("$holder")
for _ in $(seq 300); do grep -q "^epoch" "$own/busy.out" 2>/dev/null && break; sleep 0.1; done
refuse train "a --checkpoint-dir in use by another run" "in use by another plexus run (pid $holder on" \
  "${ot[@]}" --epochs 2 --checkpoint-dir "$own/busy"
refuse train "a --metrics file in use by another run" "in use by another plexus run (pid $holder on" \
  "${ot[@]}" --epochs 2 --metrics "$own/busy.jsonl"
ln -sf busy.jsonl "$own/busy-link.jsonl"
refuse train "a --metrics file in use, by a link" "in use by another plexus run (pid $holder on" \
  "${ot[@]}" --epochs 2 --metrics "$own/busy-link.jsonl"
refuse "gpt train" "a --metrics file in use by a train run" "in use by another plexus run" \
  "${og[@]}" --iters 2 --metrics "$own/busy.jsonl"
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 refuse train "MPI 2: a --checkpoint-dir in use" "in use by another plexus run (pid $holder" \
    "${ot[@]}" --grid 2x1x1 --epochs 2 --checkpoint-dir "$own/busy"
fi
kill -TERM "$holder" 2>/dev/null
wait "$holder"
rc=$?
if [[ $rc -eq 143 && ! -e $own/busy/.plexus-lock && ! -e $own/busy.jsonl.lock ]] &&
  $py -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(not r[-1]["interrupted"])' "$own/busy.jsonl"; then
  record train "the lock holder: outputs whole, lock files gone" "143" "$rc" PASS
else
  record train "the lock holder: outputs whole, lock files gone" "143" "$rc" FAIL "$(ls -A "$own/busy") $(tail -1 "$own/busy.out")"
fi

# ---- --metrics on the file behind standard output (the runner sends stdout to $LOG/out) -------------------------
# own_stream_ok [N]: the header first, N epoch/step lines and the summary, each whole, among progress text.
own_stream_ok() {
  $py - "$LOG/out" "${1:-2}" <<'PY' 2>/dev/null
import json, sys
lines = open(sys.argv[1]).read().splitlines()
rows = [json.loads(l) for l in lines if l.startswith("{")]
assert rows[0]["config"] and rows[-1]["summary"]
assert len([r for r in rows if "epoch" in r or "iter" in r]) == int(sys.argv[2])
assert any(not l.startswith("{") for l in lines)
PY
}
prog=(--data "$IN/g.h5" --threads 1 --epochs 2)  # with progress lines
accept train "--metrics /dev/stdout > file: header kept" own_stream_ok "${prog[@]}" --metrics /dev/stdout
accept train "--metrics /proc/self/fd/1 > file" own_stream_ok "${prog[@]}" --metrics /proc/self/fd/1
accept train "--metrics FILE > FILE (the same file)" own_stream_ok "${prog[@]}" --metrics "$LOG/out"
accept "gpt train" "--metrics /dev/stdout > file" "own_stream_ok 2" \
  --data "$IN/text.txt" --layers 1 --heads 2 --embed 16 --block 16 --batch 2 --eval-every 0 --threads 1 --iters 2 \
  --metrics /dev/stdout
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  NP=2 accept train "MPI 2: --metrics /dev/stdout > file" own_stream_ok "${prog[@]}" --grid 2x1x1 --metrics /dev/stdout
fi
refuse train "--save-model on the file behind stdout" "is the same file as standard output" \
  "${ot[@]}" --epochs 1 --save-model "$LOG/out"
