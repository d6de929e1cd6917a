#!/usr/bin/env bash
# Run HERE (Debian 12, with network) before using a lent GPU machine, which has CUDA, PyTorch and
# PyG but no MPI/HDF5/METIS/OpenBLAS/GoogleTest dev packages and no network. Saves the Debian
# packages Plexus builds against in .dev/debs (git-ignored) and the update-alternatives links
# their post-install scripts would create in .dev/alternatives.txt. Carry `.dev` with the call
# and run scripts/gpu-setup.sh there first.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libhwloc15 libhwloc-plugins
      libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libpmix2 libfabric1 libucx0
      libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libpsm2-2 libpsm-infinipath1 libnuma1
      libmunge2 libpciaccess0
      libhdf5-openmpi-dev libhdf5-openmpi-103-1 libhdf5-openmpi-hl-100 libhdf5-openmpi-cpp-103-1
      libhdf5-openmpi-hl-cpp-100 libhdf5-openmpi-fortran-102 libhdf5-openmpi-hl-fortran-100
      libsz2 libaec0 libaec-dev hdf5-tools libhdf5-103-1
      libmetis-dev libmetis5 libopenblas-openmp-dev libopenblas0-openmp libgfortran5
      libgtest-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libtomlplusplus3
      libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 zlib1g-dev)
mkdir -p .dev/debs
(cd .dev/debs && apt-get download "${pkgs[@]}" 2>&1 | grep -v '^Get:' || true)
# The alternatives these packages register (mpirun, mpicc, libmpi.so, h5pcc, cblas.h, ...):
# "LINK TARGET" pairs (the alternative's own choice; man pages left out).
find /usr -lname '/etc/alternatives/*' -not -path '/usr/share/man/*' 2>/dev/null | while read -r link; do
  name=$(basename "$(readlink "$link")")
  case "$name" in *mpi*|*MPI*|h5p*|hdf5*|*blas*|*BLAS*|*lapack*|mpic*|mpif*|orte*) ;; *) continue ;; esac
  target=$(readlink "/etc/alternatives/$name") || continue  # one hop: mpicc -> mpicc.openmpi
  [[ -e "$target" ]] && echo "$link $target"
done > .dev/alternatives.txt
echo "gpu-fetch-debs: $(ls .dev/debs | wc -l) packages, $(du -sh .dev/debs | cut -f1); $(wc -l < .dev/alternatives.txt) alternative links"
