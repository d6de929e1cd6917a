"""The plots of a scaling study, from the rows of study_data.collect."""
import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

from study_data import AXES, best_per_p  # noqa: E402

NAMES = ("epoch_split.png", "bytes_vs_model.png", "speedup.png")
AXIS_COLORS = {"x": "tab:blue", "y": "tab:orange", "z": "tab:green"}


def run_labels(rows):
    return [f"{r['P']}: {r['grid']}" for r in rows]


def wide_figure(rows, title, ylabel):
    fig, ax = plt.subplots(figsize=(max(6.0, 0.32 * len(rows) + 2), 4.5))
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xticks(range(len(rows)), run_labels(rows), rotation=90, fontsize=8)
    # A line between rank counts, so the grids of one P read as a group.
    for i in range(1, len(rows)):
        if rows[i]["P"] != rows[i - 1]["P"]:
            ax.axvline(i - 0.5, color="0.8", linewidth=0.8)
    return fig, ax


def save(fig, path, dpi):
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def epoch_split(rows, path, dpi):
    """(a) Median epoch as stacked compute + communication per axis + the rest."""
    fig, ax = wide_figure(rows, "Where the epoch goes (medians, epochs 2..)", "seconds per epoch")
    xs = range(len(rows))
    bottom = [0.0] * len(rows)

    def stack(values, label, color):
        values = [v or 0.0 for v in values]
        ax.bar(xs, values, bottom=bottom, label=label, color=color, width=0.8)
        for i, v in enumerate(values):
            bottom[i] += v

    stack([r["median_compute_seconds"] for r in rows], "compute", "0.55")
    per_axis = all(r[f"comm_seconds_{a}"] is not None for r in rows for a in AXES)
    if per_axis:  # the newer metrics: per axis, each the largest over ranks
        for a in AXES:
            stack([r[f"comm_seconds_{a}"] for r in rows], f"comm {a}", AXIS_COLORS[a])
    else:  # the older metrics: one communication figure
        stack([r["median_comm_seconds"] for r in rows], "comm", "tab:red")
    epoch = [r["median_epoch_seconds"] or 0.0 for r in rows]
    rest = [max(0.0, e - b) for e, b in zip(epoch, list(bottom))]
    if any(rest):  # older metrics; the newer define compute as the epoch less communication
        stack(rest, "other", "0.85")
    # Compute and communication are each the largest over ranks, so their sum may pass the epoch.
    ax.scatter(xs, epoch, marker="_", s=80, color="black", label="epoch", zorder=3)
    ax.set_ylim(0, 1.15 * max(bottom + epoch))  # room for the legend
    ax.legend(fontsize=8, ncol=6, loc="upper left")
    save(fig, path, dpi)


def bytes_vs_model(rows, path, dpi):
    """(b) Bytes per epoch and axis (summed over ranks): measured bars, the model as black ticks."""
    fig, ax = wide_figure(rows, "Bytes per epoch: measured (bars), plexus plan (ticks)", "MB per epoch")
    width = 0.27
    for k, a in enumerate(AXES):
        xs = [i + (k - 1) * width for i in range(len(rows))]
        ax.bar(xs, [(r[f"bytes_{a}"] or 0) / 1e6 for r in rows], width=width, color=AXIS_COLORS[a], label=f"axis {a}")
        ax.scatter(xs, [r[f"model_bytes_{a}"] / 1e6 for r in rows], marker="_", s=60, color="black",
                   label="model" if k == 0 else None, zorder=3)
    ax.legend(fontsize=8, ncol=4, loc="upper left")
    save(fig, path, dpi)


def speedup(rows, path, dpi):
    """(c) Speed-up and parallel efficiency of the fastest grid of every P over the smallest P."""
    best = best_per_p(rows)
    p0, t0 = best[0]["P"], best[0]["median_epoch_seconds"]
    ps = [r["P"] for r in best]
    gain = [t0 / r["median_epoch_seconds"] for r in best]
    efficiency = [g * p0 / p for g, p in zip(gain, ps)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    left.plot(ps, gain, "o-", label="measured")
    left.plot(ps, [p / p0 for p in ps], "--", color="0.6", label="ideal")
    for p, g, r in zip(ps, gain, best):
        left.annotate(r["grid"], (p, g), fontsize=7, textcoords="offset points", xytext=(3, 3))
    for ax in (left, right):
        ax.set_xticks(ps)
    left.set(title=f"Speed-up over P={p0} (fastest grid per P)", xlabel="ranks P", ylabel="speed-up")
    left.legend(fontsize=8)
    right.plot(ps, efficiency, "o-")
    right.axhline(1.0, linestyle="--", color="0.6")
    right.set(title="Parallel efficiency", xlabel="ranks P", ylabel="speed-up × P0 / P", ylim=(0, 1.1 * max(1.0, *efficiency)))
    save(fig, path, dpi)


def draw_all(rows, out, dpi):
    for name, draw in zip(NAMES, (epoch_split, bytes_vs_model, speedup)):
        draw(rows, out / name, dpi)
