#!/usr/bin/env python3
"""The floors of the source tree (docs/architecture.md, "Floors"): every #include of the production
code goes down or stays on its floor, and no file includes a header another folder keeps private.

A header is private to a folder when its leading comment says so ("private to io/", "private to
kernels/cuda/"): only files under that folder may include it. A header that says only "private"
is private to its own part of the tree (io/, partition/, or src/X/, kernels/X/). The rest of a
folder's headers are what it offers the floors above. tests/, fuzz/ and examples/ are not checked
(they test and show everything). Prints every violation and exits 1 when there is one.

Usage: check_floors.py [SOURCE_DIR]
"""
import re
import os
import subprocess
import sys
from pathlib import Path

# Bottom to top. A folder belongs to the floor of the longest prefix that names it.
FLOORS = [
    ("core types and communication", ["include/plexus", "kernels", "src/core", "src/comm", "src/cuda"]),
    ("io", ["io"]),
    ("partition", ["partition"]),
    ("models", ["src/pmm", "src/optim", "src/models", "src/train", "src/plan"]),
    ("cli", ["src/cli"]),
]
UNCHECKED = ("tests/", "fuzz/", "examples/", "scripts/", "cmake/", "docs/", "data/")
SOURCES = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
PRIVATE = re.compile(r"private to ([a-z_][a-z_0-9]*(?:/[a-z_0-9]+)*)/?")
BARE_PRIVATE = re.compile(r"\(private\b(?! to)")


def floor_of(path):
    best = None
    for level, (_, folders) in enumerate(FLOORS):
        for folder in folders:
            if path == folder or path.startswith(folder + "/"):
                if best is None or len(folder) > best[1]:
                    best = (level, len(folder))
    return None if best is None else best[0]


def leading_comment(text):
    lines = []
    for line in text.splitlines():
        if line.startswith("#pragma once") and not lines:
            continue
        if not line.startswith("//"):
            break
        lines.append(line[2:])
    return " ".join(" ".join(lines).split())


def part_of(path):
    """The part of the tree a path is in: io, partition, or src/X, kernels/X, include/X."""
    parts = Path(path).parts
    return "/".join(parts[:2] if parts[0] in ("src", "kernels", "include") else parts[:1])


def private_scope(root, header):
    """The folder a header is private to, or None."""
    comment = leading_comment((root / header).read_text(errors="replace"))
    m = PRIVATE.search(comment)
    if m and (root / m.group(1)).is_dir():
        return m.group(1)
    if BARE_PRIVATE.search(comment):
        return part_of(header)
    return None


def resolve(root, including, name):
    for base in (Path(including).parent, Path("."), Path("src"), Path("include")):
        candidate = (base / name).as_posix()
        if (root / candidate).is_file():
            return str(Path(candidate))
    return None  # a system or third-party header


def tracked_files(root):
    """The tree's files: git's list, or (a copy that is no git work tree, as scripts/mutate.py's
    scratch copy) every file under root outside hidden and build folders."""
    p = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True)
    if p.returncode == 0:
        return p.stdout.split()
    files = []
    for dirpath, dirnames, names in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and not d.startswith("build")]
        files += [os.path.relpath(os.path.join(dirpath, n), root) for n in names]
    return sorted(files)


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files = tracked_files(root)
    files = [f for f in files if f.endswith(SOURCES) and not f.startswith(UNCHECKED)]
    scopes = {}
    problems = []
    for f in files:
        here = floor_of(f)
        if here is None:
            problems.append(f"{f}: in no floor (add its folder to FLOORS in tests/check_floors.py and docs/architecture.md)")
            continue
        for name in INCLUDE.findall((root / f).read_text(errors="replace")):
            target = resolve(root, f, name)
            if target is None:
                continue
            there = floor_of(target)
            if there is not None and there > here:
                problems.append(f'{f} (floor {FLOORS[here][0]}) includes "{name}" (floor {FLOORS[there][0]}): upward')
            if target not in scopes:
                scopes[target] = private_scope(root, target)
            scope = scopes[target]
            if scope is not None and not f.startswith(scope + "/"):
                problems.append(f'{f} includes "{name}", private to {scope}/')
    for p in problems:
        print(p)
    print(f"{len(files)} files checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
