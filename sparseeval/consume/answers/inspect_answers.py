"""Inspect AI eval logs (`.eval` and `.json`), read without Inspect: one record per sample.

The layout followed (inspect_ai 0.3.x, `inspect_ai/log/_recorders/eval.py` and `json.py`,
checked on logs written by inspect-ai 0.3.285):
- `.eval`: a zip holding `header.json` (the log without samples: `status`, `eval.task`,
  `eval.model`, `eval.config.epochs`, `eval.scorers`), `samples/{id}_epoch_{n}.json` (one
  sample each: `id`, `epoch`, `input`, `target`, `choices`, `scores` {scorer: {`value`}},
  `error`), `summaries.json`, `reductions.json` and `_journal/`. While a run is still going
  there is no `header.json` yet, only `_journal/start.json`: such a log is `started`.
  Members are deflated or, since about 0.3.1xx, zstd-compressed (read with `zstandard`).
- `.json`: the whole log as one object, `samples` a list (`status` `started` while running).

Item identity: the sample's `id` (`Sample.id`, canonical text) plus a content hash,
`inspect_sample:{sha256}` of its input (chat messages as role and content only: their `id`s
are drawn per run), target and choices, so the same id naming another question is seen.

Epochs: only each sample's first epoch is read (`EPOCH_POLICY`). A set's anchors are run
once; later epochs are resamples of the same item, and reading one keeps every item's
answer a single draw, the same kind of draw a one-epoch run of the anchors gives `predict`.

Scores: `C` and `True` and 1 are correct; `I`, `N` (no answer, 0 in Inspect's own accuracy),
`False` and 0 are wrong. Anything between (`P` is Inspect's partial credit, 0.5) is a
graded score, read as it is (`0.43`): the store keeps it (a graded benchmark), and
`predict` takes it for a set of graded items and refuses it for a binary one
(`consume.answers.responses.sign`), never thresholding it.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sparseeval.consume.answers.jsontext import JsonTextError, loads
from sparseeval.consume.errors import SparseEvalError

EPOCH_POLICY = "first epoch"
CONTENT_HASH = "inspect_sample"  # the hash's name in `name:value` (consume.answers.identity)
STARTED = "started"  # a log whose run has not ended (no header.json / status started)
_ZSTD = 93  # zip compression method of zstandard
_JSON_HEAD = re.compile(rb'\A\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_SAMPLE_MEMBER = re.compile(r"samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json")
_WORDS = {"C": 1.0, "I": 0.0, "N": 0.0, "P": 0.5}


class InspectLogError(SparseEvalError, ValueError):
    """A file that cannot be read as an Inspect log; the message names it."""


@dataclass(frozen=True)
class InspectSample:
    """One sample of a log, first epoch: `correct` is `1`, `0`, a graded score (`0.43`) or
    None with a `problem`."""

    item: str
    epoch: int
    correct: str | None
    problem: str | None
    content_hash: str
    position: int  # 1-based, in the log's sample order
    raw_id: object = None


@dataclass
class InspectLog:
    """A log's header (`status`, `task`, `model`, `epochs`, `scorers`) and its samples."""

    path: Path
    status: str
    task: str
    model: str
    epochs: int = 1
    scorers: list[str] = field(default_factory=list)
    samples: list[InspectSample] = field(default_factory=list)
    n_other_epochs: int = 0  # samples of later epochs, not read (EPOCH_POLICY)
    scorer: str | None = None  # the scorer read
    order: dict[str, int] = field(default_factory=dict)  # item -> dataset position (0-based)

    def answers(self) -> Iterator[tuple[str, object, str]]:
        """(item, answer, where) per sample; errored ones are not answered (None); a graded
        score is given as it is (the set's item scale takes or refuses it)."""
        for s in self.samples:
            yield s.item, s.correct, f"{self.path}: sample {s.item}"


def inspect_answers(
    path: str | Path, anchor_set: object, ignore_hashes: bool = False
) -> Iterator[tuple[str, object, str]]:
    """(item, answer, where) of a log's samples for `predict`; a sample whose content hash
    differs from the set's (`inspect_sample:…` in its item sources) is another question,
    refused in one line unless `ignore_hashes`."""
    from sparseeval.consume.answers.identity import split_hash

    log = read_log(path)
    if log.status == STARTED:
        raise InspectLogError(f"{path}: its run has not ended (status started); wait for it")
    sources = getattr(anchor_set, "all_item_sources", None) or getattr(
        anchor_set, "item_sources", None) or {}  # fmt: skip
    bad = []
    for s in log.samples:
        src = sources.get(s.item)
        stored = split_hash(src.get("hash")) if isinstance(src, dict) else None
        if stored is not None and stored[0] == CONTENT_HASH and stored[1] != s.content_hash:
            bad.append(s.item)
    if bad and not ignore_hashes:
        shown = ", ".join(bad[:5]) + (f" (and {len(bad) - 5} more)" if len(bad) > 5 else "")
        raise InspectLogError(
            f"{path}: {len(bad)} answered item(s) have another content hash (input, target,"
            f" choices) than the set's ({shown}): other questions under the same ids (dataset"
            " or task version changed?); --ignore-hash-mismatch to score them anyway"
        )
    return log.answers()


def is_inspect_log(path: str | Path) -> bool:
    """Whether a file is an Inspect log: a `.eval` zip, or JSON opening `{"version", "status"`."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    if path.suffix.lower() == ".eval":
        return head.startswith(b"PK")
    return path.suffix.lower() == ".json" and bool(_JSON_HEAD.match(head.lstrip(b"\xef\xbb\xbf")))


def read_status(path: str | Path) -> str:
    """The log's status without reading its samples (`started` while the run goes on)."""
    return read_log(path, samples=False).status


def read_log(path: str | Path, samples: bool = True) -> InspectLog:
    """The log at `path` (`.eval` or `.json`); samples of the first epoch when `samples`."""
    path = Path(path)
    if not path.is_file():
        raise InspectLogError(f"{path}: no such file (an Inspect .eval or .json log)")
    if path.suffix.lower() == ".eval":
        return _read_eval(path, samples)
    return _read_json_log(path, samples)


def sample_hash(sample: dict) -> str:
    """`{sha256}` of a sample's input, target and choices (message ids left out)."""
    content = {
        "input": _stable_input(sample.get("input")),
        "target": sample.get("target"),
        "choices": sample.get("choices"),
    }
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def score_value(value: object) -> tuple[str | None, str | None]:
    """(`1` or `0`, None) for a binary score, (`0.43`, None) for a graded one strictly
    between 0 and 1, else (None, why it is not read)."""
    if isinstance(value, bool):
        return ("1" if value else "0"), None
    if isinstance(value, str) and value.strip().upper() in _WORDS:
        value = _WORDS[value.strip().upper()]
    if isinstance(value, int | float) and math.isfinite(value):
        if value in (0, 1):
            return str(int(value)), None
        if 0 < value < 1:
            return repr(float(value)), None
        return None, f"score {value:g} is outside [0, 1]"
    if isinstance(value, dict | list):
        return None, "score holds several values (a dict or list); not read"
    return None, f"not a score: {str(value)[:60]!r}"


# --------------------------------------------------------------------------- .eval


def _read_eval(path: Path, samples: bool) -> InspectLog:
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            if "header.json" in names:
                head = _member_json(path, z, "header.json")
            elif "_journal/start.json" in names:
                head = _member_json(path, z, "_journal/start.json") | {"status": STARTED}
            else:
                raise InspectLogError(f"{path}: no header.json or _journal/start.json in it")
            log = _header(path, head)
            if samples and log.status != STARTED:
                found = [(int(m["epoch"]), n) for n in names if (m := _SAMPLE_MEMBER.fullmatch(n))]
                first = min((e for e, _ in found), default=1)
                members = [n for e, n in found if e == first]  # later epochs: counted, not read
                log.n_other_epochs = len(found) - len(members)
                _add_samples(log, (_member_json(path, z, n) for n in members))
            return log
    except (zipfile.BadZipFile, EOFError) as exc:
        raise InspectLogError(f"{path}: not a readable .eval zip ({exc})") from None


def _member_json(path: Path, z: zipfile.ZipFile, name: str) -> object:
    info = z.getinfo(name)
    try:
        data = z.read(info)
    except NotImplementedError:  # zstd, on a Python whose zipfile lacks it
        if info.compress_type != _ZSTD:
            raise InspectLogError(f"{path}: {name}: unknown zip compression") from None
        data = _zstd_member(path, info)
    try:
        return loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, JsonTextError) as exc:
        raise InspectLogError(f"{path}: {name}: not JSON text ({exc})") from None


def _zstd_member(path: Path, info: zipfile.ZipInfo) -> bytes:
    """A zstd member's bytes, decompressed with `zstandard` and checked against its CRC."""
    try:
        import zstandard
    except ImportError:
        raise InspectLogError(
            f"{path}: a zstd-compressed .eval log (Inspect 0.3.1xx+); reading it needs the"
            " zstandard package (pip install zstandard; inspect-ai installs it)"
        ) from None
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        local = f.read(30)
        if local[:4] != b"PK\x03\x04":
            raise InspectLogError(f"{path}: {info.filename}: damaged zip entry")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        f.seek(info.header_offset + 30 + name_len + extra_len)
        raw = f.read(info.compress_size)
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(raw), read_across_frames=True
        )
        data = reader.read()
    except zstandard.ZstdError as exc:
        raise InspectLogError(f"{path}: {info.filename}: damaged zstd data ({exc})") from None
    if zlib.crc32(data) != info.CRC:
        raise InspectLogError(f"{path}: {info.filename}: damaged (CRC mismatch)")
    return data


# --------------------------------------------------------------------------- .json


def _read_json_log(path: Path, samples: bool) -> InspectLog:
    try:
        data = loads(path.read_bytes().decode("utf-8-sig"))
    except (UnicodeDecodeError, JsonTextError) as exc:
        raise InspectLogError(f"{path}: not a JSON Inspect log ({exc})") from None
    log = _header(path, data)
    if samples and log.status != STARTED:
        found = data.get("samples") if isinstance(data, dict) else None
        _add_samples(log, found if isinstance(found, list) else [])
    return log


# --------------------------------------------------------------------------- shared


def _header(path: Path, head: object) -> InspectLog:
    """The log's status, task, model, epochs and scorers from its header object."""
    ev = head.get("eval") if isinstance(head, dict) else None
    if not isinstance(ev, dict) or not isinstance(head.get("status"), str):
        raise InspectLogError(f"{path}: not an Inspect log (no status and eval header)")
    task, model = ev.get("task"), ev.get("model")
    if not isinstance(task, str) or not task or not isinstance(model, str) or not model:
        raise InspectLogError(f"{path}: its eval header names no task or no model")
    config = ev.get("config") if isinstance(ev.get("config"), dict) else {}
    scorers = [s["name"] for s in ev.get("scorers") or [] if isinstance(s, dict) and "name" in s]
    epochs = config.get("epochs") if isinstance(config.get("epochs"), int) else 1
    dataset = ev.get("dataset") if isinstance(ev.get("dataset"), dict) else {}
    ids = dataset.get("sample_ids") if isinstance(dataset.get("sample_ids"), list) else []
    order = {str(i): n for n, i in reversed(list(enumerate(ids)))}
    return InspectLog(path, head["status"], task, model, epochs, scorers, order=order)


def _add_samples(log: InspectLog, samples: Iterator[object] | list) -> None:
    """Append the first epoch of each sample id (in log order) to `log.samples`."""
    seen: set[str] = set()
    for sample in samples:
        if not isinstance(sample, dict) or "id" not in sample:
            raise InspectLogError(f"{log.path}: a sample without an id")
        item = str(sample["id"])
        if item in seen:
            log.n_other_epochs += 1
            continue
        seen.add(item)
        epoch = sample.get("epoch") if isinstance(sample.get("epoch"), int) else 1
        correct, problem = _sample_score(log, sample)
        log.samples.append(InspectSample(item, epoch, correct, problem, sample_hash(sample),
                                         len(log.samples) + 1, sample["id"]))  # fmt: skip


def _sample_score(log: InspectLog, sample: dict) -> tuple[str | None, str | None]:
    """The chosen scorer's value as `1`/`0`, or why there is none."""
    error = sample.get("error")
    scores = sample.get("scores") if isinstance(sample.get("scores"), dict) else {}
    if not scores:
        message = error.get("message") if isinstance(error, dict) else error
        return None, f"sample errored: {str(message)[:120]}" if error else "sample has no score"
    name = next((s for s in log.scorers if s in scores), next(iter(scores)))
    log.scorer = log.scorer or name
    score = scores[name]
    return score_value(score.get("value") if isinstance(score, dict) else score)


def _stable_input(value: object) -> object:
    """A sample's input with what is drawn per run (message ids) left out."""
    if not isinstance(value, list):
        return value
    return [
        {"role": m.get("role"), "content": _no_ids(m.get("content"))} if isinstance(m, dict) else m
        for m in value
    ]


def _no_ids(content: object) -> object:
    if isinstance(content, list):
        return [{k: v for k, v in c.items() if k != "id"} if isinstance(c, dict) else c
                for c in content]  # fmt: skip
    return content


__all__ = [
    "CONTENT_HASH",
    "EPOCH_POLICY",
    "STARTED",
    "InspectLog",
    "InspectLogError",
    "InspectSample",
    "inspect_answers",
    "is_inspect_log",
    "read_log",
    "read_status",
    "sample_hash",
    "score_value",
]
