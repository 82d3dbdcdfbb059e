"""Item identity from ingest to a published set: each item's hash and id kind are stored,
the matrix step writes them beside the matrix, and a set published from it carries them,
so `export-lm-eval` refuses opaque ids and `predict` refuses answers to other questions.

lm-eval samples lines are in lm-eval 0.4's layout (`lm_eval/evaluator.py` logs per doc
`doc_id`, `doc`, `target`, `arguments`, `resps`, `filtered_resps`, `filter`, `metrics`,
`doc_hash`, `prompt_hash`, `target_hash` and each metric's value).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sparseeval.cli.consumer import add_consumer_commands
from sparseeval.consume.answers import identity as ids
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.method.item_curves import fit_curves
from sparseeval.pipeline.identity import anchor_sources, identity_path
from sparseeval.pipeline.recipe import matrix_step
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.store import LmEvalRun, LongTable, Store, WideTable, ingest
from sparseeval.pipeline.store.item_identity import item_identity
from sparseeval.pipeline.versions import set_latest
from tests.helpers import publish_fit, tiny_fit

TS = "2024-05-01T12-00-00.123456"
N_DOCS = 60


def doc_hash(d: int) -> str:
    return f"{d:064x}"


def lm_eval_run(folder: Path, model: str, hashes=doc_hash, docs=range(N_DOCS)) -> Path:
    """One `--log_samples` run of arc_challenge over `docs`, with each doc's `doc_hash`."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"doc_id": d, "doc": {"id": f"q{d}"}, "target": 0, "filter": "none",
              "metrics": ["acc", "acc_norm"], "acc": 1.0, "acc_norm": float(d % 2),
              "doc_hash": hashes(d), "prompt_hash": "p" * 64, "target_hash": "t" * 64}
             for d in docs]  # fmt: skip
    path = folder / f"samples_arc_challenge_{TS}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    results = {"results": {"arc_challenge": {"acc_norm,none": 0.5}}, "model_name": model}
    (folder / f"results_{TS}.json").write_text(json.dumps(results))
    return folder


def long_table(path: Path, n_models: int = 300) -> Path:
    """Other models' ARC answers on the same ids, as a long table (no hashes)."""
    rng = np.random.default_rng(0)
    ability = rng.normal(size=(n_models, 1))
    correct = (ability + rng.normal(size=(n_models, N_DOCS)) > 0).astype(int)
    pl.DataFrame({
        "model": [f"org/m{i}" for i in range(n_models) for _ in range(N_DOCS)],
        "benchmark": "arc",
        "item": [str(d) for _ in range(n_models) for d in range(N_DOCS)],
        "correct": correct.ravel(),
    }).write_parquet(path)  # fmt: skip
    return path


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store.duckdb") as s:
        yield s


def test_lm_eval_items_keep_their_doc_hash_and_kind_tables_are_opaque(store, tmp_path):
    (r,) = ingest(store, LmEvalRun(lm_eval_run(tmp_path / "run", "org/a")))
    assert r.status == "ok"
    got = item_identity(store, "arc")
    assert got["7"] == {"hash": f"doc_hash:{doc_hash(7)}", "id_kind": ids.LM_EVAL_DOC}
    assert len(got) == N_DOCS
    wide = tmp_path / "gsm8k.csv"
    wide.write_text("model,914,3\norg/a,1,0\norg/b,0,1\n")
    ingest(store, WideTable(wide, "gsm8k"))
    opaque = {"hash": None, "id_kind": ids.OPAQUE}
    assert item_identity(store, "gsm8k") == {"914": opaque, "3": opaque}


def test_other_questions_under_stored_ids_are_said_and_the_stored_hash_kept(store, tmp_path):
    ingest(store, LmEvalRun(lm_eval_run(tmp_path / "a", "org/a")))
    changed = lm_eval_run(tmp_path / "b", "org/b", hashes=lambda d: doc_hash(d + (d < 3)))
    (r,) = ingest(store, LmEvalRun(changed))
    assert r.status == "ok" and r.n_new == N_DOCS
    assert "3 item(s) have another content hash than the one stored (kept the stored)" in r.message
    assert item_identity(store, "arc")["0"]["hash"] == f"doc_hash:{doc_hash(0)}"


def test_a_store_from_before_gets_the_kinds_of_what_it_reads_next(tmp_path):
    path = tmp_path / "old.duckdb"
    with Store.open(path) as s:
        ingest(s, LmEvalRun(lm_eval_run(tmp_path / "a", "org/a")))
        s.con.execute("ALTER TABLE items DROP COLUMN hash; ALTER TABLE items DROP COLUMN id_kind")
        s.con.execute("DELETE FROM meta WHERE key = 'schema_fingerprint'")  # not this schema's
    with Store.open(path, read_only=True) as s:  # read-only: the schema is not updated
        assert item_identity(s, "arc") == {}
    with Store.open(path) as s:  # opened for writing, the columns come back (unknown)
        assert set(item_identity(s, "arc")["0"].values()) == {None}
        ingest(s, LmEvalRun(lm_eval_run(tmp_path / "b", "org/b")))
        assert item_identity(s, "arc")["0"] == {"hash": f"doc_hash:{doc_hash(0)}",
                                                "id_kind": ids.LM_EVAL_DOC}  # fmt: skip


def run_cli(argv, capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="sparseeval")
    add_consumer_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([str(a) for a in argv])
    rc = args.func(args)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A store with one lm-eval run (doc hashes) and a long table; its matrix; an ARC set
    published with the identity the matrix step wrote."""
    home = tmp_path_factory.mktemp("home")
    settings = Settings.of(home=home)
    with Store.open(settings.paths.store_path) as s:
        ingest(s, LmEvalRun(lm_eval_run(home / "run", "org/lm-eval-model")))
        ingest(s, LongTable(long_table(home / "long.parquet")))
    info = matrix_step(settings.paths, settings.matrix, "arc")
    every = [str(d) for d in range(N_DOCS)]
    fitted = tiny_fit(seed=2, item_ids=every)
    anchors = [str(a) for a in fitted[2].anchor_ids_]
    curves = fit_curves(fitted[0].values, every, True, anchor_sources(info.path, every, "arc"))
    publish_fit(settings.paths.published_dir, "arc", fitted, curves=curves,
                item_sources=anchor_sources(info.path, anchors, "arc"))  # fmt: skip
    set_latest(settings.paths.published_dir, "arc", 1)
    return settings, info, anchors


def test_the_matrix_step_writes_the_identity_and_the_set_carries_it(published):
    settings, info, anchors = published
    stored = json.loads(identity_path(info.path).read_text())
    assert len(stored) == N_DOCS
    aset = load_anchor_set(settings.paths.published_dir, "arc")
    a = anchors[0]
    assert aset.item_sources[a] == {"task": "arc_challenge", "doc_id": int(a),
                                    "hash": f"doc_hash:{doc_hash(int(a))}",
                                    "id_kind": ids.LM_EVAL_DOC}  # fmt: skip


def test_predict_refuses_answers_to_other_questions_unless_told(published, tmp_path, capsys):
    settings, _, anchors = published
    bad = {int(anchors[0]), int(anchors[1])}
    other = lambda d: doc_hash(d + 1000 * (d in bad))  # noqa: E731
    run_dir = lm_eval_run(tmp_path / "new", "org/new", hashes=other, docs=map(int, anchors))
    argv = ["predict", "--anchor-set", settings.paths.published_dir, "--benchmark", "arc",
            "--responses", run_dir]  # fmt: skip
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "2 answered anchor(s) have another doc_hash than the set's" in err
    assert all(a in err for a in anchors[:2]) and ids.MISMATCH in err
    rc, out, err = run_cli([*argv, "--ignore-hash-mismatch"], capsys)
    assert rc == 0 and out.startswith("arc v1: estimated accuracy ")
    same = lm_eval_run(tmp_path / "same", "org/same", docs=map(int, anchors))
    rc, out, _ = run_cli([*argv[:-1], same], capsys)
    assert rc == 0 and f"from {len(anchors)}/{len(anchors)} anchors" in out


def test_answers_to_next_items_are_checked_as_the_anchors_are(published, tmp_path, capsys):
    settings, _, anchors = published
    extra = next(d for d in range(N_DOCS) if str(d) not in anchors)  # an item of next_items
    other = lambda d: doc_hash(d + 1000 * (d == extra))  # noqa: E731
    docs = [*map(int, anchors), extra]
    run = lm_eval_run(tmp_path / "new", "org/new", hashes=other, docs=docs)
    argv = ["predict", "--anchor-set", settings.paths.published_dir, "--benchmark", "arc",
            "--responses", run]  # fmt: skip
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"1 answered item(s) have another doc_hash than the set's ({extra})" in err
    same = lm_eval_run(tmp_path / "same", "org/same", docs=docs)
    rc, out, _ = run_cli([*argv[:-1], same], capsys)
    assert rc == 0 and out.startswith("arc v1: estimated accuracy ")


def test_export_refuses_opaque_ids_and_takes_an_id_map(tmp_path, capsys):
    root = tmp_path / "published"
    fitted = tiny_fit(seed=1, item_ids=[str(d) for d in range(N_DOCS)])
    anchors = [str(a) for a in fitted[2].anchor_ids_]
    opaque = {a: {"id_kind": ids.OPAQUE} for a in anchors}
    publish_fit(root, "arc", fitted, item_sources=opaque)
    set_latest(root, "arc", 1)
    out_file = tmp_path / "anchors.json"
    argv = ["export-lm-eval", "--anchor-set", root, "--benchmark", "arc", "--out", out_file]
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"arc: {len(anchors)} anchor id(s) are opaque" in err and "--id-map FILE.csv" in err
    assert not out_file.exists()
    id_map = tmp_path / "map.csv"
    id_map.write_text("item,doc_id\n" + "".join(f"{a},{100 + int(a)}\n" for a in anchors))
    rc, out, err = run_cli([*argv, "--id-map", id_map], capsys)
    assert rc == 0, err
    assert json.loads(out_file.read_text()) == {
        "arc_challenge": sorted(100 + int(a) for a in anchors)
    }
    assert "note:" not in err
    # the run of those docs: predict takes the same map (it asked for one it did not take)
    run_dir = lm_eval_run(tmp_path / "run", "org/new", docs=[100 + int(a) for a in anchors])
    predict = ["predict", "--anchor-set", root, "--benchmark", "arc", "--responses", run_dir]
    rc, out, err = run_cli(predict, capsys)
    assert rc == 2 and "--id-map" in err and len(err.strip().splitlines()) == 1
    rc, out, err = run_cli([*predict, "--id-map", id_map], capsys)
    assert rc == 0 and f"from {len(anchors)}/{len(anchors)} anchors" in out, err


def test_a_set_from_before_exports_with_a_note(tmp_path, capsys):
    root = tmp_path / "published"
    publish_fit(root, "arc", tiny_fit(seed=1, item_ids=[str(d) for d in range(N_DOCS)]))
    set_latest(root, "arc", 1)
    argv = ["export-lm-eval", "--anchor-set", root, "--benchmark", "arc", "--out",
            tmp_path / "a.json"]  # fmt: skip
    rc, _, err = run_cli(argv, capsys)
    assert rc == 0 and f"note: arc v1: {ids.UNKNOWN_NOTE}" in err


def test_suite_members_carry_the_identity_of_their_matrices(tmp_path, capsys):
    from sparseeval.cli import main
    from sparseeval.consume.sets.suite_set import SUITE, load_suite
    from sparseeval.method.synthetic import make_leaderboard
    from sparseeval.pipeline.identity import save_identity
    from sparseeval.pipeline.suite_publish import write_suite
    from sparseeval.pipeline.suite_recipe import fit_suite

    lb = make_leaderboard(300, {"arc": 40, "gsm8k": 30}, seed=1)
    settings = Settings.of(home=tmp_path, n_anchors=6, n_test=50, n_valid=50, n_calib=50,
                        refine_steps=1, epochs=40, patience=5, ensemble=1)  # fmt: skip
    paths = {b: str(tmp_path / f"{b}.npz") for b in lb}
    kinds = {"arc": ids.OPAQUE, "gsm8k": ids.ROW_INDEX}
    for b, m in lb.items():
        save_identity(paths[b], m.item_ids, {i: {"id_kind": kinds[b]} for i in m.item_ids})
    write_suite(tmp_path, fit_suite(lb, settings), settings, matrix_paths={"arc": paths["arc"]})
    set_latest(tmp_path, SUITE, 1)
    suite = load_suite(tmp_path)
    arc = suite.own["arc"]
    assert set(ids.id_kinds(arc.items, arc.item_sources).values()) == {ids.OPAQUE}
    gsm8k = suite.own["gsm8k"]  # no identity file given: unknown, as before
    assert set(ids.id_kinds(gsm8k.items, gsm8k.item_sources).values()) == {ids.UNKNOWN}
    # `anchors --benchmark suite` speaks of its members' ids, not of 'synthetic' ones
    assert main(["anchors", "--anchor-set", str(tmp_path), "--benchmark", SUITE]) == 0
    assert "opaque item ids, not lm-eval doc ids" in capsys.readouterr().err
