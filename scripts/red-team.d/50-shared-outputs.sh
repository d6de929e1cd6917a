# Outputs every rank writes together (--save-model, --checkpoint-dir of train, predict -o) when
# the ranks do not see one folder alike (docs/hardening.md, "Outputs every rank writes"): rank 1
# started in another working directory writes through rank 0's absolute name; rank 1 in a mount
# namespace where a tmpfs hides the folder (a node that does not share it) ends every rank with
# one line naming the output, within the time limit, leaving nothing behind.
if [[ ${RED_TEAM_MPI:-1} != 0 ]] && command -v mpirun >/dev/null; then
  so_a=$W/shared-a so_b=$W/shared-b
  mkdir -p "$so_a" "$so_b"
  # shared_case DESC EXPECT(0|2) WANT CHECK MODE(cwd|hidden) ARGS...
  shared_case() {
    local desc=$1 expect=$2 want=$3 check=$4 mode=$5; shift 5
    local rc verdict=PASS detail="" lines before
    before=$(find "$so_a" | sort | md5sum)
    if [[ $mode == cwd ]]; then
      timeout -k 5 "$T" mpirun -np 1 --wdir "$so_a" "$plexus" "$@" : -np 1 --wdir "$so_b" "$plexus" "$@" \
        </dev/null >"$LOG/out" 2>"$LOG/err"
    else
      timeout -k 5 "$T" mpirun -np 1 --wdir "$so_a" "$plexus" "$@" : -np 1 --wdir "$so_a" \
        unshare -m sh -c 'mount -t tmpfs none "$1" && cd "$1" && shift && exec "$@"' sh "$so_a" "$plexus" "$@" \
        </dev/null >"$LOG/out" 2>"$LOG/err"
    fi
    rc=$?
    lines=$(grep -c '^plexus: error: ' "$LOG/err")
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then verdict=FAIL detail="timeout (hang) after ${T}s"
    elif [[ $expect == 0 && $rc -ne 0 ]]; then verdict=FAIL detail="rc=$rc: $(grep -m1 . "$LOG/err")"
    elif [[ $expect == 0 ]] && ! eval "$check"; then verdict=FAIL detail="exit 0 but the check failed: $check"
    elif [[ $expect == 2 ]] && ! [[ $rc -eq 2 && $lines -eq 1 ]] || { [[ $expect == 2 ]] && ! grep -q -- "$want" "$LOG/err"; }; then
      verdict=FAIL detail="rc=$rc, $lines error lines, wanted '$want': $(grep -m1 . "$LOG/err")"
    elif [[ $expect == 2 && $(find "$so_a" | sort | md5sum) != "$before" ]]; then verdict=FAIL detail="refused, but the folder changed"
    fi
    if [[ -n $(find "$W" -name '*.tmp.*') ]]; then verdict=FAIL detail="temporary file left"; find "$W" -name '*.tmp.*' -delete; fi
    record "mpi 2 (2 folders)" "$desc" "$expect" "$rc" "$verdict" "$detail"
  }
  if unshare -m true 2>/dev/null; then hide=hidden; else hide=""; fi
  so_tr=(train --data "$IN/g.h5" --grid 2x1x1 --epochs 2 --quiet --threads 1)
  shared_case "train --save-model m.h5, rank 1 in another cwd" 0 "" '[[ -f $so_a/m.h5 && ! -e $so_b/m.h5 ]]' cwd \
    "${so_tr[@]}" --save-model m.h5
  shared_case "train --checkpoint-dir ck, rank 1 in another cwd" 0 "" '[[ -f $so_a/ck/checkpoint-00000002.h5 && ! -e $so_b/ck ]]' cwd \
    "${so_tr[@]}" --checkpoint-dir ck
  shared_case "predict -o p.h5, rank 1 in another cwd" 0 "" '[[ -f $so_a/p.h5 && ! -e $so_b/p.h5 ]]' cwd \
    predict --data "$IN/g.h5" --grid 2x1x1 --threads 1 --checkpoint "$IN/gcn.h5" -o p.h5
  shared_case "gpt train --save s.h5 (rank 0 writes), rank 1 in another cwd" 0 "" '[[ -f $so_a/s.h5 && ! -e $so_b/s.h5 ]]' cwd \
    gpt train --data "$IN/text.txt" --grid 2x1x1 --iters 1 --layers 1 --heads 2 --embed 16 --block 16 --batch 2 \
    --eval-every 0 --threads 1 --quiet --save s.h5
  rm -rf "${so_a:?}"/* "${so_b:?}"/*
  if [[ -n $hide ]]; then
    shared_case "--save-model in a folder rank 1 does not see" 2 "rank 1 cannot open" "" hidden "${so_tr[@]}" --save-model m.h5
    shared_case "--save-model by absolute name, not seen by rank 1" 2 "rank 1 cannot open" "" hidden "${so_tr[@]}" --save-model "$so_a/m.h5"
    shared_case "--checkpoint-dir rank 1 does not see" 2 "rank 1 cannot open" "" hidden "${so_tr[@]}" --checkpoint-dir ck
    shared_case "--checkpoint-dir existing, rank 1 does not see" 2 "rank 1 cannot open" "" hidden "${so_tr[@]}" --checkpoint-dir .
    shared_case "predict -o in a folder rank 1 does not see" 2 "rank 1 cannot open" "" hidden \
      predict --data "$IN/g.h5" --grid 2x1x1 --threads 1 --checkpoint "$IN/gcn.h5" -o p.h5
  else
    record "mpi 2 (2 folders)" "hidden folder: unshare -m is not permitted here" 2 - FAIL "run as root (mount namespaces)"
  fi
fi
