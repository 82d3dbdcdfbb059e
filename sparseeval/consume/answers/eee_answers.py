"""Every Eval Ever (EEE) records: instance-level `{uuid}_samples.jsonl` and their aggregate.

The layout followed (github.com/evaleval/every_eval_ever, schema 0.3.0:
`every_eval_ever/schemas/eval.schema.json`, `instance_level_eval.schema.json`, and its
frozen example `tests/data/skill_reference_conversion/`): the datastore
(huggingface.co/datasets/evaleval/EEE_datastore) keeps `data/{collection}/{developer}/
{model}/{uuid}.json` (the aggregate: `evaluation_id`, `model_info.id`, and
`detailed_evaluation_results` with the samples file's `checksum`, `hash_algorithm` and
`total_rows`) beside `{uuid}_samples.jsonl` (one record per line: `evaluation_id`,
`model_id`, `evaluation_name`, `sample_id`, `sample_hash`, `evaluation.score` and
`evaluation.is_correct`).

Item identity: `sample_id`, with `sample_hash` (sha256 of the input's raw text and
reference) as its content hash, `eee_sample_hash:…`. The benchmark is the record's
`evaluation_name`; of a sample scored by several metrics (one record per
`evaluation_result_id`) the benchmark's first result is read (`one_result`). A record is
read as `1`/`0` from a binary `evaluation.score` (or, with no score, from `is_correct`), and
a graded score (0 < score < 1) as it is (`0.43`: the store keeps it, `predict` takes it for
a set of graded items only); a binary score that `is_correct` contradicts is refused. A samples
file whose bytes differ from the aggregate's checksum (changed or cut short) is refused whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sparseeval.consume.answers.inspect_answers import score_value
from sparseeval.consume.answers.jsontext import JsonTextError, loads
from sparseeval.consume.errors import SparseEvalError

SAMPLES_SUFFIX = "_samples.jsonl"
CONTENT_HASH = "eee_sample_hash"  # the hash's name in `name:value` (consume.answers.identity)


class EeeError(SparseEvalError, ValueError):
    """A file that cannot be read as Every Eval Ever records; the message names it."""


@dataclass(frozen=True)
class EeeRecord:
    """One instance record: `correct` is `1`, `0`, a graded score (`0.43`) or None with a
    `problem`."""

    line: int
    model: str
    benchmark: str
    item: str
    correct: str | None
    problem: str | None
    sample_hash: str | None
    raw: str
    result_id: str | None = None  # evaluation_result_id: the aggregate result (metric) it feeds


@dataclass(frozen=True)
class Aggregate:
    """What a samples file's aggregate says: its model, evaluation id and checksum."""

    path: Path
    model: str
    evaluation_id: str
    checksum: str | None
    hash_algorithm: str
    total_rows: int | None


def is_eee_samples(path: str | Path) -> bool:
    """Whether a file is an EEE instance-level samples file (`{uuid}_samples.jsonl`)."""
    return Path(path).name.endswith(SAMPLES_SUFFIX) and Path(path).is_file()


def aggregate_path(samples: Path) -> Path:
    """The aggregate `{uuid}.json` beside a `{uuid}_samples.jsonl`."""
    return samples.with_name(samples.name[: -len(SAMPLES_SUFFIX)] + ".json")


def read_aggregate(path: Path) -> Aggregate:
    """The aggregate's model, evaluation id and samples checksum; EeeError if unreadable."""
    try:
        data = loads(path.read_bytes().decode("utf-8-sig"))
    except OSError as exc:
        raise EeeError(f"{path}: cannot read the aggregate ({exc.strerror})") from None
    except (UnicodeDecodeError, JsonTextError) as exc:
        raise EeeError(f"{path}: not a JSON aggregate ({exc})") from None
    info = data.get("model_info") if isinstance(data, dict) else None
    model = info.get("id") if isinstance(info, dict) else None
    if not isinstance(model, str) or not isinstance(data.get("evaluation_id"), str):
        raise EeeError(f"{path}: not an EEE aggregate (no evaluation_id or model_info.id)")
    detail = data.get("detailed_evaluation_results")
    detail = detail if isinstance(detail, dict) else {}
    rows = detail.get("total_rows")
    return Aggregate(path, model, data["evaluation_id"], detail.get("checksum"),
                     str(detail.get("hash_algorithm") or "sha256"),
                     rows if isinstance(rows, int) else None)  # fmt: skip


def check_checksum(samples: Path, agg: Aggregate) -> None:
    """EeeError when the samples file's bytes are not the ones the aggregate names."""
    if agg.checksum is None:
        return
    if agg.hash_algorithm not in ("sha256", "md5"):
        raise EeeError(f"{agg.path}: unknown hash_algorithm {agg.hash_algorithm!r}")
    digest = hashlib.new(agg.hash_algorithm, samples.read_bytes()).hexdigest()
    if digest != agg.checksum:
        raise EeeError(
            f"{samples}: its {agg.hash_algorithm} is not the checksum its aggregate"
            f" {agg.path.name} names: changed or cut short since (read once they agree)"
        )


def read_records(samples: Path, agg: Aggregate | None = None) -> Iterator[EeeRecord]:
    """The samples file's records (one per non-blank line); EeeError for a line that is no
    JSON object, or whose evaluation_id is not the aggregate's."""
    with open(samples, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError:
                raise EeeError(f"{samples}: line {n}: not UTF-8 text") from None
            if text.strip():
                yield _record(samples, n, text, agg)


def eee_answers(
    path: str | Path, anchor_set: object, ignore_hashes: bool = False
) -> Iterator[tuple[str, object, str]]:
    """(item, answer, where) of a samples file's records of the set's benchmark, for
    `predict` (a graded score as it is: the set's item scale takes or refuses it); another
    `sample_hash` than the set's is refused."""
    from sparseeval.consume.answers.identity import split_hash

    path = Path(path)
    benchmark = getattr(anchor_set, "benchmark", None)
    sources = getattr(anchor_set, "item_sources", None) or {}
    records = one_result([r for r in read_records(path) if r.benchmark == benchmark])[0]
    if not records:
        raise EeeError(f"{path}: no records with evaluation_name {benchmark!r}")
    bad = [
        r.item for r in records
        if isinstance(src := sources.get(r.item), dict) and r.sample_hash
        and (stored := split_hash(src.get("hash"))) is not None
        and stored[0] == CONTENT_HASH and stored[1] != r.sample_hash
    ]  # fmt: skip
    if bad and not ignore_hashes:
        raise EeeError(
            f"{path}: {len(bad)} answered item(s) have another sample_hash than the set's"
            f" ({', '.join(bad[:5])}): other questions under the same ids;"
            " --ignore-hash-mismatch to score them anyway"
        )
    for r in records:
        yield r.item, r.correct, f"{path}:{r.line}"


def _record(samples: Path, n: int, text: str, agg: Aggregate | None) -> EeeRecord:
    where = f"{samples}: line {n}"
    try:
        rec = loads(text)
    except JsonTextError as exc:
        raise EeeError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(rec, dict):
        raise EeeError(f"{where}: not a JSON object")
    if agg is not None and rec.get("evaluation_id") != agg.evaluation_id:
        raise EeeError(f"{where}: evaluation_id is not its aggregate's ({agg.evaluation_id})")
    correct, problem = _correctness(rec.get("evaluation"))
    return EeeRecord(
        n, str(rec.get("model_id") or ""), str(rec.get("evaluation_name") or ""),
        str(rec.get("sample_id") or ""), correct, problem,
        _text(rec.get("sample_hash")),
        text.rstrip("\n")[:2000], _text(rec.get("evaluation_result_id")),
    )  # fmt: skip


def one_result(records: list[EeeRecord]) -> tuple[list[EeeRecord], int]:
    """(the records of each benchmark's first `evaluation_result_id`, how many others).

    A sample scored by several metrics has one record per metric (the schema's fan-out, e.g.
    HELM's exact_match, quasi_exact_match and f1_score); the first result seen per
    evaluation_name is read, so a sample is never read twice under one benchmark."""
    first: dict[str, str | None] = {}
    kept = []
    for r in records:
        if first.setdefault(r.benchmark, r.result_id) == r.result_id:
            kept.append(r)
    return kept, len(records) - len(kept)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _correctness(evaluation: object) -> tuple[str | None, str | None]:
    """(`1`/`0` or a graded `0.43`, None) from `evaluation.score` (else `is_correct`), or
    (None, why not); a graded score is not checked against `is_correct` (a judge's
    threshold)."""
    if not isinstance(evaluation, dict):
        return None, "no evaluation object"
    score, is_correct = evaluation.get("score"), evaluation.get("is_correct")
    if score is None:
        if isinstance(is_correct, bool):
            return ("1" if is_correct else "0"), None
        return None, "no evaluation.score or is_correct"
    correct, problem = score_value(score)
    binary = correct in ("0", "1")
    if binary and isinstance(is_correct, bool) and is_correct != (correct == "1"):
        return None, f"evaluation.score {score} but is_correct {str(is_correct).lower()}"
    return correct, problem


__all__ = [
    "CONTENT_HASH",
    "SAMPLES_SUFFIX",
    "Aggregate",
    "EeeError",
    "EeeRecord",
    "aggregate_path",
    "check_checksum",
    "eee_answers",
    "is_eee_samples",
    "one_result",
    "read_aggregate",
    "read_records",
]
