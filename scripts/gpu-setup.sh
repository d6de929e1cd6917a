#!/usr/bin/env bash
# Run THERE, on a lent GPU machine, from the repository root, with `.dev` carried (see
# scripts/gpu-fetch-debs.sh). Unpacks the Debian packages into / WITHOUT overwriting any file the
# machine already has (its own libraries win), recreates the alternatives links, the link-time
# names HDF5's wrapper asks for, and makes /usr/bin/python3 one that has h5py and numpy (the CLI
# tests call /usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."
stage=$(mktemp -d)
for f in .dev/debs/*.deb; do dpkg-deb -x "$f" "$stage"; done
# Merged /usr: the machine's /lib, /bin, /sbin are links into /usr.
for d in lib lib64 bin sbin; do
  if [[ -d "$stage/$d" && ! -L "$stage/$d" ]]; then
    mkdir -p "$stage/usr/$d" && cp -an "$stage/$d/." "$stage/usr/$d/" && rm -rf "${stage:?}/$d"
  fi
done
rm -rf "$stage/usr/share/doc" "$stage/usr/share/man"
# Links the machine already resolves elsewhere stay as they are; cp reports them and goes on.
cp -an "$stage/." / 2>/dev/null || true
rm -rf "$stage"
while read -r link target; do
  [[ -e "$link" || -L "$link" ]] || { mkdir -p "$(dirname "$link")"; ln -s "$target" "$link"; }
done < .dev/alternatives.txt
libdir=/usr/lib/x86_64-linux-gnu
for l in crypto curl sz z; do
  if [[ ! -e "$libdir/lib$l.so" ]]; then
    real=$(ls "$libdir"/lib$l.so.* 2>/dev/null | head -1 || true)
    [[ -n "$real" ]] && ln -s "$real" "$libdir/lib$l.so"
  fi
done
ldconfig
# A venv's python finds its packages only when started by its own path (a symlink to it starts the
# bare base interpreter), so /usr/bin/python3 becomes a wrapper script that execs it.
if ! /usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null; then
  py=$(command -v python3)
  if [[ "$py" != /usr/bin/python3 ]] && "$py" -c 'import h5py, numpy'; then
    [[ -e /usr/bin/python3 && ! -e /usr/bin/python3.system ]] && mv /usr/bin/python3 /usr/bin/python3.system
    rm -f /usr/bin/python3
    printf '#!/bin/sh\nexec %s "$@"\n' "$py" > /usr/bin/python3 && chmod +x /usr/bin/python3
  fi
fi
/usr/bin/python3 -c 'import h5py, numpy, torch' || echo "gpu-setup: /usr/bin/python3 lacks h5py, numpy or torch"
echo "gpu-setup: done ($(mpirun --version 2>&1 | head -1); $(h5pcc -showconfig 2>/dev/null | grep -m1 'HDF5 Version' | xargs))"
