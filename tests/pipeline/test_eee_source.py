"""Every Eval Ever records as a store source and as `predict`'s answers.

The files follow the schema 0.3.0 of github.com/evaleval/every_eval_ever
(`every_eval_ever/schemas/eval.schema.json`, `instance_level_eval.schema.json`) in the shape
of its frozen reference output, `tests/data/skill_reference_conversion/data/demo-source/
demo-org/demo-model/f3a1c0de-…{.json,_samples.jsonl}`: the aggregate and record below are
copies of those, with the model, samples and scores varied (the `every-eval-ever` package
needs Python 3.12, so it cannot write them here).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparseeval.consume.answers.eee_answers import EeeError, aggregate_path
from sparseeval.consume.answers.responses import ResponsesError, read_responses_files
from sparseeval.consume.answers.vector import anchor_vector
from sparseeval.pipeline.sources import ingest_sources
from sparseeval.pipeline.store import Store, watched
from sparseeval.pipeline.store.eee import EeeRecords
from sparseeval.pipeline.store.kinds import source_from_spec
from tests.hub_standin import serve_hub

BENCH = "demo-source.demo_bench"
AGGREGATE = {  # the reference aggregate, as published
    "schema_version": "0.3.0",
    "evaluation_id": "demo-source/demo-org_demo-model/1750000000",
    "evaluation_timestamp": "1750000000",
    "retrieved_timestamp": "1750000001",
    "source_metadata": {
        "source_name": "<Platform>", "source_type": "documentation",
        "source_organization_name": "<Aggregator org>", "evaluator_relationship": "third_party",
        "additional_details": {"source_role": "aggregator"},
    },
    "eval_library": {"name": "unknown", "version": "unknown"},
    "model_info": {
        "name": "demo-model", "id": "demo-org/demo-model", "developer": "demo-org",
        "additional_details": {"deployment_type": "externally_managed",
                               "model_availability": "open_weights"},
    },
    "evaluation_results": [{
        "evaluation_result_id": BENCH, "evaluation_name": BENCH,
        "source_data": {"dataset_name": "demo_bench", "source_type": "url",
                        "url": ["https://example.invalid/demo_bench"]},
        "metric_config": {
            "metric_id": "accuracy", "metric_name": "accuracy", "metric_kind": "accuracy",
            "metric_unit": "proportion", "lower_is_better": False, "score_type": "continuous",
            "min_score": 0.0, "max_score": 1.0,
        },
        "score_details": {"score": 0.75},
    }],
    "detailed_evaluation_results": {"format": "jsonl", "file_path": "", "hash_algorithm": "sha256",
                                    "checksum": "", "total_rows": 1},
}  # fmt: skip
RECORD = {  # the reference sample line, as published
    "schema_version": "0.3.0", "evaluation_id": "demo-source/demo-org_demo-model/1750000000",
    "model_id": "demo-org/demo-model", "evaluation_name": BENCH, "evaluation_result_id": BENCH,
    "sample_id": "demo_0001",
    "sample_hash": "9c94305328f8e70341f9d1880f4eaa6ea7f93b8922e6a03a8cdcf1924d28db0b",
    "interaction_type": "single_turn",
    "input": {"raw": "What is 2 + 2?", "formatted": "Q: What is 2 + 2?\nA:", "reference": ["4"]},
    "output": {"raw": ["The answer is 4."]},
    "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": "4",
                            "extraction_method": "match", "is_terminal": True}],
    "evaluation": {"score": 1.0, "is_correct": True},
    "token_usage": {"input_tokens": 12, "output_tokens": 5, "total_tokens": 17},
    "metadata": {"subject": "arithmetic"},
}  # fmt: skip


def sample_hash(raw: str, reference: list[str]) -> str:
    """The datastore's recipe (reference/instance-level.md, `Hashing`)."""
    text = json.dumps({"raw": raw, "reference": reference}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_eee(
    root: Path, model: str, scores: dict[str, object], stamp: int = 1750000000,
    more: dict[str, dict] | None = None,
) -> Path:  # fmt: skip
    """`data/demo-source/{dev}/{name}/{uuid}.json` + `_samples.jsonl`; the samples file.

    `scores`: {sample_id: score, or (score, is_correct)}; `more`: {evaluation_result_id:
    scores} of other metrics of the same samples (the schema's fan-out: one record each)."""
    dev, name = model.split("/")
    folder = root / "data" / "demo-source" / dev / name
    folder.mkdir(parents=True, exist_ok=True)
    file_uuid = str(uuid.uuid4())
    eval_id = f"demo-source/{dev}_{name}/{stamp}"
    lines = []
    results = [(BENCH, sid, value) for sid, value in scores.items()] + [
        (rid, sid, value) for rid, table in (more or {}).items() for sid, value in table.items()
    ]
    for rid, sid, value in results:
        score, ok = value if isinstance(value, tuple) else (value, value == 1)
        rec = copy.deepcopy(RECORD) | {"evaluation_id": eval_id, "model_id": model,
                                       "sample_id": sid, "evaluation_result_id": rid}  # fmt: skip
        rec["input"]["raw"] = f"What is {sid}?"
        rec["sample_hash"] = sample_hash(rec["input"]["raw"], rec["input"]["reference"])
        rec["evaluation"] = {"score": score, "is_correct": ok}
        lines.append(json.dumps(rec) + "\n")
    body = "".join(lines).encode()
    agg = copy.deepcopy(AGGREGATE) | {"evaluation_id": eval_id}
    agg["model_info"] |= {"id": model, "name": name, "developer": dev}
    agg["detailed_evaluation_results"] |= {
        "file_path": f"data/demo-source/{dev}/{name}/{file_uuid}_samples.jsonl",
        "checksum": hashlib.sha256(body).hexdigest(), "total_rows": len(lines),
    }  # fmt: skip
    (folder / f"{file_uuid}.json").write_text(json.dumps(agg, indent=2))
    samples = folder / f"{file_uuid}_samples.jsonl"
    samples.write_bytes(body)
    return samples


def store_with(path: Path) -> Path:
    with Store.open(path) as store:
        store.add_benchmark(BENCH)
    return path


def stored(path: Path) -> list[tuple]:
    with Store.open(path, read_only=True) as store:
        return store.con.execute(
            "SELECT m.model, i.item, r.correct, i.hash FROM results r"
            " JOIN models m USING (model_id) JOIN items i USING (item_id) ORDER BY 1, 2"
        ).fetchall()


def aged(root: Path) -> None:
    then = time.time() - 60
    for p in root.rglob("*"):
        os.utime(p, (then, then))


@pytest.fixture(autouse=True)
def quick_settle(monkeypatch):
    monkeypatch.setattr(watched, "SETTLE_SECONDS", 0.5)


def test_a_datastore_folder_is_ingested_with_hashes_and_reasons(tmp_path):
    write_eee(tmp_path, "org/a", {"s1": 1.0, "s2": 0.0, "s3": 0.43, "s4": (1.0, False)})
    write_eee(tmp_path, "org/b", {"s1": 0.0, "s2": 1.0}, more={"f1": {"s1": 0.5, "s2": 0.0}})
    aged(tmp_path)
    path = store_with(tmp_path / "s.duckdb")
    summary = ingest_sources(path, [f"eee:{tmp_path / 'data'}"], fill_if_empty=False)
    assert (summary.new, summary.quarantined, summary.failed) == (5, 1, 0)
    assert (
        f"{BENCH}={BENCH}; evaluation.score (2 records of other results not read)"
        in (summary.lines[1])
    )  # org/b's f1 records: another metric of the same samples
    rows = stored(path)
    assert [(m, i, c) for m, i, c, _ in rows] == [
        ("org/a", "s1", True), ("org/a", "s2", False), ("org/a", "s3", False),
        ("org/b", "s1", False), ("org/b", "s2", True),
    ]  # fmt: skip
    with Store.open(path, read_only=True) as store:  # the graded score is kept as it is
        scores = store.con.execute("SELECT score FROM results_view ORDER BY model, item")
        assert [s for (s,) in scores.fetchall()] == [None, None, 0.43, None, None]
    assert rows[0][3] == "eee_sample_hash:" + sample_hash("What is s1?", ["4"])
    with Store.open(path, read_only=True) as store:
        reasons = sorted(
            r for (r,) in store.con.execute("SELECT reason FROM quarantine").fetchall()
        )
    assert reasons == ["evaluation.score 1.0 but is_correct false"]


def test_the_next_night_reads_only_new_records_and_refuses_a_changed_file(tmp_path):
    first = write_eee(tmp_path, "org/a", {"s1": 1.0, "s2": 0.0})
    aged(tmp_path)
    path = store_with(tmp_path / "s.duckdb")
    spec = f"eee:{tmp_path / 'data'}"
    assert ingest_sources(path, [spec], fill_if_empty=False).new == 2
    write_eee(tmp_path, "org/c", {"s1": 1.0, "s2": 1.0}, stamp=1750000100)
    aged(tmp_path)
    night2 = ingest_sources(path, [spec], fill_if_empty=False)
    assert (night2.new, night2.skipped) == (2, 1)
    first.write_bytes(first.read_bytes()[:-20])  # cut short: not the aggregate's checksum
    aged(tmp_path)
    night3 = ingest_sources(path, [spec], fill_if_empty=False)
    assert night3.new == 0 and night3.failed == 1
    assert "not the checksum its aggregate" in " ".join(night3.lines)
    assert len(stored(path)) == 4


def test_a_record_being_written_waits(tmp_path, monkeypatch):
    monkeypatch.setattr(watched, "SETTLE_SECONDS", 60)
    write_eee(tmp_path, "org/a", {"s1": 1.0})
    (unit,) = EeeRecords(tmp_path).units(None)
    assert unit.skip is not None and unit.skip.startswith("still being written")
    aged(tmp_path)
    aggregate_path(samples := write_eee(tmp_path, "org/b", {"s1": 1.0})).unlink()
    aged(tmp_path)  # its aggregate has not arrived yet
    units = {u.label: u for u in EeeRecords(tmp_path).units(None)}
    assert units[str(samples)].skip.endswith(
        f"(no {aggregate_path(samples).name} beside it; read once unchanged for 60s)"
    )


def test_the_spec_names_the_source(tmp_path):
    samples = write_eee(tmp_path, "org/a", {"s1": 1.0})
    source = source_from_spec(f"eee:{samples}")
    assert isinstance(source, EeeRecords) and source.path == samples
    with pytest.raises(ValueError, match="eee source needs a folder or samples file"):
        source_from_spec("eee:")


def test_predict_reads_a_samples_file(tmp_path):
    samples = write_eee(tmp_path, "org/a", {"s1": 1.0, "s2": 0.0, "s3": 1.0})
    aset = SimpleNamespace(benchmark=BENCH, items=["s1", "s2"], item_sources={})
    assert read_responses_files([samples], aset) == {"s1": "1", "s2": "0"}
    other = {"s1": {"hash": "eee_sample_hash:" + "0" * 64}}
    with pytest.raises(EeeError, match="another sample_hash than the set's"):
        read_responses_files([samples], SimpleNamespace(benchmark=BENCH, items=["s1"],
                                                        item_sources=other))  # fmt: skip
    graded = write_eee(tmp_path, "org/g", {"s1": 0.43})
    assert read_responses_files([graded], aset) == {"s1": "0.43"}  # the set's scale decides
    with pytest.raises(ResponsesError, match=r"graded score \('0\.43'\), but this set's items"
                       " are binary"):  # fmt: skip
        anchor_vector({"s1": "0.43"}, {"s1": 0}, 1)
    assert anchor_vector({"s1": "0.43"}, {"s1": 0}, 1, graded=True) == pytest.approx([-0.14])
    wrong = SimpleNamespace(benchmark="arc", items=["s1"], item_sources={})
    with pytest.raises(EeeError, match="no records with evaluation_name 'arc'"):
        read_responses_files([samples], wrong)


def test_a_datastore_repo_on_the_hub_is_pulled_incrementally(tmp_path, monkeypatch):
    repo = "evaleval/EEE_datastore"
    local = tmp_path / "staged"
    write_eee(local, "org/a", {"s1": 1.0, "s2": 0.0})
    write_eee(local, "org/b", {"s1": 0.0, "s2": 1.0})
    path = store_with(tmp_path / "s.duckdb")
    spec = f"eee:hub:{repo}/data/demo-source"
    with serve_hub(monkeypatch, tmp_path) as hub:
        hub.commit(repo, repo_files(local))
        first = ingest_sources(path, [spec], fill_if_empty=False)
        assert (first.new, first.failed) == (4, 0)
        assert len(hub.downloads(repo)) == 4  # two aggregates and their samples files
        hub.clear()
        write_eee(local, "org/c", {"s1": 1.0, "s2": 1.0}, stamp=1750000100)
        hub.commit(repo, repo_files(local) | {"README.md": "the datastore"})
        second = ingest_sources(path, [spec], fill_if_empty=False)
        assert (second.new, second.skipped) == (2, 2)
        assert all("/org/c/" in p for p in hub.downloads(repo))  # only what is new
        assert len(hub.downloads(repo)) == 2
    assert len(stored(path)) == 6


def repo_files(root: Path) -> dict[str, bytes]:
    """The files under `root` by their repository path (`data/...`)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
