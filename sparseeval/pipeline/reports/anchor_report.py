"""Evaluation report of a published anchor set: report.md, report.html, plots, metrics.json.

The report is built once as a list of blocks and written twice: Markdown (plots
as PNG files under `plots/`, beside it) and self-contained HTML (the same PNGs
embedded as base64, no network, no scripts). Plots use matplotlib's Agg backend.

Inputs (all optional; a section without data says so instead of vanishing):
- `test_pred`, `test_true`: estimates and true accuracies of the test models;
- `budget_rows`: [{method, n_anchors, mae, kendall_tau}] for SparseEval and baselines;
- `drift_rows`: [{version, mae, n_models, [date]}]: MAE of each published version
  on models that arrived after it was published.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.scoring.conformal import ConformalInterval, empirical_coverage
from sparseeval.consume.sets.about import data_sources
from sparseeval.pipeline.reports import plots as report_plots
from sparseeval.pipeline.reports.arrivals import recent_blocks, recent_summary
from sparseeval.pipeline.reports.bands import band_blocks, band_rows
from sparseeval.pipeline.reports.coverage import coverage_verdict, suite_blocks, suite_verdicts
from sparseeval.pipeline.reports.flags import flag_blocks, flag_summary, test_bounds
from sparseeval.pipeline.reports.render import json_ready, to_html, to_markdown

PLOTS = report_plots.PLOTS


def render_report(
    out_dir: str | Path,
    manifest: Mapping[str, Any],
    inputs: Mapping | None = None,
    version_folder: str | Path | None = None,
):
    """Write report.md, report.html, plots/*.png and metrics.json into `out_dir`.

    version_folder: where the set lives (default `out_dir`): its "Use it" commands name
    the published root as an absolute path, so they work from any folder.

    `manifest` is an anchor-set manifest (or the dict `write_version` is building);
    returns {"md": path, "html": path, "metrics": path, "plots": [paths]}.
    """
    out = Path(out_dir)
    (out / PLOTS).mkdir(parents=True, exist_ok=True)
    inputs = dict(inputs or {})
    conf = ConformalInterval.from_dict(manifest["interval"])
    test_pred = _arr(inputs.get("test_pred"))
    test_true = _arr(inputs.get("test_true"))
    budget = [dict(r) for r in inputs.get("budget_rows") or []]
    drift = [dict(r) for r in inputs.get("drift_rows") or []]
    settings = manifest.get("settings") or {}

    plots, bands, pool = [], None, manifest.get("pool_check")
    bounds = test_bounds(conf, pool, inputs)  # each test model's interval as a user gets it
    if test_pred is not None and test_true is not None and len(test_pred):
        plots.append(report_plots.plot_pred_vs_true(out, test_pred, test_true, conf, bounds))
        bands = band_rows(conf, test_pred, test_true, bounds)
        plots.append(report_plots.plot_bands(out, bands["estimate"], conf.level))
    if budget:
        plots.append(report_plots.plot_budget(out, budget, manifest.get("n_anchors")))
    if drift:
        plots.append(report_plots.plot_drift(out, drift, settings.get("drift_mae_points")))

    summary = _summary(manifest, bounds, test_pred, test_true, drift, settings)
    flags = flag_summary(conf, pool, inputs)
    recent = recent_summary(conf, inputs, pool)
    where = version_folder or out
    blocks = _blocks(manifest, conf, summary, budget, drift, plots, where, bands)
    at = blocks.index(("h2", "How the intervals are made"))
    blocks[at:at] = flag_blocks(flags, conf.level) + recent_blocks(recent, conf.level)
    md_path, html_path = out / "report.md", out / "report.html"
    md_path.write_text(to_markdown(blocks))
    html_path.write_text(to_html(blocks, out, f"{manifest['benchmark']} v{manifest['version']}"))
    metrics = {
        "benchmark": manifest["benchmark"],
        "version": manifest["version"],
        "created": manifest.get("created"),
        "n_anchors": manifest.get("n_anchors"),
        "split_sizes": manifest.get("split_sizes"),
        "metrics": manifest.get("metrics"),
        "interval": {
            "level": conf.level,
            "halfwidth": _num(conf.halfwidth),
            "test_coverage": summary["test_coverage"],
            "test_coverage_published": summary["coverage_published"],
            "n_test": summary["n_test"],
            "adaptive": conf.adaptive,
            "coverage_check": (manifest["interval"] or {}).get("coverage_check"),
            "bands": bands,
        },
        "flags": flags,
        "recent": recent,
        "resolvable_difference": _num(conf.diff_halfwidth),
        "budget": budget,
        "drift": drift,
    }
    metrics_path = out / "metrics.json"
    metrics_path.write_text(json.dumps(json_ready(metrics), indent=2, allow_nan=False))
    return {"md": md_path, "html": html_path, "metrics": metrics_path, "plots": plots}


# --------------------------------------------------------------------------- content


def _summary(manifest, bounds, test_pred, test_true, drift, settings) -> dict:
    s: dict[str, Any] = {"test_coverage": None, "n_test": 0, "test_mae": None, "test_tau": None,
                         "check": None, "coverage_published": None}  # fmt: skip
    if test_pred is not None and test_true is not None and len(test_true):
        from sparseeval.method.metrics import evaluate

        s["test_coverage"] = s["coverage_published"] = empirical_coverage(*bounds, test_true)
        s["n_test"] = len(test_true)
        m = evaluate(test_pred, test_true) if len(test_true) > 1 else {}
        s["test_mae"], s["test_tau"] = m.get("mae"), m.get("kendall_tau")
    s["check"] = (manifest.get("interval") or {}).get("coverage_check")
    if s["check"] and s["test_coverage"] is not None:  # the coverage before any widening
        s["test_coverage"] = s["check"]["coverage_before"]
    test_metrics = (manifest.get("metrics") or {}).get("test") or {}
    s["test_mae"] = test_metrics.get("mae", s["test_mae"])
    s["test_tau"] = test_metrics.get("kendall_tau", s["test_tau"])
    s["drift_threshold"] = settings.get("drift_mae_points")
    s["drift_last"] = drift[-1] if drift else None
    return s


def _verdicts(conf, summary, manifest) -> list[str]:
    out = []
    cov, level = summary["test_coverage"], conf.level
    if cov is None:
        out.append("Interval coverage on test models was not measured for this version.")
    else:
        out.append(coverage_verdict(cov, level, summary["n_test"]))
    out += suite_verdicts(manifest)
    if (summary["check"] or {}).get("action") == "widened":
        out.append("Not published as fitted: " + summary["check"]["reason"] + ".")
    if summary["test_mae"] is not None:
        tau = summary["test_tau"]
        tau_s = f", Kendall tau {tau:.3f}" if tau is not None else ""
        out.append(f"Test MAE {summary['test_mae']:.2f} accuracy points{tau_s}.")
    if conf.adaptive and all(math.isfinite(q) for q in conf.quantiles):
        low, high = 100 * conf.halfwidths(np.array([conf.spread.low, conf.spread.high]))
        h = 100 * conf.halfwidths(np.linspace(conf.spread.low, conf.spread.high, 101))
        out.append(
            f"A single estimate is good to about +-{h.min():.1f} to +-{h.max():.1f} points at "
            f"{100 * conf.level:.0f}%, depending on the estimate (+-{low:.1f} at the lowest "
            f"calibration estimate, +-{high:.1f} at the highest); two models must differ by "
            f"more than {100 * conf.diff_halfwidth:.1f} points for the anchors to tell them apart."
        )
    elif math.isfinite(conf.halfwidth):
        out.append(
            f"A single estimate is good to about +-{100 * conf.halfwidth:.1f} points at "
            f"{100 * conf.level:.0f}%; two models must differ by more than "
            f"{100 * conf.diff_halfwidth:.1f} points for the anchors to tell them apart."
        )
    else:
        out.append("Too few calibration models to calibrate intervals at this level.")
    last, thr = summary["drift_last"], summary["drift_threshold"]
    if last is not None:
        flag = ""
        if thr is not None and last.get("mae") is not None:
            flag = " (above the drift threshold)" if last["mae"] > thr else " (within threshold)"
        out.append(
            f"Latest drift check: v{last.get('version')} had MAE {last.get('mae'):.2f} points "
            f"on {last.get('n_models', '?')} newer models{flag}."
        )
    return out


def _use_it(manifest: dict, folder: Path | None) -> str:
    """Commands that work from any folder: the published root as an absolute path."""
    b, n, k = manifest["benchmark"], manifest["version"], manifest.get("n_anchors")
    root, budget = "PUBLISHED", ""
    if folder is not None:
        set_dir = Path(folder).resolve().parent
        if re.fullmatch(r"k\d+", set_dir.name):
            set_dir, budget = set_dir.parent, f", budget={k}"
        root = str(set_dir.parent)
    flag = f" --budget {k}" if budget else ""
    at = shlex.quote(root)  # a shell command: a folder with spaces or `$(...)` pastes as it is
    if manifest.get("suite"):
        return (
            "import sparseeval\n"
            f'suite = sparseeval.load_suite("{root}", version={n})\n'
            'suite.predict({"arc": {item: 0 or 1, ...}, ...})  # every benchmark -> + average\n\n'
            f"sparseeval anchors --anchor-set {at} --benchmark {b} --template all.csv\n"
            f"sparseeval predict --anchor-set {at} --benchmark {b} --version {n}"
            " --responses all.csv\n" + _export_line(manifest, f"--anchor-set {at} --benchmark {b}")
        )
    return (
        "import sparseeval\n"
        f'anchors = sparseeval.load_anchor_set("{root}", "{b}", version={n}{budget})\n'
        "anchors.items  # the anchor ids to answer\n"
        "anchors.predict(answers)  # {item: 0/1} -> estimate with its interval\n\n"
        f"sparseeval anchors --anchor-set {at} --benchmark {b}{flag} --template answers.csv\n"
        f"sparseeval predict --anchor-set {at} --benchmark {b} --version {n}{flag}"
        " --responses answers.csv\n"
        + _export_line(manifest, f"--anchor-set {at} --benchmark {b}{flag}")
    )


def _export_line(manifest: dict, where: str) -> str:
    """The `export-lm-eval` command when it works for this set; else what it would need."""
    from sparseeval.consume.answers.identity import OPAQUE, id_kinds

    if (manifest.get("provenance") or {}).get("synthetic"):
        return "# export-lm-eval: not for this set (synthetic demo ids, no lm-eval docs behind)"
    members = ((manifest.get("suite") or {}).get("members") or {}).values()
    sets = [(m.get("items", []), (m.get("own") or {}).get("item_sources")) for m in members]
    sets = sets or [(manifest.get("items", []), manifest.get("item_sources"))]
    if any(OPAQUE in id_kinds(items, sources).values() for items, sources in sets):
        return (f"sparseeval export-lm-eval {where} --id-map MAP.csv --out samples.json"
                "  # opaque ids: MAP.csv (item,doc_id[,task]) maps them")  # fmt: skip
    return f"sparseeval export-lm-eval {where} --out samples.json"


def _data_line(manifest) -> str:
    """What the set estimates and where its data came from (a loud note for the demo)."""
    target = (manifest.get("target") or {}).get("definition") or "the mean over the items"
    came = data_sources(manifest.get("provenance"))
    line = f"Estimates: {target}. Data: {came or 'not recorded'}."
    if (manifest.get("provenance") or {}).get("synthetic"):
        line += " **Fit on the built-in SYNTHETIC demo leaderboard: not real results.**"
    return line


def _blocks(manifest, conf, summary, budget, drift, plots, folder=None, bands=None) -> list:
    b, n = manifest["benchmark"], manifest["version"]
    sizes = manifest.get("split_sizes") or {}
    blocks: list[tuple] = [
        ("h1", f"{b} anchor set v{n}"),
        (
            "p",
            f"Created {manifest.get('created', '?')} by sparseeval "
            f"{manifest.get('library_version', '?')}; {manifest.get('n_anchors')} anchor items; "
            f"predictor: {manifest.get('predictor', {}).get('name') or '?'}; "
            f"models: {sizes.get('train', '?')} train / {sizes.get('valid', '?')} validation / "
            f"{sizes.get('calibration', 0)} calibration / {sizes.get('test', '?')} test;"
            " data fingerprint "
            f"`{str(manifest.get('data_fingerprint', ''))[:16]}`.",
        ),
        ("p", _data_line(manifest)),
        ("h2", "Should I trust it?"),
        ("ul", _verdicts(conf, summary, manifest)),
        ("h2", "Use it"),
        ("code", _use_it(manifest, folder)),
    ]
    blocks += suite_blocks(manifest)
    if members := (manifest.get("suite") or {}).get("members"):
        about = [f"{b}: {_data_line(m).removeprefix('Estimates: ')}" for b, m in members.items()]
        blocks.append(("ul", about))
    metrics = manifest.get("metrics") or {}
    if metrics:
        names = sorted({k for v in metrics.values() for k in v})
        rows = [[split, *[_fmt(v.get(k)) for k in names]] for split, v in metrics.items()]
        blocks += [("h2", "Metrics by split"), ("table", ["split", *names], rows)]
        blocks.append(("p", "MAE and max error are in accuracy points (x100)."))
    blocks.append(("h2", "Predicted vs true accuracy (test models)"))
    blocks.append(_plot_or_note(plots, "predicted_vs_true", "no test predictions were given"))
    if bands:
        blocks += band_blocks(conf, bands, next((p for p in plots if p.stem == "bands"), None))
    blocks.append(("h2", "Error and rank agreement against anchor budget"))
    blocks.append(_plot_or_note(plots, "budget", "no budget comparison was given"))
    if budget:
        rows = [
            [r.get("method"), r.get("n_anchors"), _fmt(r.get("mae")), _fmt(r.get("kendall_tau"))]
            for r in sorted(budget, key=lambda r: (str(r.get("method")), r.get("n_anchors", 0)))
        ]
        blocks.append(("table", ["method", "anchors", "MAE (points)", "Kendall tau"], rows))
    blocks.append(("h2", "Drift history"))
    blocks.append(_plot_or_note(plots, "drift", "no drift checks yet"))
    if drift:
        rows = [
            [f"v{r.get('version')}", r.get("date", ""), r.get("n_models", ""), _fmt(r.get("mae"))]
            for r in drift
        ]
        blocks.append(("table", ["version", "checked", "newer models", "MAE (points)"], rows))
    interval = manifest.get("interval") or {}
    blocks += [
        ("h2", "How the intervals are made"),
        ("p", _interval_method(conf, interval.get("calibrated_on", "validation"))),
        ("p", "Missing answers: " + str(interval.get("missing_answers", "not allowed"))),
        ("h2", "Anchor items"),
        ("p", ", ".join(f"`{i}`" for i in manifest.get("items", []))),
    ]
    return blocks


def _interval_method(conf, calibrated_on: str) -> str:
    """How the intervals were calibrated, in words (the honesty of the guarantee depends on it)."""
    models, why = {
        "calibration": ("held-out calibration", "No selection or fitting step saw those models. "),
        "cross-fit": ("cross-fitted", "Each residual comes from a fit of the whole procedure"
                      " that never saw that model. "),
    }.get(calibrated_on, ("validation", "Validation models also chose the anchors and the"
                          " predictor, so these intervals are optimistic. "))  # fmt: skip
    text = (
        f"Split-conformal: the {100 * conf.level:.0f}% interval is the estimate +- the "
        f"ceil((n+1) x level)-th smallest absolute error on the n = {conf.n_calibration} "
        f"{models} models (clipped to [0, 100]%). " + why
    )
    if conf.adaptive:
        cuts = ", ".join(f"{100 * e:.1f}%" for e in conf.edges) or "none"
        text = (
            f"Split-conformal with a width that follows the estimate: each of the n = "
            f"{conf.n_calibration} {models} models' absolute error is divided by the typical "
            "error at its estimate (a quadratic in the estimate fitted to those errors), and "
            f"the models are split into {len(conf.quantiles)} band(s) of their estimate (cut "
            f"at {cuts}); in each band the {100 * conf.level:.0f}% interval is the estimate "
            "+- the ceil((n_band+1) x level)-th smallest of these ratios times the typical "
            "error at the estimate (clipped to [0, 100]%), so each band is covered at the "
            "level. " + why
        )
    return text + (
        "The coverage above is measured on test models that took part in no choice. "
        f"Differences between two models use the same calibration on all pairs of {models} "
        "models."
    )


def _plot_or_note(plots, name, note):
    for p in plots:
        if p.stem == name:
            return ("img", p)
    return ("p", f"_({note})_")


# --------------------------------------------------------------------------- writers


# --------------------------------------------------------------------------- helpers


def _arr(x):
    return None if x is None else np.asarray(x, dtype=np.float64).ravel()


def _num(x):
    return float(x) if x is not None and math.isfinite(x) else None


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


__all__ = ["coverage_verdict", "render_report"]
