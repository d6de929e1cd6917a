#!/usr/bin/env python3
"""Mutation testing for Plexus: does the suite notice a plausible one-line bug?

Each mutant in the list (scripts/mutants.txt) names a file, a function and a text inside that
function, and what to put there instead. The tool copies the working tree to a scratch folder
(never touching the tree it was started from), builds it once, runs the whole suite once to see
it pass, then for each mutant in turn: applies it to the scratch copy, rebuilds, runs the suite
until the first failing test, and restores the file. A mutant is

  killed     some test failed (or a stage ran past its time limit: a hang is noticed too)
  SURVIVED   the whole suite passed with the bug in place
  n/a        its function or text is no longer in the file (the code moved: update the list)
  no build   the mutated tree does not compile (not counted in the score)

and the score is killed / (killed + survived). Mutants are found by function name and text,
not by line number, so they outlive edits elsewhere in the file; whitespace runs in the text
match any whitespace.

The suite runs in stages, each stopping at its first failure: the tests a mutant names as
likely killers (`tests:`, a ctest -R regex), then the unit label, then everything else. The
order only makes killed mutants cheap; a survivor has passed every test.

    scripts/mutate.sh [--list FILE] [--only ID[,ID...]] [--area AREA] [--check] [--hint-only]
                      [--scratch DIR] [--jobs N] [--no-baseline] [--results FILE] [--resume FILE]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------------------------
# The list
# ---------------------------------------------------------------------------------------------
@dataclass
class Mutant:
    id: str
    line: int
    fields: dict = field(default_factory=dict)

    def get(self, key, default=None):
        return self.fields.get(key, default)


def parse_list(path):
    """Blocks `[id]` followed by `key: value` lines; `#` starts a comment line."""
    mutants, cur = [], None
    required = ("area", "file", "function", "find", "replace", "why")
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]\s*", line)
            if m:
                cur = Mutant(m.group(1), n)
                mutants.append(cur)
                continue
            m = re.fullmatch(r"([a-z]+):\s?(.*)", line)
            if not m or cur is None:
                sys.exit(f"mutate: {path}:{n}: expected `[id]` or `key: value`, got {line!r}")
            cur.fields[m.group(1)] = m.group(2)
    ids = set()
    for mu in mutants:
        missing = [k for k in required if k not in mu.fields]
        if missing:
            sys.exit(f"mutate: {path}:{mu.line}: mutant {mu.id} lacks {', '.join(missing)}")
        if mu.id in ids:
            sys.exit(f"mutate: {path}:{mu.line}: mutant id {mu.id} appears twice")
        if mu.fields["find"] == mu.fields["replace"]:
            sys.exit(f"mutate: {path}:{mu.line}: mutant {mu.id} replaces its text by itself")
        ids.add(mu.id)
    return mutants


# ---------------------------------------------------------------------------------------------
# Finding a function in C++ source
# ---------------------------------------------------------------------------------------------
def code_mask(text):
    """The text with comments and the insides of string and char literals blanked (same
    length), so that braces and parentheses can be matched on it."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in text[i:j]]
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out[i + 2:j - 1] = [ch if ch == "\n" else " " for ch in text[i + 2:j - 1]]
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a char literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out[i + 1:j] = " " * (j - i - 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def match_close(mask, i):
    """Index just past the bracket closing the one at mask[i]."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = [pairs[mask[i]]]
    j = i + 1
    while j < len(mask) and stack:
        ch = mask[j]
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")}]":
            if ch != stack[-1]:
                return -1
            stack.pop()
        j += 1
    return j if not stack else -1


def function_spans(text, name):
    """(start, end) of every definition of `name` (`f`, `Class::f`, `ns::Class::f`): from the
    name to the end of its body. Calls and declarations are skipped."""
    mask = code_mask(text)
    spans = []
    for m in re.finditer(r"(?<![\w.>:~])" + re.escape(name).replace(r"::", r"\s*::\s*") + r"\s*\(", mask):
        open_paren = m.end() - 1
        j = match_close(mask, open_paren)
        if j < 0:
            continue
        # After the parameter list: qualifiers, a trailing return type, a constructor's
        # initialiser list; then the body. A `;` or a stray closing bracket first means this
        # was a declaration or a call.
        body = None
        while j < len(mask):
            ch = mask[j]
            if ch in ";)]}=":
                break
            if ch == "(":
                j = match_close(mask, j)
                if j < 0:
                    break
                continue
            if ch == "{":
                end = match_close(mask, j)
                if end < 0:
                    break
                k = end
                while k < len(mask) and mask[k].isspace():
                    k += 1
                if k < len(mask) and mask[k] in ",{":  # an initialiser `x_{...},` or `x_{...} {`
                    j = k if mask[k] == "{" else k + 1
                    continue
                body = end
                break
            j += 1
        if body is not None:
            spans.append((m.start(), body))
    return spans


def find_pattern(find):
    """A regex for the mutant's text: whitespace runs match any whitespace."""
    parts = [re.escape(p) for p in re.split(r"\s+", find.strip())]
    return re.compile(r"\s+".join(parts) if all(parts) else re.escape(find))


def mutated_text(text, mu):
    """(new text, None) or (None, why not applicable)."""
    spans = function_spans(text, mu.get("function"))
    if not spans:
        return None, f"function {mu.get('function')} not found"
    pat = find_pattern(mu.get("find"))
    hits = [(h.start(), h.end()) for s, e in spans for h in pat.finditer(text, s, e)]
    if not hits:
        return None, f"text not found in {mu.get('function')}"
    if len(hits) > 1:
        return None, f"text found {len(hits)} times in {mu.get('function')} (make it unique)"
    a, b = hits[0]
    return text[:a] + mu.get("replace") + text[b:], None


# ---------------------------------------------------------------------------------------------
# The scratch copy, its build and the suite
# ---------------------------------------------------------------------------------------------
def sh(cmd, log, timeout=None, cwd=None):
    """Run a command, appending its output to `log`; (exit code or 'timeout', seconds)."""
    t0 = time.time()
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        # A session of its own, so that a stage past its limit (or an interrupted run) ends with
        # everything it started: ctest's tests and their mpirun ranks too.
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = "timeout"
        except BaseException:
            os.killpg(p.pid, signal.SIGKILL)
            raise
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # whatever is left of the group
            except ProcessLookupError:
                pass
            p.wait()
    return rc, time.time() - t0


def tree_files(src):
    """The working tree's files: tracked and untracked, without what .gitignore ignores."""
    p = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True)
    if p.returncode != 0:
        sys.exit(f"mutate: {src} is not a git work tree: {p.stderr.decode().strip()}")
    return sorted({f for f in p.stdout.decode().split("\0") if f and os.path.isfile(os.path.join(src, f))})


def sync_tree(src, dst):
    """Copy the working tree to dst and remove what src no longer has. A file whose content
    is already there is left alone (so the scratch build stays incremental); any other gets a
    new modification time, so that make rebuilds what depends on it even when the source's own
    time is older than the scratch build's objects."""
    files = tree_files(src)
    for rel in files:
        a, b = os.path.join(src, rel), os.path.join(dst, rel)
        if os.path.exists(b) and os.path.getsize(a) == os.path.getsize(b):
            with open(a, "rb") as fa, open(b, "rb") as fb:
                if fa.read() == fb.read():
                    continue
        os.makedirs(os.path.dirname(b), exist_ok=True)
        shutil.copyfile(a, b)
        shutil.copymode(a, b)
    keep = set(files)
    for dirpath, _, names in os.walk(dst):
        for name in names:
            rel = os.path.relpath(os.path.join(dirpath, name), dst)
            if rel not in keep:
                os.remove(os.path.join(dst, rel))


def build(src, bdir, jobs, log, targets=None):
    """Builds everything, or only `targets` (executables' names) when given."""
    if not os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
        rc, _ = sh(["cmake", "-S", src, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release", "-DPLEXUS_CUDA=OFF"], log)
        if rc != 0:
            return False
    rc, _ = sh(["cmake", "--build", bdir, "-j", str(jobs)] + (["--target"] + sorted(targets) if targets else []), log)
    return rc == 0


def hint_targets(bdir, mu):
    """The executables the mutant's `tests:` run (a set of target names): the programs of the build
    each test's command names — run directly, under mpiexec, or given to a test script (the CLI
    scripts run the `plexus` they are given; they reach no other program of the build). Only
    those need rebuilding before the hint stage, and most mutants end there. None (build
    everything) when a test names no program of the build, or the tests cannot be listed."""
    if mu is None or not mu.get("tests"):
        return None
    p = subprocess.run(["ctest", "--test-dir", bdir, "-R", mu.get("tests"), "--show-only=json-v1"],
                       capture_output=True, text=True)
    try:
        tests = json.loads(p.stdout)["tests"]
    except (ValueError, KeyError):
        return None
    root = os.path.realpath(bdir) + os.sep
    targets = set()
    for t in tests:
        cmd = t.get("command") or []
        if not cmd:
            return None
        programs = [a for a in cmd if os.path.realpath(a).startswith(root) and os.access(a, os.X_OK)]
        if not programs:
            return None
        targets.update(os.path.basename(a) for a in programs)
    return targets or None


def failed_tests(bdir):
    path = os.path.join(bdir, "Testing", "Temporary", "LastTestsFailed.log")
    try:
        with open(path) as f:
            # "N:Name  # GetParam() = ..." -> "Name"
            return [line.strip().split(":", 1)[-1].split("  #")[0].strip() for line in f if line.strip()]
    except OSError:
        return []


def run_stage(bdir, selector, jobs, timeout, log):
    """One ctest stage; ('pass'|'fail'|'timeout'|'empty', first failing test, seconds)."""
    stale = os.path.join(bdir, "Testing", "Temporary", "LastTestsFailed.log")
    if os.path.exists(stale):
        os.remove(stale)
    env_cmd = ["ctest", "--test-dir", bdir, "-j", str(jobs), "--stop-on-failure", "--no-tests=ignore"] + selector
    rc, secs = sh(env_cmd, log, timeout=timeout)
    if rc == "timeout":
        return "timeout", "(stage time limit)", secs
    if rc == 0:
        return "pass", "", secs
    failed = failed_tests(bdir)
    return "fail", failed[0] if failed else "(ctest exit %s)" % rc, secs


def stages(mu, hint_only=False):
    # The hint's unit tests before its command-line ones: ctest runs the longest first, and a
    # journey of minutes should not stand before the unit test that kills in seconds.
    out = []
    if mu is not None and mu.get("tests"):
        out.append(("hint unit", ["-R", mu.get("tests"), "-L", "unit"]))
        out.append(("hint", ["-R", mu.get("tests"), "-LE", "unit"]))
    if not hint_only:
        out.append(("unit", ["-L", "unit"]))
        out.append(("rest", ["-LE", "unit"]))
    return out


def run_suite(bdir, mu, jobs, limits, log, hint_only=False, rebuild=None):
    """('killed'|'survived', killer, seconds): stages in order until one fails; `rebuild` (when
    only the hint's programs were built) builds the rest before the first stage after the hint."""
    total = 0.0
    for name, sel in stages(mu, hint_only):
        if not name.startswith("hint") and rebuild is not None:
            if not rebuild():
                return "no build", "the rest of the build does not compile", total
            rebuild = None
        status, killer, secs = run_stage(bdir, sel, jobs, limits.get(name, limits["rest"]), log)
        total += secs
        if status == "fail":
            return "killed", killer, total
        if status == "timeout":
            return "killed", f"{name} stage ran past {limits.get(name, limits['rest']):.0f} s", total
    return "survived", "", total


# ---------------------------------------------------------------------------------------------
# A whole list in several sittings
# ---------------------------------------------------------------------------------------------
RESUME_HEADER = "id\tverdict\tkilled_by\tseconds\tcommit\tmutant\n"


def one_cell(text):
    return str(text).replace("\t", " ").replace("\n", " ")


def mutant_key(mu):
    """What the mutant plants: a row run for another text is not this mutant's row."""
    return one_cell("|".join(mu.get(k) for k in ("file", "function", "find", "replace")))


def tree_commit(root):
    p = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (p.stdout.strip() or "unknown") + ("+changes" if dirty else "")


def read_resume(path, mutants):
    """{id: (verdict, killer, seconds, commit)} for FILE's rows whose mutant is still the list's."""
    keys = {mu.id: mutant_key(mu) for mu in mutants}
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\n").split("\t")
            if n == 1 and line == RESUME_HEADER:
                continue
            if len(cols) != 6:
                sys.exit(f"mutate: {path}:{n}: not a row of a --resume file")
            mid, verdict, killer, secs, commit, key = cols
            if keys.get(mid) == key and verdict in ("killed", "survived", "n/a", "no build"):
                out[mid] = (verdict, killer, float(secs), commit)
    return out


def append_resume(path, mu, verdict, killer, secs, commit):
    new = not os.path.exists(path)
    with open(path, "a", encoding="utf-8") as f:
        if new:
            f.write(RESUME_HEADER)
        f.write(f"{mu.id}\t{verdict}\t{one_cell(killer)}\t{secs:.0f}\t{commit}\t{mutant_key(mu)}\n")


# ---------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", default=os.path.join(ROOT, "scripts", "mutants.txt"), help="the mutant list")
    ap.add_argument("--only", help="comma-separated mutant ids to run")
    ap.add_argument("--area", help="run only the mutants of this area")
    ap.add_argument("--check", action="store_true", help="only check that every mutant applies; build nothing")
    ap.add_argument("--scratch", default=os.environ.get("PLEXUS_MUTATE_SCRATCH", "/tmp/plexus-mutate"),
                    help="scratch folder (copy of the tree and its build); reused between runs")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="build and ctest parallelism")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the unmutated suite run (only when the tree is known to pass)")
    ap.add_argument("--results", help="also write the table as tab-separated values to FILE")
    ap.add_argument("--resume", metavar="FILE",
                    help="append each mutant's row to FILE as it ends, and skip the mutants FILE "
                         "already holds: the whole list in several sittings (the table and the "
                         "score cover FILE's rows; each row names the commit it ran on)")
    ap.add_argument("--hint-only", action="store_true",
                    help="run only each mutant's own `tests:` (quick; does a given test catch it?): "
                         "a mutant they miss is reported as survived, though the suite might kill it")
    args = ap.parse_args()

    mutants = parse_list(args.list)
    if args.only:
        want = args.only.split(",")
        unknown = [w for w in want if w not in {m.id for m in mutants}]
        if unknown:
            sys.exit(f"mutate: no mutant {', '.join(unknown)} in {args.list}")
        mutants = [m for m in mutants if m.id in want]
    if args.area:
        mutants = [m for m in mutants if m.get("area") == args.area]

    if args.check:
        bad = 0
        for mu in mutants:
            path = os.path.join(ROOT, mu.get("file"))
            text = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            why = f"file {mu.get('file')} not found" if text is None else mutated_text(text, mu)[1]
            print(f"{mu.id:34} {'ok' if why is None else 'n/a: ' + why}")
            bad += why is not None
        print(f"{len(mutants) - bad} of {len(mutants)} mutants apply")
        return 1 if bad else 0

    done = read_resume(args.resume, mutants) if args.resume else {}
    todo = [mu for mu in mutants if mu.id not in done]
    if done:
        print(f"mutate: {len(done)} of {len(mutants)} mutants already in {args.resume}; running {len(todo)}",
              flush=True)
    commit = tree_commit(ROOT)

    src, bdir = os.path.join(args.scratch, "src"), os.path.join(args.scratch, "build")
    os.makedirs(args.scratch, exist_ok=True)
    log = os.path.join(args.scratch, "mutate.log")
    open(log, "w").close()
    print(f"mutate: {len(mutants)} mutants; scratch copy {src}; log {log}", flush=True)
    sync_tree(ROOT, src)
    t0 = time.time()
    if not build(src, bdir, args.jobs, log):
        sys.exit(f"mutate: the unmutated tree does not build (see {log})")
    print(f"mutate: built the unmutated copy in {time.time() - t0:.0f} s", flush=True)

    # Stage time limits: three times the unmutated stage, at least 10 minutes (a hang is a kill).
    # Without a baseline: the unit label runs in about 90 s on an idle 2-core machine, so 10
    # minutes is a hang (a mutant whose ranks' collectives no longer match waits for ever).
    limits = {"hint": 1800.0, "hint unit": 600.0, "unit": 600.0, "rest": 3600.0}
    if not args.no_baseline:
        for name, sel in stages(None):
            status, killer, secs = run_stage(bdir, sel, args.jobs, limits[name], log)
            if status != "pass":
                sys.exit(f"mutate: the unmutated suite fails ({killer}); fix it first (see {log})")
            limits[name] = max(600.0, 3 * secs)
            print(f"mutate: unmutated {name} tests pass in {secs:.0f} s", flush=True)
        limits["hint"] = limits["hint unit"] = limits["unit"]

    rows = []
    for k, mu in enumerate(todo, 1):
        path = os.path.join(src, mu.get("file"))
        t_start = time.time()
        if not os.path.exists(path):
            verdict, killer = "n/a", f"file {mu.get('file')} not found"
        else:
            original = open(path, encoding="utf-8").read()
            new, why = mutated_text(original, mu)
            if new is None:
                verdict, killer = "n/a", why
            else:
                stat = os.stat(path)
                try:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(new)
                    # The hint's programs first: a killed mutant needs no other relinking. The
                    # programs left stale (built with an earlier mutant, restored since) are
                    # rebuilt before any stage could run them.
                    targets = hint_targets(bdir, mu)
                    if not build(src, bdir, args.jobs, log, targets):
                        verdict, killer = "no build", "does not compile"
                    else:
                        verdict, killer, _ = run_suite(bdir, mu, args.jobs, limits, log, args.hint_only,
                                                       rebuild=None if targets is None else
                                                       (lambda: build(src, bdir, args.jobs, log)))
                finally:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(original)
                    # A new mtime: the next build recompiles the restored file.
                    os.utime(path, (stat.st_atime, time.time()))
        secs = time.time() - t_start
        rows.append((mu, verdict, killer, secs))
        if args.resume:
            append_resume(args.resume, mu, verdict, killer, secs, commit)
        print(f"[{k}/{len(todo)}] {mu.id:34} {verdict:9} {killer}  ({secs:.0f} s)", flush=True)
    build(src, bdir, args.jobs, log)  # leave the scratch build unmutated
    if args.resume:
        done = read_resume(args.resume, mutants)
        rows = [(mu,) + done[mu.id][:3] for mu in mutants if mu.id in done]
        commits = sorted({done[mu.id][3] for mu in mutants if mu.id in done})
        print(f"\nmutate: {len(rows)} of {len(mutants)} mutants in {args.resume}, run on {', '.join(commits)}; "
              f"{sum(r[3] for r in rows) / 60:.0f} minutes of mutants in all")

    print()
    print(f"| mutant | area | where | verdict | killed by / why | s |")
    print(f"|---|---|---|---|---|---|")
    for mu, verdict, killer, secs in rows:
        where = f"{mu.get('file')}: {mu.get('function')}"
        shown = verdict.upper() if verdict == "survived" else verdict
        print(f"| {mu.id} | {mu.get('area')} | {where} | {shown} | {killer or mu.get('why')} | {secs:.0f} |")
    killed = sum(v == "killed" for _, v, _, _ in rows)
    survived = [mu for mu, v, _, _ in rows if v == "survived"]
    na = sum(v in ("n/a", "no build") for _, v, _, _ in rows)
    scored = killed + len(survived)
    score = 100.0 * killed / scored if scored else 0.0
    print()
    print(f"score: {killed}/{scored} killed = {score:.1f} %  ({na} not applicable or not building)")
    for mu in survived:
        print(f"survived: {mu.id}: {mu.get('why')}")
    if args.results:
        with open(args.results, "w") as f:
            f.write("id\tarea\tfile\tfunction\tverdict\tkilled_by\tseconds\n")
            for mu, verdict, killer, secs in rows:
                f.write(f"{mu.id}\t{mu.get('area')}\t{mu.get('file')}\t{mu.get('function')}\t{verdict}\t{killer}\t{secs:.0f}\n")
    return 0 if not survived and not na else 1


if __name__ == "__main__":
    sys.exit(main())
