# Sourced by the benchmarks with a peer: `source .../same_blas_kernels.sh PLEXUS_BINARY`.
# Where OpenBLAS falls back to SSE3 kernels on a CPU it does not know, plexus starts itself again
# with OPENBLAS_CORETYPE naming the CPU's (README, "Using it"); exported here, the peers
# (PyTorch's OpenBLAS, the C++ benchmarks) run the same kernels, so the ratios compare code.
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  same_blas_core=$("$1" --version | sed -n 's/.*(OPENBLAS_CORETYPE=\([A-Za-z0-9]*\), over .*/\1/p')
  if [[ -n $same_blas_core ]]; then
    export OPENBLAS_CORETYPE=$same_blas_core
    echo "OpenBLAS kernels for plexus and its peers: $same_blas_core (OpenBLAS's own choice is older)" >&2
  fi
  unset same_blas_core
fi
