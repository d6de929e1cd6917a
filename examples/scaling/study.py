#!/usr/bin/python3
"""Scaling study of `plexus train`: one run per rank count P and grid X×Y×Z = P, then one CSV
and three plots of where the epoch goes, how the measured bytes compare with `plexus plan`'s
model, and the speed-up over P.

    examples/scaling/study.py --rmat-scale 15 --ranks 1,2,4,8 --grids all --epochs 5 --out study
    examples/scaling/study.py --data g.h5 --grids best --launcher srun -- --layers 3 --dropout 0.5

Writes DIR/runs/P-GRID.jsonl (train --metrics), DIR/plans/P.json (plan --json), DIR/study.csv,
DIR/epoch_split.png, DIR/bytes_vs_model.png, DIR/speedup.png and DIR/report.txt (plexus report
of the fastest grid of every P, also printed). See examples/scaling/README.md.
"""
import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

import study_data
import study_plots

ROOT = Path(__file__).resolve().parents[2]
# Train options `plexus plan` takes as well: its byte model follows them.
PLAN_SHARES = {"--layers": True, "--hidden": True, "--dropout": True, "--shard-adj": False}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Options after `--` go to every `plexus train` run.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--data", type=Path, help="dataset (Plexus format v1)")
    src.add_argument("--rmat-scale", type=int, help="generate an R-MAT graph of 2^S nodes (default 14)")
    p.add_argument("--edge-factor", type=int, default=16, help="R-MAT edges per node (default 16)")
    p.add_argument("--feature-width", type=int, default=128, help="R-MAT feature width (default 128)")
    p.add_argument("--ranks", default="1,2,3,4,5,6,7,8", help="rank counts P, comma-separated (default 1..8)")
    p.add_argument("--grids", default="all",
                   help="all: every X×Y×Z = P; best: the one plexus plan ranks first; N: its first N (default all)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--threads", type=int, default=1, help="CPU threads per rank (default 1)")
    p.add_argument("--launcher", choices=["auto", "mpirun", "srun"], default="auto",
                   help="auto: srun inside a Slurm allocation (SLURM_JOB_ID set), else mpirun")
    p.add_argument("--launcher-args", default="", help="more arguments for the launcher, e.g. '--ntasks-per-node 4'")
    p.add_argument("--plexus", type=Path, default=ROOT / "build" / "plexus", help="the plexus executable (default build/plexus)")
    p.add_argument("--out", type=Path, default=Path("scaling-study"), help="output directory (default scaling-study)")
    p.add_argument("--collect-only", action="store_true", help="no runs: collect and plot DIR/runs as they are")
    p.add_argument("--dpi", type=int, default=80, help="resolution of the PNGs (default 80)")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.train_extra = extra
    args.ranks = sorted({int(r) for r in args.ranks.split(",")})
    if args.ranks[0] < 1:
        p.error("--ranks: rank counts are >= 1")
    if args.grids not in ("all", "best") and not (args.grids.isdigit() and int(args.grids) > 0):
        p.error("--grids: all, best or a positive number")
    if args.launcher == "auto":
        args.launcher = "srun" if os.environ.get("SLURM_JOB_ID") else "mpirun"
    return args


def factorizations(p):
    """Every grid X×Y×Z with X·Y·Z = p, as 'XxYxZ'."""
    return [f"{x}x{y}x{p // (x * y)}" for x in range(1, p + 1) if p % x == 0
            for y in range(1, p // x + 1) if (p // x) % y == 0]


def plan_options(args):
    """The train options that shape plan's model: --hidden and those among the extra options."""
    opts, extra = ["--hidden", str(args.hidden)], args.train_extra
    for i, word in enumerate(extra):
        if word in PLAN_SHARES:
            opts += [word] + ([extra[i + 1]] if PLAN_SHARES[word] else [])
    return opts


def run(cmd, **kw):
    print("+", shlex.join(map(str, cmd)), flush=True)
    return subprocess.run(list(map(str, cmd)), **kw)


def dataset(args):
    if args.data:
        return args.data
    scale = args.rmat_scale or 14
    path = args.out / f"rmat{scale}_ef{args.edge_factor}_f{args.feature_width}.h5"
    if not path.exists():
        run([args.plexus, "generate", "rmat", "--scale", scale, "--edge-factor", args.edge_factor,
             "--feature-width", args.feature_width, "--classes", 16, "-o", path], check=True)
    return path


def launch(args, p):
    """The launcher's words for p ranks; one rank runs directly (no MPI start-up to time)."""
    if p == 1:
        return []
    return [args.launcher, "-n", p] + shlex.split(args.launcher_args)


def chosen_grids(args, p, plan):
    if args.grids == "all":
        return factorizations(p)
    return [g["grid"] for g in plan["grids"][:1 if args.grids == "best" else int(args.grids)]]


def main():
    args = parse_args()
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    (args.out / "plans").mkdir(exist_ok=True)
    env = dict(os.environ)
    if max(args.ranks) > (os.cpu_count() or 1):
        env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"  # Open MPI refuses more ranks than cores otherwise
    failed = []
    if not args.collect_only:
        data = dataset(args)
        for p in args.ranks:
            plan_file = args.out / "plans" / f"{p}.json"
            with open(plan_file, "w") as f:
                run([args.plexus, "plan", "--data", data, "--ranks", p, "--json"] + plan_options(args), stdout=f, check=True)
            for grid in chosen_grids(args, p, study_data.load_json(plan_file)):
                metrics = args.out / "runs" / f"{p}-{grid}.jsonl"
                cmd = launch(args, p) + [args.plexus, "train", "--data", data, "--grid", grid, "--epochs", args.epochs,
                                         "--hidden", args.hidden, "--threads", args.threads, "--quiet",
                                         "--metrics", metrics] + args.train_extra
                if run(cmd, env=env, stdout=subprocess.DEVNULL).returncode != 0:
                    failed.append(f"{p}-{grid}")
    rows = study_data.collect(args.plexus, args.out)
    study_data.write_csv(rows, args.out / "study.csv")
    study_plots.draw_all(rows, args.out, args.dpi)
    report = study_data.report_of_best(args.plexus, rows, args.out)
    (args.out / "report.txt").write_text(report)
    print(report, end="")
    print(study_data.model_agreement(rows))
    print(f"wrote {args.out}/study.csv, {', '.join(study_plots.NAMES)} and report.txt in {args.out}")
    if failed:
        print(f"failed runs: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
