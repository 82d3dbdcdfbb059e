"""The report's plots (matplotlib, Agg backend): PNG files under `{out}/plots/`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.conformal import inside as covered

PLOTS = "plots"


def _figure():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_pred_vs_true(out: Path, pred, true, conf: ConformalInterval, bounds=None) -> Path:
    """Estimate vs truth with each model's interval (`bounds`: (low, high) as a user gets
    them, `reports.flags.test_bounds`; default `conf`'s plain interval) and the plain band."""
    plt = _figure()
    low, high = conf.interval(pred) if bounds is None else bounds
    inside = covered(low, high, true)
    fig, ax = plt.subplots(figsize=(5.5, 5.2), dpi=110)
    grid = np.linspace(pred.min(), pred.max(), 200)
    band_low, band_high = conf.interval(grid)
    ax.fill_betweenx(100 * grid, 100 * band_low, 100 * band_high, color="tab:blue", alpha=0.12,
                     lw=0, label=f"{100 * conf.level:.0f}% interval band")  # fmt: skip
    for mask, color, label in ((inside, "tab:blue", "inside"), (~inside, "tab:red", "outside")):
        if mask.any():
            ax.errorbar(
                100 * true[mask],
                100 * pred[mask],
                yerr=100 * np.vstack([pred[mask] - low[mask], high[mask] - pred[mask]]),
                fmt="o",
                ms=3.5,
                color=color,
                ecolor=color,
                elinewidth=0.8,
                alpha=0.6,
                label=f"{label} interval ({mask.sum()})",
            )
    lo = 100 * min(true.min(), pred.min(), low.min())
    hi = 100 * max(true.max(), pred.max(), high.max())
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
    cov = inside.mean()
    ax.set(
        xlabel="true accuracy (%)",
        ylabel="estimated accuracy (%)",
        title=f"test models: {100 * cov:.1f}% inside {100 * conf.level:.0f}% intervals",
    )
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, out / PLOTS / "predicted_vs_true.png", _ONE_AXES)


def plot_bands(out: Path, rows: list[dict], level: float) -> Path:
    """Coverage and mean half-width of the test models in each third of the estimate."""
    plt = _figure()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), dpi=110)
    labels = [f"{r['band']}\n{r['from']:.0f}-{r['to']:.0f}%" for r in rows]
    x = np.arange(len(rows))
    axes[0].bar(x, [100 * r["coverage"] for r in rows], color="tab:blue", alpha=0.7)
    axes[0].axhline(100 * level, color="k", ls="--", lw=1, label=f"nominal {100 * level:.0f}%")
    axes[0].set(ylabel="coverage (%)", ylim=(max(0, 100 * level - 30), 100))
    axes[0].legend(fontsize=8, loc="lower right")
    widths = [r["halfwidth"] if np.isfinite(r["halfwidth"]) else np.nan for r in rows]
    axes[1].bar(x, widths, color="tab:orange", alpha=0.7)  # an unbounded width: no bar
    axes[1].set(ylabel="mean half-width (points)")
    for ax in axes:
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_xlabel("third of the estimate")
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle("test models by estimate band: coverage and interval width")
    return _save(fig, out / PLOTS / "bands.png", _TWO_AXES)


def plot_budget(out: Path, rows, n_anchors) -> Path:
    plt = _figure()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=110)
    methods = sorted({str(r["method"]) for r in rows}, key=lambda m: (m != "SparseEval", m))
    for m in methods:
        rs = sorted((r for r in rows if str(r["method"]) == m), key=lambda r: r["n_anchors"])
        x = [r["n_anchors"] for r in rs]
        style = {"lw": 2.5, "zorder": 3} if m.lower().startswith("sparseeval") else {"lw": 1.2}
        axes[0].plot(x, [r["mae"] for r in rs], "o-", label=m, **style)
        axes[1].plot(x, [r.get("kendall_tau") for r in rs], "o-", label=m, **style)
    for ax, lab in zip(
        axes, ("MAE (accuracy points, lower is better)", "Kendall tau"), strict=True
    ):
        ax.set(xlabel="anchors", ylabel=lab)
        ax.grid(alpha=0.3)
        if n_anchors:
            ax.axvline(
                n_anchors, color="grey", ls=":", lw=1, label=f"this set ({n_anchors} anchors)"
            )
    axes[0].legend(fontsize=8)
    fig.suptitle("error and rank agreement against anchor budget (test models)")
    return _save(fig, out / PLOTS / "budget.png", _TWO_AXES)


def plot_drift(out: Path, rows, threshold) -> Path:
    plt = _figure()
    fig, ax = plt.subplots(figsize=(6.5, 3.8), dpi=110)
    labels = [f"v{r.get('version')}" + (f"\n{r['date']}" if r.get("date") else "") for r in rows]
    x = np.arange(len(rows))
    maes = [r.get("mae") for r in rows]
    ax.plot(x, maes, "o-", color="tab:purple")
    for xi, r in zip(x, rows, strict=True):
        if r.get("n_models") is not None:
            ax.annotate(
                f"n={r['n_models']}",
                (xi, r["mae"]),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
                fontsize=7,
            )
    if threshold is not None:
        ax.axhline(threshold, color="tab:red", ls="--", lw=1, label="drift threshold")
        ax.legend(fontsize=8)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set(ylabel="MAE on newer models (points)", title="drift history")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    return _save(fig, out / PLOTS / "drift.png", _ONE_AXES | {"bottom": 0.2})


# Fixed margins (fractions of the figure) that fit each plot's labels: `tight_layout` would
# measure them with an extra draw, about 40% of a plot's time.
_ONE_AXES = {"left": 0.12, "right": 0.97, "bottom": 0.1, "top": 0.93}
_TWO_AXES = {"left": 0.08, "right": 0.98, "bottom": 0.17, "top": 0.88, "wspace": 0.25}


def _save(fig, path: Path, margins: dict[str, float]) -> Path:
    fig.subplots_adjust(**margins)
    fig.savefig(path, format="png", metadata={"Software": None})
    _figure().close(fig)
    return path


__all__ = [
    "PLOTS",
    "plot_bands",
    "plot_budget",
    "plot_drift",
    "plot_pred_vs_true",
]
