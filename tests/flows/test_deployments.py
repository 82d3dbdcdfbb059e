"""Deployments are defined once (deployments/spec.py); serve.py and prefect.yaml must agree."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from deployments import spec

REGENERATE = "run `python deployments/spec.py` from the repository root (SPARSEEVAL_CRON unset)"


@pytest.fixture(autouse=True)
def _default_cron(monkeypatch):
    monkeypatch.delenv("SPARSEEVAL_CRON", raising=False)


@pytest.fixture(scope="module")
def yaml_deployments() -> dict[str, dict]:
    loaded = yaml.safe_load(spec.YAML_PATH.read_text(encoding="utf-8"))
    return {d["name"]: d for d in loaded["deployments"]}


def _relative(entrypoint: str) -> str:
    path, _, attr = entrypoint.rpartition(":")
    p = Path(path)
    if p.is_absolute():
        p = p.relative_to(Path(spec.__file__).resolve().parents[1])
    return f"{p.as_posix()}:{attr}"


def test_prefect_yaml_is_generated_from_spec():
    committed = spec.YAML_PATH.read_text(encoding="utf-8")
    assert committed == spec.render_yaml(), (
        f"{spec.YAML_PATH.name} differs from deployments/spec.py: {REGENERATE}"
        " (edit spec.py, not the yaml)"
    )


def test_prefect_yaml_matches_spec_and_prefects_schema(yaml_deployments):
    from prefect.cli.deploy._models import PrefectYamlModel

    raw = yaml.safe_load(spec.YAML_PATH.read_text(encoding="utf-8"))
    model = PrefectYamlModel.model_validate(raw)  # what `prefect deploy` validates the file with
    assert [d.name for d in model.deployments] == [s.name for s in spec.specs()]
    assert [a for step in raw["pull"] for a in step] == [
        "prefect.deployments.steps.set_working_directory"
    ]
    for s in spec.specs():
        d = yaml_deployments[s.name]
        assert d["description"] == s.description
        assert d["entrypoint"] == s.entrypoint
        assert d["tags"] == list(s.tags)
        assert d["parameters"] == s.parameters
        assert d["concurrency_limit"] == {"limit": 1, "collision_strategy": "ENQUEUE"}
        assert d["work_pool"]["name"] == "sparseeval-process"
        assert d["work_pool"]["job_variables"]["env"] == spec.JOB_ENV
        want = [{"cron": s.cron, "timezone": "UTC", "active": True}] if s.cron else []
        assert d["schedules"] == want
    assert yaml_deployments["nightly"]["schedules"][0]["cron"] == spec.DEFAULT_CRON


def test_serve_builds_the_yamls_deployments(yaml_deployments):
    from deployments import serve

    served = serve.deployments()
    assert [d.name for d in served] == [n + spec.SERVE_SUFFIX for n in yaml_deployments]
    for d in served:
        y = yaml_deployments[d.name.removesuffix(spec.SERVE_SUFFIX)]
        flow = spec.load_flow(y["entrypoint"])
        assert d.flow_name == flow.name, d.name
        assert _relative(d.entrypoint) == y["entrypoint"], d.name
        assert d.parameters == y["parameters"], d.name
        assert d.tags == y["tags"], d.name
        assert d.description == y["description"], d.name
        assert d.concurrency_limit == y["concurrency_limit"]["limit"], d.name
        assert d.concurrency_options.collision_strategy == "ENQUEUE", d.name
        crons = [(s.schedule.cron, s.schedule.timezone, s.active) for s in d.schedules]
        assert crons == [(s["cron"], s["timezone"], s["active"]) for s in y["schedules"]], d.name
    assert {d.name.removesuffix(spec.SERVE_SUFFIX): d.flow_name for d in served} == {
        "nightly": "refresh",
        "manual": "refresh",
        "retrain-one": "retrain-benchmark",
        "ingest-only": "ingest-only",
        "evaluate": "evaluate-published",
    }


def test_sparseeval_cron_reschedules_the_nightly_in_both(monkeypatch):
    monkeypatch.setenv("SPARSEEVAL_CRON", "30 4 * * 1")
    from deployments import serve

    nightly = serve.deployments()[0]
    assert [s.schedule.cron for s in nightly.schedules] == ["30 4 * * 1"]
    rendered = yaml.safe_load(spec.render_yaml())["deployments"][0]
    assert rendered["schedules"][0]["cron"] == "30 4 * * 1"


def test_yaml_entrypoints_resolve_to_flows(yaml_deployments):
    from prefect import Flow
    from prefect.flows import load_flow_from_entrypoint

    for name, d in yaml_deployments.items():
        flow = load_flow_from_entrypoint(d["entrypoint"], use_placeholder_flow=False)
        assert isinstance(flow, Flow), f"{name}: {d['entrypoint']} is not a Prefect flow"
        assert flow.name == spec.load_flow(d["entrypoint"]).name, name


def test_render_quotes_what_yaml_would_misread():
    for value in ["false", "Yes", "null", "3", "a: b", "x:", "#c", "", "日本", "{{ $PWD }}"]:
        assert yaml.safe_load(f"v: {spec._scalar(value)}")["v"] == value, value
        assert yaml.safe_load(f"v: {spec._scalar([value])}")["v"] == [value], value
    nested = {"sources": ["hub:org/model", "synthetic"], "n": 100, "on": True, "x": None}
    assert yaml.safe_load(f"v: {spec._scalar(nested)}")["v"] == nested


def test_deployed_runs_send_heartbeats_the_zombie_automation_expects():
    from sparseeval.flows import automations

    assert spec.JOB_ENV["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == str(automations.HEARTBEAT_SECONDS)
    assert automations.ZOMBIE_AFTER.total_seconds() == 3 * spec.HEARTBEAT_SECONDS


def test_deployments_read_settings_from_the_environment_not_the_workers_folder():
    assert spec.JOB_ENV["SPARSEEVAL_HOME"] == "{{ $SPARSEEVAL_HOME }}"
    assert spec.JOB_ENV["SPARSEEVAL_CONFIG"] == "{{ $SPARSEEVAL_CONFIG }}"
    refresh = [s for s in spec.specs() if s.entrypoint == "flows/refresh.py:refresh"]
    assert refresh and all(s.parameters == {"fill_if_empty": False} for s in refresh)
