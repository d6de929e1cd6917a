#!/usr/bin/env python3
"""Survey how HDF5 readers survive corrupted files: one-byte mutants of seed files, run in
subprocesses, classified as ok / error / crash / hang / other.

Written to compare libhdf5 versions (Debian 12's 1.10.8 segfaults or spins inside H5Aread on
some corrupted attribute/metadata bytes); the driver itself uses the Python standard library only.

Usage:
  scripts/hdf5-survey.py [options] [SEED.h5 ...]
  scripts/hdf5-survey.py --replay [options] FILE|DIR|@LIST ...

Seeds (default: fuzz/corpus/hdf5/*.h5 plus a generated file, see --no-generated-seed): the
generated seed is written once with h5py (by --seed-writer, default the first h5py runner's
interpreter) and holds many root/group/dataset attributes of several types (ints, floats, bool,
complex, fixed and variable-length strings, arrays, compound, empty), chunked+compressed and
contiguous datasets, nested groups and links. When --keep DIR already holds
DIR/seeds/generated_attrs.h5 it is reused as is, so repeated surveys into one DIR see the same
bytes. All seeds are copied to DIR/seeds/.

Mutants: N of them (-n), deterministic for a given --seed and seed set (mutant i uses its own
RNG seeded with (seed, i), so mutant i does not depend on N). Each takes one seed (round robin),
picks one byte -- with probability --head-fraction (default 0.8) inside the first --head bytes
(default 4096: superblock, root object header, attributes), else anywhere -- and either flips one
bit or sets it to a random different value. Every runner sees exactly the same mutant files.
DIR/manifest.tsv records seed, offset, old and new byte of each.

Runners (--runner, repeatable; run one after another, each over a pool of --jobs <= 2 processes):
  h5py:/path/to/python   the child opens the file with that interpreter's h5py and visits
                         everything: every group (links followed except external ones), every
                         dataset's shape/dtype/chunking/filters and full data read (not the
                         fill value: h5py 3.7 segfaults reading it for vlen-string datasets even
                         of intact files), every attribute's shape/dtype/value on every object
                         and named datatype. A crash's Python stack (faulthandler) is shortened
                         to its innermost frames in the report, e.g. "attrs.py:NNN __getitem__".
                         exit 0 = ok, exit 1 or 2 (Python exception) = error.
  cmd:'COMMAND {}'       any command ({} is replaced by the file; appended when absent), run
                         without a shell: exit 0 = ok, exit 2 with output = error (clean),
                         any other exit code = other.
  For both: killed by a signal (e.g. -11 SIGSEGV, -6 SIGABRT) or exit >= 128 = crash, running
  past --timeout seconds (default 10) = hang (the process group is killed).
Children run with an address-space limit (--mem-limit-mb, default 4096) so huge allocations
requested by corrupted sizes fail cleanly instead of exhausting the machine, no core dumps,
and OMP/OpenBLAS threads = 1.

Output: a table of counts per runner (with its HDF5 version for h5py runners) and wall time,
then the crashing / hanging / other files per runner. With --keep DIR the mutants stay in DIR
(without it a temporary directory is used and removed), with DIR/results-<k>.tsv per runner and
DIR/crash-<k>.txt, DIR/hang-<k>.txt (file lists, usable as --replay @DIR/crash-1.txt).

Examples:
  scripts/hdf5-survey.py -n 1500 --seed 1 --keep /tmp/hdf5-survey-mutants \\
      --runner h5py:/usr/bin/python3 --runner h5py:/tmp/h5new/bin/python
  scripts/hdf5-survey.py --replay --runner h5py:/tmp/h5new/bin/python \\
      @/tmp/hdf5-survey-mutants/crash-1.txt @/tmp/hdf5-survey-mutants/hang-1.txt
  scripts/hdf5-survey.py --replay --runner cmd:'build/plexus inspect {}' /tmp/hdf5-survey-mutants
Exit status: 0 when no runner crashed or hung, 1 otherwise, 2 on usage errors.
"""
import argparse
import concurrent.futures
import glob
import hashlib
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATED = "generated_attrs.h5"
FRAME = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')
CLASSES = ("ok", "error", "crash", "hang", "other")

# Child program for h5py runners: visit everything, keep going after an exception (so later
# objects are still exercised), exit 1 when anything raised.
H5PY_VISITOR = r'''
import faulthandler
import sys
faulthandler.enable()
import h5py
errors = []
def note(what, e):
    errors.append("%s: %s: %s" % (what, type(e).__name__, e))
def visit_attrs(obj, where):
    try:
        names = list(obj.attrs.keys())
    except Exception as e:
        note(where + " attrs.keys", e); return
    for n in names:
        try:
            aid = h5py.h5a.open(obj.id, n.encode() if isinstance(n, str) else n)
            aid.shape; aid.dtype
            obj.attrs[n]
        except Exception as e:
            note("%s attr %r" % (where, n), e)
seen = set()
def visit(obj, where):
    try:
        key = hash(obj.id)          # (fileno, object address) in h5py
    except Exception:
        key = None
    if key is not None:
        if key in seen:
            return
        seen.add(key)
    visit_attrs(obj, where)
    if isinstance(obj, h5py.Dataset):
        try:
            obj.shape; obj.dtype; obj.chunks; obj.compression  # not .fillvalue: h5py 3.7 segfaults on it for vlen strings, even on intact files
            obj[()]
        except Exception as e:
            note(where + " data", e)
    elif isinstance(obj, h5py.Datatype):
        try:
            obj.dtype
        except Exception as e:
            note(where + " dtype", e)
    elif isinstance(obj, h5py.Group):
        try:
            names = list(obj.keys())
        except Exception as e:
            note(where + " keys", e); return
        for n in names:
            path = where.rstrip("/") + "/" + n
            try:
                link = obj.get(n, getlink=True)
                if isinstance(link, h5py.ExternalLink):
                    continue
                child = obj[n]
            except Exception as e:
                note(path + " open", e); continue
            visit(child, path)
try:
    f = h5py.File(sys.argv[1], "r")
except Exception as e:
    print("open: %s: %s" % (type(e).__name__, e), file=sys.stderr); sys.exit(1)
try:
    visit(f, "/")
    f.close()
except Exception as e:
    note("visit", e)
if errors:
    print("%d error(s); first: %s" % (len(errors), errors[0]), file=sys.stderr)
    sys.exit(1)
'''

# Written by --seed-writer's h5py; deterministic content, no timestamps.
SEED_WRITER = r'''
import sys
import numpy as np
import h5py
def attrs(obj, tag, k):
    a = obj.attrs
    for i in range(k):
        a.create("i8_%s_%d" % (tag, i), np.int8(-i), dtype="i1")
        a.create("u16_%s_%d" % (tag, i), np.uint16(1000 + i), dtype="<u2")
        a.create("i64_%s_%d" % (tag, i), np.int64(-(1 << 40) - i))
        a.create("f32_%s_%d" % (tag, i), np.float32(i + 0.5))
        a.create("f64_%s_%d" % (tag, i), np.float64(i * 3.25))
        a.create("be_i32_%s_%d" % (tag, i), np.arange(4, dtype=">i4") + i)
        a["bytes_%s_%d" % (tag, i)] = np.bytes_(b"fixed-%d" % i)
        a["str_%s_%d" % (tag, i)] = "variable length utf-8 \u00e9 %d" % i
        a["f64arr_%s_%d" % (tag, i)] = np.linspace(0, 1, 6 + i)
        a["i32mat_%s_%d" % (tag, i)] = np.arange(12, dtype=np.int32).reshape(3, 4) * i
    a["bool"] = np.bool_(True)
    a["complex"] = np.complex128(1 + 2j)
    a["strlist"] = np.array(["alpha", "beta", "gamma delta"], dtype=h5py.string_dtype())
    a["bytelist"] = np.array([b"a", b"bb", b"ccc"], dtype="S3")
    a["compound"] = np.array([(1, 2.5, b"x"), (2, 3.5, b"yy")],
                             dtype=[("n", "<i4"), ("x", "<f8"), ("s", "S2")])
    a["empty"] = h5py.Empty("f4")
    a["big_f64"] = np.arange(200, dtype=np.float64)
f = h5py.File(sys.argv[1], "w", libver="earliest", track_order=False)
attrs(f, "root", 4)
gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)       # like create_group(track_order=True) but
order = h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED   # without timestamps
gcpl.set_link_creation_order(order)                  # creation order -> v2 object header and
gcpl.set_attr_creation_order(order)                  # dense attribute storage (fractal heap,
gcpl.set_obj_track_times(False)                      # v2 B-trees) once there are > 8 attributes
g = h5py.Group(h5py.h5g.create(f.id, b"grp", gcpl=gcpl))
attrs(g, "dense", 3)
n = g.create_group("nested/deeper")
n.attrs["depth"] = 2
d = f.create_dataset("contig", data=np.arange(256, dtype="<f8").reshape(16, 16), track_times=False)
attrs(d, "contig", 2)
c = f.create_dataset("chunked_gzip", data=np.arange(4096, dtype="<i4").reshape(64, 64),
                     chunks=(16, 16), compression="gzip", compression_opts=4, shuffle=True,
                     fletcher32=True, track_times=False)
attrs(c, "gzip", 2)
z = g.create_dataset("chunked_lzf", data=(np.arange(1000) % 7).astype("u1"), chunks=(100,),
                     compression="lzf", maxshape=(None,), track_times=False)
z.attrs["note"] = "resizable lzf"
f.create_dataset("scalar", data=np.float32(3.5), track_times=False)
f.create_dataset("vlen_str", data=np.array(["x" * i for i in range(20)], dtype=h5py.string_dtype()),
                 track_times=False)
f.create_dataset("compound", data=np.array([(i, i / 2.0) for i in range(30)],
                 dtype=[("a", "<i8"), ("b", "<f4")]), track_times=False)
f["named_type"] = np.dtype([("p", "<i2"), ("q", "<f8")])
f["named_type"].attrs["about"] = "committed datatype"
f["soft"] = h5py.SoftLink("/grp/nested")
f["hard_to_root"] = f                                # cycle
f.close()
'''


def parse_runner(spec):
    if spec.startswith("h5py:"):
        py = spec[5:]
        if not py:
            raise ValueError("h5py: runner needs an interpreter path")
        return {"kind": "h5py", "spec": spec, "python": py}
    if spec.startswith("cmd:"):
        argv = shlex.split(spec[4:])
        if not argv:
            raise ValueError("cmd: runner needs a command")
        if not any("{}" in a for a in argv):
            argv.append("{}")
        return {"kind": "cmd", "spec": spec, "argv": argv}
    raise ValueError("runner must be h5py:PYTHON or cmd:'COMMAND {}': %r" % spec)


def child_env():
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               HDF5_USE_FILE_LOCKING="FALSE", PYTHONDONTWRITEBYTECODE="1")
    return env


def make_preexec(mem_mb):
    def preexec():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if mem_mb > 0:
            lim = mem_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    return preexec


def hdf5_version(runner):
    if runner["kind"] != "h5py":
        return "-"
    try:
        out = subprocess.run([runner["python"], "-c",
                              "import h5py; print(h5py.version.hdf5_version, h5py.__version__)"],
                             capture_output=True, text=True, timeout=60, env=child_env())
        v = out.stdout.split()
        return "HDF5 %s (h5py %s)" % (v[0], v[1]) if len(v) == 2 else "? " + out.stderr.strip()[-200:]
    except (OSError, subprocess.SubprocessError) as e:
        return "? %s" % e


def run_one(runner, path, timeout, mem_mb):
    if runner["kind"] == "h5py":
        argv = [runner["python"], "-c", H5PY_VISITOR, path]
    else:
        argv = [a.replace("{}", path) for a in runner["argv"]]
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=child_env(), start_new_session=True,
                             preexec_fn=make_preexec(mem_mb))
    except OSError as e:
        return "other", None, 0.0, "cannot start: %s" % e
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()
        return "hang", None, time.monotonic() - t0, "timeout after %gs" % timeout
    dt = time.monotonic() - t0
    text = (err or b"").decode("utf-8", "replace").strip() or (out or b"").decode("utf-8", "replace").strip()
    frames = FRAME.findall(text) if "Fatal Python error" in text else []
    if frames:   # faulthandler's stack, innermost first: keep the top frames
        msg = "at " + " < ".join("%s:%s %s" % (os.path.basename(f), ln, fn) for f, ln, fn in frames[:3])
    else:
        msg = " ".join(text.split())[-300:]
    if rc < 0 or rc >= 128:
        sig = -rc if rc < 0 else rc - 128
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "signal %d" % sig
        return "crash", rc, dt, "%s %s" % (name, msg)
    if rc == 0:
        return "ok", rc, dt, msg
    if runner["kind"] == "h5py":
        return ("error" if rc in (1, 2) else "other"), rc, dt, msg
    if rc == 2 and (out or err):
        return "error", rc, dt, msg
    return "other", rc, dt, msg


def mutate(data, rng, head, head_fraction):
    size = len(data)
    if rng.random() < head_fraction:
        off = rng.randrange(min(head, size))
    else:
        off = rng.randrange(size)
    old = data[off]
    if rng.random() < 0.5:
        new = old ^ (1 << rng.randrange(8))
        how = "bitflip"
    else:
        new = old ^ rng.randrange(1, 256)   # any different value
        how = "random"
    out = bytearray(data)
    out[off] = new
    return bytes(out), off, old, new, how


def write_generated_seed(python, dest):
    tmp = dest + ".tmp"
    r = subprocess.run([python, "-c", SEED_WRITER, tmp], capture_output=True, text=True,
                       timeout=120, env=child_env())
    if r.returncode != 0:
        sys.exit("hdf5-survey: writing the generated seed with %s failed:\n%s" % (python, r.stderr))
    os.replace(tmp, dest)


def expand_replay(items):
    files = []
    for it in items:
        if it.startswith("@"):
            with open(it[1:]) as fh:
                files += [ln.strip() for ln in fh if ln.strip()]
        elif os.path.isdir(it):
            files += sorted(glob.glob(os.path.join(it, "*.h5")))
        else:
            files.append(it)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring (head of this file) for details.")
    ap.add_argument("paths", nargs="*", help="seed files (or, with --replay, files/dirs/@lists to run as is)")
    ap.add_argument("-n", "--count", type=int, default=1500, help="number of mutants (default 1500)")
    ap.add_argument("--seed", type=int, default=1, help="RNG seed (default 1)")
    ap.add_argument("--runner", action="append", default=[], help="h5py:PYTHON or cmd:'COMMAND {}' (repeatable)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per run before it counts as a hang (default 10)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel children, 1 or 2 (default 2)")
    ap.add_argument("--keep", metavar="DIR", help="write (and keep) mutants, seeds and results here")
    ap.add_argument("--head", type=int, default=4096, help="size of the favoured region at the start of the file (default 4096)")
    ap.add_argument("--head-fraction", type=float, default=0.8, help="share of mutations inside --head (default 0.8)")
    ap.add_argument("--mem-limit-mb", type=int, default=4096, help="address-space limit per child, 0 = none (default 4096)")
    ap.add_argument("--no-generated-seed", action="store_true", help="do not add the generated many-attributes seed")
    ap.add_argument("--seed-writer", metavar="PYTHON", help="interpreter (with h5py) writing the generated seed")
    ap.add_argument("--replay", action="store_true", help="run the given files as they are; no mutation")
    ap.add_argument("--list-limit", type=int, default=50, help="crash/hang/other files listed per runner (default 50)")
    args = ap.parse_args()

    try:
        runners = [parse_runner(s) for s in args.runner]
    except ValueError as e:
        ap.error(str(e))
    if not runners:
        ap.error("give at least one --runner")
    if not 1 <= args.jobs <= 2:
        ap.error("--jobs must be 1 or 2")

    tmpdir = None
    if args.keep:
        outdir = os.path.abspath(args.keep)
        os.makedirs(outdir, exist_ok=True)
    else:
        outdir = tmpdir = tempfile.mkdtemp(prefix="hdf5-survey.")

    try:
        if args.replay:
            files = [os.path.abspath(f) for f in expand_replay(args.paths)]
            if not files:
                ap.error("--replay needs files")
            missing = [f for f in files if not os.path.isfile(f)]
            if missing:
                ap.error("no such file: %s" % missing[0])
            print("replaying %d file(s)" % len(files))
        else:
            files = generate(args, runners, outdir)
        return survey(args, runners, files, outdir, keep=bool(args.keep))
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)


def generate(args, runners, outdir):
    seeddir = os.path.join(outdir, "seeds")
    os.makedirs(seeddir, exist_ok=True)
    seeds = list(args.paths) or sorted(glob.glob(os.path.join(ROOT, "fuzz/corpus/hdf5/*.h5")))
    local = []
    for s in seeds:
        dest = os.path.join(seeddir, os.path.basename(s))
        if os.path.abspath(s) != os.path.abspath(dest):
            shutil.copyfile(s, dest)
        local.append(dest)
    if not args.no_generated_seed:
        gen = os.path.join(seeddir, GENERATED)
        if os.path.exists(gen):
            print("reusing generated seed %s" % gen)
        else:
            writer = args.seed_writer or next((r["python"] for r in runners if r["kind"] == "h5py"), None)
            if writer is None:
                sys.exit("hdf5-survey: the generated seed needs --seed-writer PYTHON (an interpreter with h5py) "
                         "or an h5py: runner; or pass --no-generated-seed")
            write_generated_seed(writer, gen)
            print("wrote generated seed %s with %s" % (gen, writer))
        if gen not in local:
            local.append(gen)
    # dedupe by name (a seed given explicitly and already in DIR/seeds)
    local = sorted(dict.fromkeys(local), key=lambda p: os.path.basename(p))
    blobs = []
    for p in local:
        with open(p, "rb") as fh:
            b = fh.read()
        if not b:
            sys.exit("hdf5-survey: empty seed %s" % p)
        blobs.append((os.path.basename(p), b))
        print("seed %-28s %7d bytes  sha256 %s" % (os.path.basename(p), len(b), hashlib.sha256(b).hexdigest()[:16]))

    mutdir = os.path.join(outdir, "mutants")
    if os.path.isdir(mutdir):
        for old in glob.glob(os.path.join(mutdir, "m*.h5")):
            os.remove(old)
    os.makedirs(mutdir, exist_ok=True)
    files = []
    with open(os.path.join(outdir, "manifest.tsv"), "w") as man:
        man.write("# seed=%d count=%d head=%d head_fraction=%g\nfile\tseed_file\toffset\told\tnew\thow\n"
                  % (args.seed, args.count, args.head, args.head_fraction))
        for i in range(args.count):
            rng = random.Random("%d:%d" % (args.seed, i))
            name, data = blobs[i % len(blobs)]
            mut, off, old, new, how = mutate(data, rng, args.head, args.head_fraction)
            fn = os.path.join(mutdir, "m%05d-%s-o%d.h5" % (i, os.path.splitext(name)[0], off))
            with open(fn, "wb") as fh:
                fh.write(mut)
            man.write("%s\t%s\t%d\t0x%02x\t0x%02x\t%s\n" % (os.path.basename(fn), name, off, old, new, how))
            files.append(fn)
    print("wrote %d mutants to %s (seed %d)" % (len(files), mutdir, args.seed))
    return files


def survey(args, runners, files, outdir, keep):
    summary = []
    for k, runner in enumerate(runners, 1):
        version = hdf5_version(runner)
        print("\n[runner %d] %s  %s  (%d files, %d jobs, timeout %gs)"
              % (k, runner["spec"], version, len(files), args.jobs, args.timeout), flush=True)
        counts = dict.fromkeys(CLASSES, 0)
        results = [None] * len(files)
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futs = {pool.submit(run_one, runner, f, args.timeout, args.mem_limit_mb): i
                    for i, f in enumerate(files)}
            done = 0
            for fut in concurrent.futures.as_completed(futs):
                i = futs[fut]
                results[i] = fut.result()
                counts[results[i][0]] += 1
                done += 1
                if results[i][0] in ("crash", "hang"):
                    print("  %-5s %s  %s" % (results[i][0], files[i], results[i][3][:160]), flush=True)
                if done % 250 == 0:
                    print("  .. %d/%d  %s  %.0fs" % (done, len(files),
                          " ".join("%s=%d" % (c, counts[c]) for c in CLASSES), time.monotonic() - t0), flush=True)
        wall = time.monotonic() - t0
        summary.append((k, runner, version, counts, wall, results))
        if keep:
            with open(os.path.join(outdir, "results-%d.tsv" % k), "w") as fh:
                fh.write("# runner %s  %s\nfile\tclass\trc\tseconds\tmessage\n" % (runner["spec"], version))
                for f, (cls, rc, dt, msg) in zip(files, results):
                    fh.write("%s\t%s\t%s\t%.2f\t%s\n" % (f, cls, "" if rc is None else rc, dt,
                                                         msg.replace("\t", " ")))
            for cls in ("crash", "hang"):
                with open(os.path.join(outdir, "%s-%d.txt" % (cls, k)), "w") as fh:
                    for f, r in zip(files, results):
                        if r[0] == cls:
                            fh.write(f + "\n")

    print("\n%-3s %-44s %-26s %6s %6s %6s %6s %6s %6s %8s" % ("#", "runner", "library", *CLASSES, "total", "wall s"))
    for k, runner, version, counts, wall, _ in summary:
        print("%-3d %-44s %-26s %6d %6d %6d %6d %6d %6d %8.1f" % (k, runner["spec"][:44], version[:26],
              *(counts[c] for c in CLASSES), len(files), wall))
    bad = False
    for k, runner, version, counts, wall, results in summary:
        for cls in ("crash", "hang", "other"):
            hits = [(f, r) for f, r in zip(files, results) if r[0] == cls]
            if not hits:
                continue
            bad |= cls != "other"
            print("\n[runner %d] %s: %d" % (k, cls, len(hits)))
            for f, r in hits[:args.list_limit]:
                print("  %s  rc=%s  %s" % (f, r[1], r[3][:200]))
            if len(hits) > args.list_limit:
                print("  ... %d more%s" % (len(hits) - args.list_limit,
                      " (see %s)" % os.path.join(outdir, "%s-%d.txt" % (cls, k)) if keep and cls != "other" else ""))
    if keep:
        print("\nmutants, manifest and results kept in %s" % outdir)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
