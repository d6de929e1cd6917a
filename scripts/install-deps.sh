#!/usr/bin/env bash
# Installs the Debian packages Plexus needs, only those that are missing.
# Usage: scripts/install-deps.sh          what building and running the engine needs (README command 1)
#        scripts/install-deps.sh --tests  also what the test suite, its peers and tools need (command 2, CI)
set -euo pipefail

run_pkgs=(build-essential cmake pkg-config
          openmpi-bin libopenmpi-dev libhdf5-openmpi-dev
          libmetis-dev libopenblas-openmp-dev
          libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev libfmt-dev zlib1g-dev)
test_pkgs=(libgtest-dev hdf5-tools
      python3-numpy python3-h5py python3-torch  # python3-torch: the GPT's PyTorch parity test
      python3-scipy  # tests/gcn_reference.py (its Philox masks serve the PyG peer too), the benchmark peers
      # PyTorch Geometric's imports (its wheel is installed below): tests/cli_gnn_pyg_parity.sh
      python3-fsspec python3-psutil python3-jinja2 python3-pyparsing python3-requests python3-tqdm
      python3-matplotlib  # the scaling study's plots (examples/scaling) and its test
      clang libclang-rt-14-dev libomp-dev  # scripts/fuzz.sh (libFuzzer), CI's sanitizer build (clang's OpenMP)
      slurm-wlm munge  # tests/cli_slurm.sh: a one-node Slurm cluster for the stop signals
      time)  # /usr/bin/time: peak memory of both sides in examples/bench/run_gat_scale.sh
tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "usage: scripts/install-deps.sh [--tests]" >&2; exit 2 ;;
esac
pkgs=("${run_pkgs[@]}")
((tests)) && pkgs+=("${test_pkgs[@]}")

# PyTorch Geometric 2.6.1 (pure Python, runs on Debian's torch): from PyPI without its
# dependencies, which are the Debian packages above. Only when it cannot be imported.
install_pyg() {
  if /usr/bin/python3 -c "import torch_geometric" 2>/dev/null; then return; fi
  echo "install-deps: installing torch_geometric 2.6.1 (pip, --no-deps)"
  local pip=(/usr/bin/python3 -m pip install -q --no-deps --root-user-action=ignore torch_geometric==2.6.1)
  "${pip[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages
  /usr/bin/python3 -c "import torch_geometric"
}

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#pkgs[@]} packages present"
  ((tests)) && install_pyg
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
((tests)) && install_pyg
echo "install-deps: done"
