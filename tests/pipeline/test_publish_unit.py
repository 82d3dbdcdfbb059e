"""The one publish unit: one ledger for benchmarks and the suite, reasons in the transaction.

Each test runs the production path: `publish.publish_unit` with the refresh flow's Prefect
transaction and tasks (`flows.publish.PREFECT`), or the flow's suite step itself.
"""

import json

import numpy as np
import pytest
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.transactions import get_transaction

from sparseeval.consume.sets.layout import latest_version, list_versions, set_dir
from sparseeval.consume.sets.suite_set import SUITE
from sparseeval.method.synthetic import make_leaderboard
from sparseeval.pipeline import artifacts, publish, suite_recipe
from sparseeval.pipeline.artifacts import save_matrix
from sparseeval.pipeline.records import GateResult
from sparseeval.pipeline.settings import Settings
from tests.helpers import publish_fit, publish_suite_in_flow, tiny_fit

pytestmark = pytest.mark.usefixtures("prefect_harness")  # flows: one server per session

SUITE_SETTINGS = dict(n_anchors=8, n_test=60, n_valid=60, n_calib=60, refine_steps=2,
                      epochs=60, patience=10, ensemble=1)  # fmt: skip


def test_settings_sections_name_the_cache_fields():
    from sparseeval.pipeline.artifacts import MATRIX_FIELDS, TRAINING_FIELDS
    from sparseeval.pipeline.settings import fields_of

    assert MATRIX_FIELDS == ("max_missing_model_frac", "target")
    assert TRAINING_FIELDS[:3] == ("n_anchors", "init", "refine_steps")
    assert TRAINING_FIELDS[-3:] == ("widen", "edge_tail", "edge_ramp")  # the pool section
    assert "drift_mae_points" not in TRAINING_FIELDS and "home" not in TRAINING_FIELDS
    assert fields_of("runner") == (
        "task_runner",
        "dask_address",
        "lease_wait_seconds",
        "workers",
        "alert_webhook",
    )
    with pytest.raises(ValueError, match="unknown settings section"):
        fields_of("nope")


def _suite_published(tmp_path):
    """Settings of a tiny suite and its two matrix files, the suite published as v1."""
    settings = Settings.of(home=tmp_path, **SUITE_SETTINGS)
    paths = {}
    for b, m in make_leaderboard(360, {"arc": 60, "gsm8k": 50}, seed=4).items():
        paths[b] = tmp_path / f"{b}.npz"
        save_matrix(m, paths[b], fingerprint=m.fingerprint())
    assert publish_suite_in_flow(paths, settings).startswith("suite: published v1")
    return settings, paths


def test_a_refused_suite_is_in_the_ledger_a_benchmark_uses_and_is_not_refitted(
    tmp_path, monkeypatch
):
    settings, paths = _suite_published(tmp_path)
    worse = settings.replace(n_anchors=2)
    line = publish_suite_in_flow(paths, worse)
    assert line.startswith("suite: not published: candidate refused (refused: candidate"), line
    infos = {b: suite_recipe.matrix_info(b, p) for b, p in paths.items()}
    key = suite_recipe.suite_key(infos, worse)
    ledger = tmp_path / "artifacts" / "published" / "suite-refused.json"
    reason = json.loads(ledger.read_text())[key]  # the file `publish.note_refusal` keeps
    assert reason.startswith("refused: candidate suite-average MAE") and reason in line
    assert artifacts.refused_before(settings.paths.artifacts_dir, SUITE, key) == reason
    tomb = json.loads((tmp_path / "published" / SUITE / ".discarded-v2").read_text())
    assert tomb["reason"] == f"refused by the quality gate: {reason}"

    def no_fit(*a, **k):
        raise AssertionError("a refused suite candidate was fitted again")

    monkeypatch.setattr(suite_recipe, "fit_suite", no_fit)
    again = publish_suite_in_flow(paths, worse)
    assert again == f"suite: not published (this candidate was already refused: {reason})"


@task(cache_policy=NO_CACHE)
def _hold(cand, artifacts_dir: str):
    """Stands in for `tasks.write_candidate`: puts a written version into the transaction."""
    get_transaction().set("candidate", cand)
    get_transaction().set("artifacts_dir", artifacts_dir)
    return cand


def _held(tmp_path, gate: GateResult, fitted=None):
    from sparseeval import tasks

    _hold.on_rollback_hooks[:] = [tasks.discard_candidate]
    folder = publish_fit(tmp_path / "published", "arc", fitted or tiny_fit())
    cand = publish.candidate(folder, "arc", "fit-key-1")
    return lambda: (_hold(cand, str(tmp_path / "artifacts")), gate)


def _run_unit(settings: Settings, write):
    from sparseeval.flows.publish import PREFECT

    @flow(name="publish-unit-test")
    def unit():
        return publish.publish_unit(settings, write, PREFECT)

    return unit()


def _tomb(tmp_path, version: int = 1) -> str:
    tomb = set_dir(tmp_path / "published", "arc", 8) / f".discarded-v{version}"  # tiny_fit: k8
    return json.loads(tomb.read_text())["reason"]


def test_a_refused_gate_rolls_back_with_its_reason_and_notes_the_ledger(tmp_path):
    settings = Settings.of(home=tmp_path)
    write = _held(tmp_path, GateResult(False, "refused: candidate MAE 3.000 > live 2.000 points"))
    out = _run_unit(settings, write)
    assert (
        out.line
        == "not published: candidate refused (refused: candidate MAE 3.000 > live 2.000 points)"
    )
    assert _tomb(tmp_path) == (
        "refused by the quality gate: refused: candidate MAE 3.000 > live 2.000 points"
    )
    assert artifacts.refused_before(settings.paths.artifacts_dir, "arc", "fit-key-1") == (
        "refused: candidate MAE 3.000 > live 2.000 points"
    )
    from sparseeval import tasks

    assert not hasattr(tasks, "ROLLBACK_REASONS") and not hasattr(tasks, "if_rolled_back")


def test_a_failed_mirror_rolls_back_with_its_reason_and_no_refusal(tmp_path, monkeypatch):
    def unreachable(cand, hub_repo, client=None):
        raise ValueError("hub unreachable")

    monkeypatch.setattr(publish, "mirror", unreachable)
    settings = Settings.of(home=tmp_path, hub_repo="acme/sets")
    write = _held(tmp_path, GateResult(True, "no live set to compare with"))
    out = _run_unit(settings, write)
    assert out.version is None and out.line == (
        "not published (mirror to acme/sets failed (ValueError: hub unreachable);"
        " live set unchanged)"
    )
    assert _tomb(tmp_path) == "rolled back: mirror to acme/sets failed"
    assert artifacts.refused_before(settings.paths.artifacts_dir, "arc", "fit-key-1") is None


def test_the_plain_unit_rolls_back_as_the_flow_does(tmp_path, monkeypatch):
    """`publish_unit` with its default steps (`fit --out`'s path): the same reasons and ledger."""
    from sparseeval.pipeline import versions

    settings = Settings.of(home=tmp_path)
    folder = publish_fit(tmp_path / "published", "arc", tiny_fit())
    cand = publish.candidate(folder, "arc", "fit-key-1")
    refusal = GateResult(False, "refused: candidate MAE 3.000 > live 2.000 points")
    out = publish.publish_unit(settings, lambda: (cand, refusal))
    assert (
        out.line == f"not published: candidate refused ({refusal.reason})" and out.gate is refusal
    )
    assert _tomb(tmp_path) == f"refused by the quality gate: {refusal.reason}"
    assert (
        artifacts.refused_before(settings.paths.artifacts_dir, "arc", "fit-key-1") == refusal.reason
    )

    def crash(*a, **k):
        raise RuntimeError("injected crash while swapping latest")

    folder = publish_fit(tmp_path / "published", "arc", tiny_fit())
    cand = publish.candidate(folder, "arc", "fit-key-2")
    monkeypatch.setattr(versions, "set_latest", crash)
    with pytest.raises(RuntimeError, match="injected crash"):
        publish.publish_unit(settings, lambda: (cand, GateResult(True, "no live set")))
    tomb = set_dir(tmp_path / "published", "arc", 8) / ".discarded-v2"
    assert json.loads(tomb.read_text())["reason"] == "rolled back: promoting v2 failed"


def test_a_candidate_that_repeats_the_live_set_is_not_published_and_a_changed_one_is(tmp_path):
    """The suite published v3 identical to v2: a candidate whose weights, items, curves and
    models are the live version's is discarded, saying "unchanged from vN"; nothing new goes
    live. A really changed candidate still publishes."""
    settings = Settings.of(home=tmp_path)
    fitted = tiny_fit()
    live = publish_fit(tmp_path / "published", "arc", fitted)
    publish.promote(publish.candidate(live, "arc", "fit-key-0"))
    out = _run_unit(settings, _held(tmp_path, GateResult(True, "no worse"), fitted))
    reason = "unchanged from v1 (same weights, items, curves and models)"
    assert out.line == f"not published: {reason}" and out.version is None
    assert out.unchanged_from == 1 and out.gate.reason == "no worse"
    assert _tomb(tmp_path, 2) == reason
    assert latest_version(tmp_path / "published", "arc", 8) == 1
    assert list_versions(tmp_path / "published", "arc", 8) == [1]
    assert artifacts.refused_before(settings.paths.artifacts_dir, "arc", "fit-key-1") is None
    assert artifacts.unchanged_before(settings.paths.artifacts_dir, "arc", "fit-key-1", 1) == (
        "this candidate was found unchanged from v1 before"
    )
    assert artifacts.unchanged_before(settings.paths.artifacts_dir, "arc", "fit-key-1", 3) is None

    changed = _run_unit(settings, _held(tmp_path, GateResult(True, "better"), tiny_fit(seed=1)))
    assert changed.line == "published v3 (local)" and changed.unchanged_from is None
    assert latest_version(tmp_path / "published", "arc", 8) == 3


def test_substance_ignores_time_version_paths_and_code_but_not_weights(tmp_path):
    fitted = tiny_fit()
    a = publish_fit(tmp_path / "a", "arc", fitted)
    b = publish_fit(tmp_path / "b", "arc", fitted, extra={"note": "built elsewhere"})
    assert artifacts.substance(a) == artifacts.substance(b)
    assert "predictor/weights.npz" in artifacts.substance(a)["files"]
    assert not any(f.startswith("report") for f in artifacts.substance(a)["files"])
    c = publish_fit(tmp_path / "a", "arc", tiny_fit(seed=1))
    assert artifacts.substance(a) != artifacts.substance(c)


def test_a_suite_refit_that_changes_nothing_is_not_published_again(tmp_path, monkeypatch):
    """An upgrade (new code version) refits the suite; the same suite is not a new version,
    and the next run does not fit it again."""
    settings, paths = _suite_published(tmp_path)
    monkeypatch.setattr(suite_recipe, "code_version", lambda: "9.9+upgraded")
    line = publish_suite_in_flow(paths, settings)
    reason = "unchanged from v1 (same weights, items, curves and models)"
    assert line == f"suite: not published: {reason}"
    assert latest_version(tmp_path / "published", SUITE) == 1
    assert list_versions(tmp_path / "published", SUITE) == [1]
    tomb = json.loads((tmp_path / "published" / SUITE / ".discarded-v2").read_text())
    assert tomb["reason"] == reason

    def no_fit(*a, **k):
        raise AssertionError("an unchanged suite candidate was fitted again")

    monkeypatch.setattr(suite_recipe, "fit_suite", no_fit)
    again = publish_suite_in_flow(paths, settings)
    assert again == "suite: not published (this candidate was found unchanged from v1 before)"


def test_a_suite_with_a_graded_benchmark_reads_its_graded_answers(tmp_path):
    """A graded benchmark's member of the suite says `item_scale: graded` and its own reader
    takes graded answers (it was read as binary: graded answers refused); a binary member's
    reader still refuses them, and the joint readers of a mixed suite read 0/1 answers."""
    from sparseeval.consume.answers.responses import ResponsesError
    from sparseeval.consume.sets.suite_set import load_suite
    from sparseeval.method.matrix import ResponseMatrix

    settings = Settings.of(home=tmp_path, **SUITE_SETTINGS)
    board = make_leaderboard(360, {"arc": 60, "gsm8k": 50}, seed=4)
    gsm = board["gsm8k"]
    noise = np.random.default_rng(0).uniform(0, 0.4, gsm.values.shape)
    scores = np.where(gsm.values > 0, 1 - noise, noise)  # graded scores around the answers
    board["gsm8k"] = ResponseMatrix.from_array(scores, gsm.model_ids, gsm.item_ids,
                                               scores.mean(axis=1), scale="graded")  # fmt: skip
    paths = {}
    for b, m in board.items():
        paths[b] = tmp_path / f"{b}.npz"
        save_matrix(m, paths[b], fingerprint=m.fingerprint())
    assert publish_suite_in_flow(paths, settings).startswith("suite: published v1")
    suite = load_suite(tmp_path / "published")
    own = suite.own["gsm8k"]
    assert own.graded and not suite.own["arc"].graded and not suite.joint["gsm8k"].graded
    answers = {i: 0.7 for i in own.items}
    assert 0 <= own.predict(answers).value <= 1
    with pytest.raises(ResponsesError, match="graded score"):
        suite.own["arc"].predict({i: 0.7 for i in suite.own["arc"].items})
