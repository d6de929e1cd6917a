"""The figures of a scaling study: per run (DIR/runs/P-GRID.jsonl) what `plexus report --json`
reads from its metrics, beside what `plexus plan --json` (DIR/plans/P.json) predicts."""
import csv
import json
import subprocess
from pathlib import Path

AXES = ("x", "y", "z")
COLUMNS = (["P", "grid", "status", "epochs", "median_epoch_seconds", "median_compute_seconds", "median_comm_seconds"]
           + [f"comm_seconds_{a}" for a in AXES]
           + ["bytes_total"] + [f"bytes_{a}" for a in AXES]
           + ["model_bytes_total"] + [f"model_bytes_{a}" for a in AXES]
           + ["test_acc", "peak_rss_bytes", "peak_tensor_bytes", "file"])


def load_json(path):
    with open(path) as f:
        return json.load(f)


def report_json(plexus, files):
    out = subprocess.run([str(plexus), "report", "--json"] + [str(f) for f in files],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_files(out):
    """DIR/runs/P-GRID.jsonl by P, then X, Y, Z."""
    def key(path):
        p, grid = path.stem.split("-", 1)
        return (int(p), [int(n) for n in grid.split("x")])
    return sorted(Path(out, "runs").glob("*-*x*x*.jsonl"), key=key)


def collect(plexus, out):
    """One row (COLUMNS) per run."""
    files = run_files(out)
    if not files:
        raise SystemExit(f"no runs in {out}/runs")
    rows = []
    for path, rec in zip(files, report_json(plexus, files)):
        p, grid = path.stem.split("-", 1)
        plan = {g["grid"]: g for g in load_json(Path(out, "plans", f"{p}.json"))["grids"]}[grid]
        model = plan["bytes_steady"]
        rows.append({"P": int(p), "grid": grid, "status": rec["status"], "epochs": rec.get("steps_done"),
                     "median_epoch_seconds": rec.get("median_step_seconds"),
                     "median_compute_seconds": rec.get("median_compute_seconds"),
                     "median_comm_seconds": rec.get("median_comm_seconds_total"),
                     **{f"comm_seconds_{a}": rec.get(f"median_comm_seconds_{a}") for a in AXES},
                     "bytes_total": rec.get("comm_bytes_total"),
                     **{f"bytes_{a}": rec.get(f"comm_bytes_{a}") for a in AXES},
                     "model_bytes_total": model["total"],
                     **{f"model_bytes_{a}": model[a] for a in AXES},
                     "test_acc": rec.get("test_acc"), "peak_rss_bytes": rec.get("peak_rss_bytes"),
                     "peak_tensor_bytes": rec.get("peak_tensor_bytes"), "file": str(path.relative_to(out))})
    return rows


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if r[k] is None else r[k] for k in COLUMNS})


def best_per_p(rows):
    """The fastest run (median epoch) of every P, by P."""
    best = {}
    for r in rows:
        t = r["median_epoch_seconds"]
        if t is not None and (r["P"] not in best or t < best[r["P"]]["median_epoch_seconds"]):
            best[r["P"]] = r
    return [best[p] for p in sorted(best)]


def report_of_best(plexus, rows, out):
    files = [Path(out, r["file"]) for r in best_per_p(rows)]
    return subprocess.run([str(plexus), "report"] + files, check=True, capture_output=True, text=True).stdout


def bytes_match(r):
    """Measured bytes per axis equal to the model's (both are counts; 1e-9 for the float sums)."""
    return all(r[f"bytes_{a}"] is not None and abs(r[f"bytes_{a}"] - r[f"model_bytes_{a}"]) <= 1e-9 * max(1.0, r[f"model_bytes_{a}"])
               for a in AXES)


def model_agreement(rows):
    off = [f"{r['P']}-{r['grid']}" for r in rows if not bytes_match(r)]
    line = f"measured bytes per axis equal plexus plan's model in {len(rows) - len(off)} of {len(rows)} runs"
    return line + (f" (not: {', '.join(off)})" if off else "")
