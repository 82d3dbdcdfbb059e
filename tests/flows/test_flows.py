"""Flow tests on tiny synthetic data, under a temporary Prefect server (`prefect_harness`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparseeval.consume.sets import anchorset, layout
from sparseeval.consume.sets.suite_set import load_suite
from sparseeval.pipeline import drift
from tests.helpers import ITEMS, TINY, maintained, release, run

pytestmark = pytest.mark.usefixtures("prefect_harness")


def by_bench(run_out):
    return {r.benchmark: r for r in run_out.results}


def test_refresh_then_cached_then_incremental(tmp_path):
    home = tmp_path / "home"
    first = run(home, [release(tmp_path, 0, 200)])
    res = by_bench(first)
    assert set(res) == set(ITEMS)
    assert first.n_trained == 2 and first.n_published == 2
    for b in ITEMS:
        assert layout.latest_version(*maintained(home / "published", b)) == 1
        assert res[b].fit.test_metrics["mae"] < 15
        interval = anchorset.load_anchor_set(home / "published", b).manifest["interval"]
        assert interval["calibrated_on"] == "calibration"  # held-out models, not validation
    assert Path(first.report_path).is_file()
    assert first.suite.startswith("suite: published v1, 2 benchmarks"), first.suite
    assert first.suite in Path(first.report_path).read_text()
    suite = load_suite(home / "published")  # the suite of both benchmarks is live
    assert suite.benchmarks == list(ITEMS) and suite.version == 1

    import shutil

    stray = home / "published" / "suite" / "v2"  # a suite candidate a crash left unpromoted
    shutil.copytree(home / "published" / "suite" / "v1", stray)
    second = run(home, [])
    assert not stray.exists()
    assert second.n_trained == 0 and second.n_cached == 2
    assert second.suite.startswith("suite: v1 is up to date"), second.suite
    assert all(r.fit_state == "Cached" for r in second.results)  # no training task ran
    assert second.n_published == 0
    assert all(r.matrix_cached for r in second.results)

    shutil.rmtree(home / "artifacts" / "model")  # cached results whose files are gone
    again = run(home, [])
    assert again.n_trained == 2 and again.n_published == 0

    third = run(home, [release(tmp_path, 200, 230, ["gsm8k"])], drift_mae_points=1000,
                drift_mae_ratio=1000, drift_out_of_range_frac=1)  # fmt: skip
    res = by_bench(third)
    assert res["gsm8k"].fit_cached is False and res["arc"].fit_cached is True
    assert third.n_trained == 1 and third.n_published == 0
    assert res["gsm8k"].n_fresh == 30
    # the new models answered gsm8k only: the suite (models in every benchmark) is unchanged
    assert third.suite.startswith("suite: v1 is up to date"), third.suite

    from sparseeval.flows.refresh import refresh

    only_arc = refresh(sources=[], benchmarks=["arc"], home=str(home), settings_overrides=TINY)
    assert only_arc.suite == "suite: not refitted (this run covered arc, not all benchmarks)"
    assert load_suite(home / "published").benchmarks == list(ITEMS)  # the live suite stays


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_drift_publishes_a_better_version(tmp_path, monkeypatch):
    import importlib

    module = importlib.import_module("sparseeval.flows._results")  # where events are emitted
    events = []
    real_emit = module.emit_event
    monkeypatch.setattr(module, "emit_event", lambda **kw: events.append(kw) or real_emit(**kw))
    home = tmp_path / "home"
    weak = {"refine_steps": 0, "predictor": "ridge"}  # the same budget: no new set
    first = run(home, [release(tmp_path, 0, 200)], **weak)
    assert first.n_published == 2
    assert [(e["event"], e["resource"]["prefect.resource.name"]) for e in events] == [
        ("sparseeval.anchors.published", "arc"), ("sparseeval.anchors.published", "gsm8k"),
        ("sparseeval.anchors.published", "suite"),
    ]  # fmt: skip
    events.clear()
    out = run(home, [release(tmp_path, 200, 260, ["arc"])], drift_mae_points=0.01)
    res = by_bench(out)
    assert res["arc"].decision.drift is True
    assert res["arc"].gate.accept is True, res["arc"].gate
    assert res["arc"].published_version == 2
    assert layout.latest_version(*maintained(home / "published", "arc")) == 2
    assert res["gsm8k"].decision.drift is False  # no new gsm8k models
    assert layout.latest_version(*maintained(home / "published", "gsm8k")) == 1
    report = Path(out.report_path).read_text()
    assert "published v2" in report and "drift" in report
    names = [(e["event"], e["resource"]["prefect.resource.name"]) for e in events]
    assert names[:2] == [
        ("sparseeval.drift.detected", "arc"),
        ("sparseeval.anchors.published", "arc"),
    ]
    assert [n for _, n in names[2:]] == ["suite"]  # the suite refit: published or refused
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["sparseeval-metrics"]))
        )
    assert found and found[0].type == "table"
    manifest = anchorset.load_anchor_set(home / "published", "arc").manifest
    history = drift.drift_history(home / "artifacts", "arc")
    assert history[-1]["version"] == 1 and history[-1]["n_models"] == 60
    assert (
        "drift"
        in (layout.resolve_version_dir(home / "published", "arc", 2) / "report.md")
        .read_text()
        .lower()
    )
    assert manifest["version"] == 2


# A candidate surely worse at the live set's budget (another budget is a new set, ungated):
# an MLP of one epoch reads nearly every model alike.
WORSE = {"refine_steps": 0, "predictor": "mlp", "epochs": 1}


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_worse_candidate_is_refused(tmp_path):
    home = tmp_path / "home"
    run(home, [release(tmp_path, 0, 200, ["arc"])])
    out = run(
        home, [release(tmp_path, 200, 260, ["arc"])], drift_mae_points=0.01, **WORSE
    )  # fmt: skip
    r = by_bench(out)["arc"]
    assert r.decision.drift is True
    assert r.gate.accept is False and "refused" in r.gate.reason
    assert out.n_published == 0
    assert layout.latest_version(*maintained(home / "published", "arc")) == 1
    assert layout.list_versions(*maintained(home / "published", "arc")) == [
        1
    ]  # candidate rolled back
    assert "refused" in Path(out.report_path).read_text()


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_crash_in_publish_leaves_the_live_version(tmp_path, monkeypatch):
    from sparseeval.flows.refresh import refresh

    home = tmp_path / "home"
    run(home, [release(tmp_path, 0, 200, ["arc"])])

    def crash(*args, **kwargs):
        raise RuntimeError("injected crash while swapping latest")

    from sparseeval.pipeline import assess, versions
    from sparseeval.pipeline.records import GateResult

    monkeypatch.setattr(assess, "compare_candidate", lambda *a, **k: GateResult(True, "forced"))
    monkeypatch.setattr(versions, "set_latest", crash)
    state = refresh(
        sources=[release(tmp_path, 200, 260, ["arc"])],
        home=str(home),
        settings_overrides=TINY | {"drift_mae_points": 0.01, "n_anchors": 6},
        return_state=True,
    )
    assert state.is_failed()
    assert layout.latest_version(*maintained(home / "published", "arc")) == 1
    assert layout.list_versions(*maintained(home / "published", "arc")) == [1]
    aset = anchorset.load_anchor_set(home / "published", "arc")
    assert aset.manifest["version"] == 1


@pytest.mark.slow  # a Dask cluster: the slow group
def test_dask_runner_two_workers(tmp_path):
    pytest.importorskip("prefect_dask")
    from sparseeval.flows.refresh import refresh

    home = tmp_path / "home"
    out = refresh(
        sources=[release(tmp_path, 0, 200)],
        home=str(home),
        settings_overrides=TINY | {"task_runner": "dask", "workers": 2},
        dask_processes=False,
    )
    assert out.task_runner == "DaskTaskRunner"
    assert out.n_trained == 2 and out.n_published == 2


def test_cli_refresh(tmp_path, capsys, cli_refresh):
    home = tmp_path / "home"
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    assert cli_refresh("--home", str(home), "--source", release(tmp_path, 0, 200), *sets) == 0
    out = capsys.readouterr().out
    assert "published 2" in out and "report:" in out
    assert cli_refresh("--home", str(home), *sets) == 0
    assert "everything was cached" in capsys.readouterr().out


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_a_refresh_that_refits_the_same_suite_publishes_nothing_and_says_so(
    tmp_path, capsys, cli_refresh, monkeypatch
):
    """The suite published v3 identical to v2: after an upgrade (a new code version) the
    refit suite is the live one over again, so nothing is published and the run says so."""
    from sparseeval.pipeline import suite_recipe

    home = tmp_path / "home"
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    assert cli_refresh("--home", str(home), "--source", release(tmp_path, 0, 200), *sets) == 0
    capsys.readouterr()
    monkeypatch.setattr(suite_recipe, "code_version", lambda: "9.9+upgraded")
    assert cli_refresh("--home", str(home), "--json", *sets) == 0
    doc = json.loads(capsys.readouterr().out)
    line = "suite: not published: unchanged from v1 (same weights, items, curves and models)"
    assert doc["suite"] == line and doc["n_published"] == 0
    assert line in Path(doc["report_path"]).read_text()
    assert layout.list_versions(home / "published", "suite") == [1]
    assert load_suite(home / "published").version == 1  # the live suite stays
    assert cli_refresh("--home", str(home), *sets) == 0
    out = capsys.readouterr().out
    assert "suite: not published (this candidate was found unchanged from v1 before)" in out


def test_cli_refresh_with_an_unknown_benchmark_says_so_in_one_line(tmp_path, capsys, cli_refresh):
    home = str(tmp_path / "home")  # --json: no progress lines, so stderr is the error alone
    assert cli_refresh("--no-fill", "--benchmark", "nope", "--home", home, "--json") == 2
    message = "no results in the store for benchmark(s) nope (have: none)"
    out, err = capsys.readouterr()
    assert err == f"sparseeval refresh: error: {message}\n"
    assert json.loads(out) == {"status": "failed", "failures": [], "error": message}


def test_the_console_leaves_out_input_errors_only_while_the_flow_runs(capsys):
    import logging

    from sparseeval.cli.refresh import _input_errors_in_one_line
    from sparseeval.pipeline.settings import SettingsError

    console = logging.StreamHandler()  # on stderr, as `sparseeval.cli.main` sets it up
    log = logging.getLogger("tests.flow_runs")

    def report(exc: Exception) -> None:  # as Prefect's flow engine logs an exception
        try:
            raise exc
        except Exception:
            log.exception("Encountered exception during execution: %r", exc)

    logging.getLogger().addHandler(console)
    try:
        with _input_errors_in_one_line(verbose=False):
            report(SettingsError("unknown benchmark"))
            report(ValueError("a bug"))  # a plain ValueError (NumPy's, say) is no input error
        report(SettingsError("after the run"))
        with _input_errors_in_one_line(verbose=True):
            report(SettingsError("verbose"))
    finally:
        logging.getLogger().removeHandler(console)
    shown = [x for x in capsys.readouterr().err.splitlines() if x.startswith("Encountered")]
    assert [x.removeprefix("Encountered exception during execution: ") for x in shown] == [
        "ValueError('a bug')", "SettingsError('after the run')", "SettingsError('verbose')",
    ]  # fmt: skip
    assert console.filters == []


def test_stage_flows(tmp_path):
    from sparseeval.flows.manual import evaluate_published, ingest_only, retrain_benchmark

    from sparseeval.consume.sets.anchorset import load_anchor_set
    from sparseeval.consume.sets.layout import live_budget

    home = tmp_path / "home"
    out = ingest_only(sources=[release(tmp_path, 0, 200, ["arc"])], home=str(home))
    assert out.new == 200 * ITEMS["arc"]
    (r,) = retrain_benchmark("arc", home=str(home), settings_overrides=TINY)
    assert r.published_version == 1
    maintained = r.fit.n_anchors
    # a budget given for one retrain is published, and readers keep the maintained set (an
    # operator's `-p n_anchors=5` had moved every reader to a 5-anchor set)
    (once,) = retrain_benchmark("arc", n_anchors=4, home=str(home), settings_overrides=TINY)
    assert once.published_version == 1 and once.fit.n_anchors == 4
    published = home / "published"
    assert live_budget(published, "arc") == maintained
    assert len(load_anchor_set(published, "arc").items) == maintained
    assert len(load_anchor_set(published, "arc", budget=4).items) == 4
    ingest_only(sources=[release(tmp_path, 200, 230, ["arc"])], home=str(home))
    scores = evaluate_published("arc", home=str(home))
    assert scores["n"] == 30 and scores["mae"] < 20


def test_thousands_of_benchmarks_reach_the_fit_flow_by_reference(tmp_path):
    """Prefect refuses flow parameters over 512 KiB: 8,000 names with their store states
    passed by value were over it; by reference the run's parameters are one key."""
    import importlib

    from prefect import flow
    from prefect.runtime import flow_run

    from sparseeval.pipeline.settings import Settings

    module = importlib.import_module("sparseeval.flows.refresh")  # the package shadows it

    names = [f"bench-{i:05d}" for i in range(8000)]
    states = {b: "f" * 64 for b in names}
    seen = {}

    @flow(name="fit-benchmarks")
    def fake(settings, batch: str, force: bool = False):
        seen["params"], seen["batch"] = dict(flow_run.parameters), batch
        seen["names"] = json.loads(Path(batch).read_text())["names"]
        return []

    real = module.fit_benchmarks
    module.fit_benchmarks = fake
    try:
        home = Settings.of(home=str(tmp_path / "home"))
        assert module.fit_batch(home, names, states) == []
    finally:
        module.fit_benchmarks = real
    assert seen["names"] == names and not Path(seen["batch"]).exists()  # removed after
    assert len(json.dumps(seen["params"], default=str)) < 10_000
    assert set(seen["params"]) == {"settings", "batch", "force"}
