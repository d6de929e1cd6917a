#!/usr/bin/env bash
# Files kept safe (io/files/safe_files.hpp, docs/format-v1.md "Writing outputs"). Outputs: devices, FIFOs
# and symbolic links are written through, never replaced; an output that is an input is
# refused; every output is checked before the work; temporary files go on SIGINT/TERM/HUP.
# Inputs: a FIFO is read as a stream where the format allows, refused where it does not.
# Device nodes are made with mknod inside the scratch directory (as root), never the system's.
# Usage: cli_files.sh PLEXUS_BINARY SOURCE_DIR
set -u
plexus=$1 src=$2
source "$src/tests/lib_cli.sh"
chmod 755 "$work"  # the checks run as an ordinary user too
cp "$cora" "$work/g.h5"
train=(train --epochs 1 --quiet --threads 1)
unchanged() { cmp -s "$cora" "$1"; }  # $1 still holds Cora, byte for byte

# ---- devices, FIFOs, standard output ------------------------------------------------------
if [[ $(id -u) -eq 0 ]]; then
  mknod "$work/null" c 1 3
  "$plexus" "${train[@]}" --metrics "$work/null" >/dev/null 2>&1
  if [[ $? -eq 0 && -c "$work/null" ]]; then ok; else fail "metrics to a character device keeps it a device"; fi
  expect_error "hdf5 output to a device" "character device, not a regular file" prepare "$cora" -o "$work/null"
  [[ -c "$work/null" ]] && ok || fail "a refused HDF5 output leaves the device as it was"
fi

mkfifo "$work/fifo"
cat "$work/fifo" >"$work/fifo.out" &
reader=$!
timeout 60 "$plexus" "${train[@]}" --metrics "$work/fifo" >/dev/null 2>&1
rc=$?
wait "$reader"
if [[ $rc -eq 0 && -p "$work/fifo" ]] && grep -q '"summary":true' "$work/fifo.out"; then ok
else fail "metrics to a FIFO with a reader (rc=$rc)"; fi
# No reader: an error at once, never a wait (nor a file put in the FIFO's place).
timeout 20 "$plexus" "${train[@]}" --metrics "$work/fifo" >/dev/null 2>"$work/err"
rc=$?
if [[ $rc -eq 2 && -p "$work/fifo" ]] && grep -q "FIFO with no reader" "$work/err"; then ok
else fail "metrics to a FIFO without a reader (rc=$rc)"; cat "$work/err"; fi
expect_error "hdf5 output to a FIFO" "FIFO, not a regular file" generate sbm --nodes 100 -o "$work/fifo"

# /dev/stdout: into a pipe, and appended to a file standard output was redirected to.
lines=$("$plexus" "${train[@]}" --metrics /dev/stdout 2>/dev/null | grep -c '"summary":true')
[[ $lines -eq 1 ]] && ok || fail "metrics to /dev/stdout through a pipe"
echo "before" >"$work/stdout.txt"
"$plexus" "${train[@]}" --metrics /dev/stdout >>"$work/stdout.txt" 2>/dev/null
if [[ $(head -1 "$work/stdout.txt") == before ]] && grep -q '"summary":true' "$work/stdout.txt"; then ok
else fail "metrics to /dev/stdout redirected to a file append to it"; fi
expect_error "hdf5 output to standard output" "not a regular file" prepare "$cora" -o /dev/stdout

# ---- symbolic links: written through -------------------------------------------------------
echo old >"$work/real.jsonl"
ln -s real.jsonl "$work/link.jsonl"
"$plexus" "${train[@]}" --metrics "$work/link.jsonl" >/dev/null 2>&1
if [[ -L "$work/link.jsonl" ]] && grep -q '"summary":true' "$work/real.jsonl"; then ok
else fail "metrics through a symbolic link"; fi
ln -s made.jsonl "$work/dangling.jsonl"
"$plexus" "${train[@]}" --metrics "$work/dangling.jsonl" >/dev/null 2>&1
if [[ -L "$work/dangling.jsonl" && -f "$work/made.jsonl" ]]; then ok; else fail "metrics through a dangling link"; fi
mkdir "$work/sub"
ln -s ../g.h5 "$work/sub/to-g.h5"
ln -s loop1 "$work/loop2"; ln -s loop2 "$work/loop1"
expect_error "symbolic link loop" "too many levels of symbolic links" "${train[@]}" --metrics "$work/loop1"

# ---- an output that is an input: refused, the input left as it was ------------------------
expect_error "train metrics over its data" "same file as the input" "${train[@]}" --data "$work/g.h5" --metrics "$work/g.h5"
ln "$work/g.h5" "$work/hard.h5"
expect_error "metrics over a hard link of the data" "same file as the input" "${train[@]}" --data "$work/g.h5" --metrics "$work/hard.h5"
expect_error "prepare over its input" "same file as the input" prepare "$work/g.h5" -o "$work/g.h5"
expect_error "prepare over its input through a link" "same file as the input" prepare "$work/g.h5" -o "$work/sub/to-g.h5"
unchanged "$work/g.h5" && ok || fail "refused outputs leave the input untouched"
printf '0 1\n1 2\n' >"$work/e.txt"
cp "$work/e.txt" "$work/e.keep"
expect_error "convert over its input" "same file as the input" convert edgelist "$work/e.txt" -o "$work/e.txt"
cmp -s "$work/e.txt" "$work/e.keep" && ok || fail "convert's refused output leaves the edge list untouched"
cfg="$work/c.toml"
echo 'epochs = 1' >"$cfg"
expect_error "metrics over the config file" "same file as the input" "${train[@]}" --config "$cfg" --metrics "$cfg"

# ---- checked before the work ---------------------------------------------------------------
t0=$SECONDS
expect_error "metrics in a missing directory" "does not exist" train --epochs 100000 --quiet --metrics "$work/nodir/m.jsonl"
expect_error "output in a missing directory" "does not exist" generate rmat --scale 20 -o "$work/nodir/g.h5"
(( SECONDS - t0 < 20 )) && ok || fail "a bad output is reported before the work"
long=$(printf 'm%.0s' {1..251})
expect_error "a name too long with its temporary suffix" "too long" "${train[@]}" --metrics "$work/$long"
expect_error "an output that is a directory" "is a directory" "${train[@]}" --metrics "$work/sub"
expect_error "an output under a file" "is not a directory" "${train[@]}" --metrics "$work/e.keep/m.jsonl"
ls "$work" | grep -q '\.tmp\.' && fail "no temporary file is left by refused outputs" || ok

# ---- as an ordinary user: permissions -----------------------------------------------------
if [[ $(id -u) -eq 0 ]] && command -v runuser >/dev/null; then
  mkdir "$work/ro" "$work/rw"
  chmod 555 "$work/ro"
  chmod 777 "$work/rw"
  echo keep >"$work/rw/locked.jsonl"
  chmod 444 "$work/rw/locked.jsonl"
  as_user() { runuser -u nobody -- "$plexus" "$@"; }
  for case in "ro/m.jsonl:not writable" "rw/locked.jsonl:is not writable"; do
    as_user "${train[@]}" --metrics "$work/${case%%:*}" >/dev/null 2>"$work/err"
    rc=$?
    if [[ $rc -eq 2 ]] && grep -q "${case#*:}" "$work/err"; then ok
    else fail "ordinary user, ${case%%:*} (rc=$rc)"; cat "$work/err"; fi
  done
  [[ $(cat "$work/rw/locked.jsonl") == keep ]] && ok || fail "a read-only output is not replaced"
  as_user "${train[@]}" --metrics "$work/rw/fine.jsonl" >/dev/null 2>&1 && [[ -s "$work/rw/fine.jsonl" ]] && ok ||
    fail "an ordinary user writes into a writable directory"
fi

# ---- signals: the temporary file goes, the target never appears ------------------------------
# An R-MAT graph whose write takes long enough to be interrupted while its temporary file exists.
# Started through python with the signals' default actions: a background job of a script
# inherits SIGINT ignored, and a process keeps a signal it was started ignoring ignored (nohup).
with_default_signals() {
  exec "$py" -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$@"
}
for sig in INT TERM HUP; do
  out="$work/big-$sig.h5"
  with_default_signals "$plexus" generate rmat --scale 16 --edge-factor 8 --feature-width 512 -o "$out" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do
    compgen -G "$out.tmp.*" >/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  if ! compgen -G "$out.tmp.*" >/dev/null; then
    wait "$pid"; fail "SIG$sig: the temporary file was never seen (write too fast?)"; continue
  fi
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$?
  if compgen -G "$out.tmp.*" >/dev/null || [[ -e "$out" ]] || [[ $rc -eq 0 ]]; then
    fail "SIG$sig during a write leaves no temporary file and no output (rc=$rc)"; ls "$work"
  else ok; fi
done

# ---- inputs: FIFOs and standard input ------------------------------------------------------
mkfifo "$work/in.fifo"
expect_error "an HDF5 input that is a FIFO" "is a FIFO, not a regular file (HDF5 needs one)" "${train[@]}" --data "$work/in.fifo"
expect_error "prepare from a FIFO" "is a FIFO, not a regular file" prepare "$work/in.fifo" -o "$work/p.h5"
# A TOML file is parsed whole: a FIFO is refused at once (never a wait for a writer).
timeout 20 "$plexus" "${train[@]}" --config "$work/in.fifo" >/dev/null 2>"$work/err"
rc=$?
if [[ $rc -eq 2 && $(wc -l <"$work/err") -eq 1 ]] && grep -q "in.fifo: is a FIFO, not a regular file (TOML needs one)" "$work/err"
then ok; else fail "a --config that is a FIFO (rc=$rc)"; cat "$work/err"; fi
# An edge list is read in one pass: from a FIFO and from standard input.
printf '0 1\n1 2\n2 0\n' >"$work/in.fifo" &
timeout 30 "$plexus" convert edgelist "$work/in.fifo" -o "$work/fifo.h5" >/dev/null 2>"$work/err"
rc=$?
wait
[[ $rc -eq 0 && -s "$work/fifo.h5" ]] && ok || { fail "an edge list read from a FIFO (rc=$rc)"; cat "$work/err"; }
printf '0 1\n1 2\n' | timeout 30 "$plexus" convert edgelist - -o "$work/stdin.h5" >"$work/out" 2>"$work/err"
rc=$?
[[ $rc -eq 0 && -s "$work/stdin.h5" ]] && grep -q "3 nodes" "$work/out" && ok ||
  { fail "an edge list read from standard input (rc=$rc)"; cat "$work/err"; }

# Two outputs of one command naming the same file (by any name) are refused before the run.
ln -s "$work/both.out" "$work/both-link"
expect_error "--metrics and --save the same file" "--metrics and --save name the same file" \
  gpt train --iters 1 --eval-every 0 --threads 1 --metrics "$work/both.out" --save "$work/../$(basename "$work")/both.out"
expect_error "--metrics through a link to --save" "--metrics and --save name the same file" \
  gpt train --iters 1 --eval-every 0 --threads 1 --metrics "$work/both-link" --save "$work/both.out"
[[ ! -e "$work/both.out" ]] && ok || fail "a refused pair of outputs left a file"

# A full disk (here: a file-size limit, with SIGXFSZ ignored so write() fails with EFBIG) is an
# input error with one line and no temporary left behind, for HDF5 writes (libhdf5 1.10.8
# crashes at exit after a failed H5Fclose, so the job ends without its atexit handlers) and
# for JSON Lines metrics.
mkdir "$work/full"
disk_full() {  # disk_full NAME KBYTES ARGS...
  local name=$1 kb=$2; shift 2
  # stderr goes through a pipe: the size limit applies to every file the process writes.
  bash -c 'ulimit -f "$1"; trap "" XFSZ; shift; exec "$@"' _ "$kb" "$plexus" "$@" 2>&1 >/dev/null | cat >"$work/err"
  local rc=${PIPESTATUS[0]}
  if [[ $rc -eq 2 && $(wc -l <"$work/err") -eq 1 ]] && grep -q "^plexus: error: .*\(disk full?\|File too large\)" "$work/err" &&
     [[ -z $(ls -A "$work/full") ]]
  then ok; else fail "$name on a full disk (rc=$rc)"; cat "$work/err"; ls -la "$work/full"; fi
}
disk_full "generate" 200 generate rmat --scale 12 --feature-width 64 -o "$work/full/g.h5"
"$plexus" generate rmat --scale 12 --feature-width 64 -o "$work/g12.h5" >/dev/null
disk_full "prepare" 300 prepare "$work/g12.h5" -o "$work/full/p.h5"
disk_full "gpt train --save" 300 gpt train --iters 0 --eval-iters 1 --threads 1 --save "$work/full/m.h5"
disk_full "train --metrics" 0 "${train[@]}" --metrics "$work/full/m.jsonl"

echo "cli_files: $passed passed, $failures failed"
[[ $failures -eq 0 ]]
