# Shared set-up of the command-line tests (sourced by tests/cli_*.sh after they set
# plexus=$1 src=$2): a scratch directory, pass/fail counters and expect_error.
py=/usr/bin/python3
cora=$src/data/cora.h5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passed=0
ok() { passed=$((passed + 1)); }
fail() { echo "FAIL [$1]"; failures=$((failures + 1)); }

# expect_error NAME EXPECTED_SUBSTRING ARGS...: plexus ARGS exits 2 with one stderr line
# `plexus: error: ...EXPECTED_SUBSTRING...`.
expect_error() {
  local name=$1 want=$2; shift 2
  "$plexus" "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(wc -l <"$work/err")
  if [[ $rc -ne 2 || $lines -ne 1 ]] || ! grep -q "^plexus: error: .*$want" "$work/err"; then
    fail "$name"; echo "  rc=$rc, $lines stderr lines, wanted '$want':"; cat "$work/err"
  else ok; fi
}

# mpi_error NAME SUBSTRING ARGS...: like expect_error on 4 ranks (mpirun adds its own lines).
mpi_error() {
  local name=$1 want=$2; shift 2
  timeout 60 mpirun -np 4 "$plexus" "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(grep -c "^plexus: error: " "$work/err")
  if [[ $rc -ne 2 || $lines -ne 1 ]] || ! grep -q "^plexus: error: .*$want" "$work/err"; then
    fail "mpi $name"; echo "  rc=$rc (124 = hang), $lines error lines:"; cat "$work/err"
  else ok; fi
}

# same_datasets A B: two HDF5 files hold the same objects, values and attributes
# (tests/h5_same_datasets.py); prints the differences.
same_datasets() { $py "$src/tests/h5_same_datasets.py" "$1" "$2"; }
