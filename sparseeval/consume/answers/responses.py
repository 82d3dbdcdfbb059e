"""A model's answers on anchor items: values, in-memory forms and files (NumPy-free).

Forms: {item: correct}, a DataFrame with columns `item` and `correct`, or a sequence in
anchor order. Files: CSV (`item,correct`), JSONL (`{"item", "correct"}` per line), JSON
(`{item: correct}` or a list of such objects), lm-eval `--log_samples` output and Inspect AI
logs (`.eval`, `.json`; `inspect_answers`), Every Eval Ever `{uuid}_samples.jsonl` files and
HELM run folders (one model's; `helm_answers`).
`correct` is 0/1, true/false or -1/+1; empty, None and NaN mean "not answered". A set of
graded items (its manifest's `item_scale`) also takes a score strictly between 0 and 1, read
as 2*score - 1 (0/1 are its ends, so a binary answer is a graded one too); a binary set
refuses such a score in one line, never thresholds it.
Files are UTF-8 (a leading byte-order mark is fine). An anchor answered twice with
different answers (in one file or across files) is refused; identical repeats are fine.
Messages built from file content go through `printable` (no raw control characters).
"""

from __future__ import annotations

import codecs
import csv
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sparseeval.consume.answers.ids import MAX_ITEM_LEN, IdError, canonical_id
from sparseeval.consume.answers.jsontext import JsonTextError, loads, repeated_keys
from sparseeval.consume.answers.sniff import compressed_message, layout_hint, shown_columns
from sparseeval.consume.errors import SparseEvalError

# The answer words, read alike by `predict` and the store (sql/validate.sql gets these lists):
# case-insensitive, after trimming spaces.
CORRECT_WORDS = ("1", "1.0", "+1", "+1.0", "true", "t")
WRONG_WORDS = ("0", "0.0", "-0", "-0.0", "+0", "+0.0", "-1", "-1.0", "false", "f")
_TEXT_SIGNS = dict.fromkeys(CORRECT_WORDS, 1.0) | dict.fromkeys(WRONG_WORDS, -1.0)
_NOT_ANSWERED = {"", "nan", "none", "null", "na"}
# A set's item scale (manifest `item_scale`; absent: binary): `graded` items have a score in
# [0, 1], read as 2*score - 1 (`method.matrix`).
BINARY, GRADED = "binary", "graded"
ITEM_SCALES = (BINARY, GRADED)


class ResponsesError(SparseEvalError, ValueError):
    """A model's answers on the anchors cannot be used (missing, unknown or bad values)."""


_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: object) -> str:
    """`text` with C0/C1 control characters escaped repr-style (`\\x1b`, `\\n`).

    Use it on anything taken from a file (item ids, header names, paths, values) before
    it goes into a message: an escape sequence in a header must not reach the terminal,
    and a message stays one line.
    """
    return _CONTROLS.sub(lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"), str(text))


def sign(v: Any, where: str, graded: bool = False) -> float:
    """+1 for correct, -1 for wrong, NaN for not answered; with `graded`, 2*score - 1 for a
    score strictly between 0 and 1 (refused in one line when not `graded`); anything else
    is an error."""
    if v is None:
        return math.nan
    text = isinstance(v, str)
    if text:
        t = v.strip().lower()
        if t in _NOT_ANSWERED:
            return math.nan
        if t in _TEXT_SIGNS:
            return _TEXT_SIGNS[t]
    try:
        f = float(v.strip() if text else v)
    except (TypeError, ValueError):
        raise _bad_answer(v, where, graded) from None
    if math.isnan(f) and not text:
        return math.nan
    if f == 1.0 and not text:
        return 1.0
    if f in (0.0, -1.0) and not text:
        return -1.0
    if 0.0 < f < 1.0:
        if graded:
            return 2.0 * f - 1.0
        raise ResponsesError(
            f"answer for {printable(where)} is a graded score ({printable(repr(v))}), but this"
            " set's items are binary: answer 0/1, true/false or -1/+1 (a graded benchmark's"
            " set is fit on graded scores)"
        )
    raise _bad_answer(v, where, graded)


def _bad_answer(v: Any, where: str, graded: bool = False) -> ResponsesError:
    expected = "a score in [0, 1] (or -1/+1, true/false)" if graded else "0/1, true/false or -1/+1"
    return ResponsesError(
        f"answer for {printable(where)} is {printable(repr(v))}; expected {expected}"
    )


def as_pairs(responses: Any) -> list[tuple[Any, Any]] | None:
    """(item, value) pairs from a dict or a DataFrame; None for a plain sequence."""
    if isinstance(responses, Mapping):
        return list(responses.items())
    cols = getattr(responses, "columns", None)
    if cols is not None:
        names = [str(c) for c in cols]
        if "item" not in names or "correct" not in names:
            raise ResponsesError(
                f"responses table needs columns item and correct, got {printable(names)}"
            )
        items, values = responses["item"], responses["correct"]
        items = items.to_list() if hasattr(items, "to_list") else list(items)
        values = values.to_list() if hasattr(values, "to_list") else list(values)
        return list(zip(items, values, strict=True))
    if isinstance(responses, str | bytes):
        raise ResponsesError("responses must be a dict, a DataFrame or a sequence, not a string")
    return None


def item_id(item: object, where: str) -> str:
    """An answered item's id in canonical form (`answers.ids`); ResponsesError if it has none."""
    try:
        return canonical_id(item, "item id")
    except IdError as exc:
        raise ResponsesError(f"{printable(where)}: {exc}") from None


# --------------------------------------------------------------------------- files


def read_responses_files(
    files: Iterable[str | Path], anchor_set: Any, lm_eval_options: Mapping | None = None
) -> dict[str, object]:
    """{item: correct} from CSV / JSONL / JSON files and lm-eval samples files or folders.

    An anchor answered more than once with different answers (rows of one file, or two
    files) is refused with a `ResponsesError` naming the anchors; repeats of the same
    answer, and a blank next to an answer, are fine. Undecodable (non-UTF-8) files are
    refused naming the file, byte offset and line.
    lm_eval_options: `metric`, `filter`, `task` for lm-eval output (see `consume.lm_eval.harness`).
    """
    from sparseeval.consume.answers.eee_answers import eee_answers, is_eee_samples
    from sparseeval.consume.answers.helm_answers import helm_answers, is_helm_run
    from sparseeval.consume.answers.inspect_answers import inspect_answers, is_inspect_log
    from sparseeval.consume.lm_eval.harness import is_samples_file

    native = ((is_eee_samples, eee_answers), (is_helm_run, helm_answers),
              (is_inspect_log, inspect_answers))  # fmt: skip
    merged = MergedAnswers(set(getattr(anchor_set, "known_items", anchor_set.items)))
    lm_eval_paths = []
    for f in map(Path, files):
        if not f.exists():
            raise ResponsesError(f"{printable(f)}: no such file or folder")
        if not (f.is_file() or f.is_dir()):
            raise ResponsesError(f"{printable(f)}: not a regular file or folder (a pipe?)")
        read = next((read for test, read in native if test(f)), None)
        if read is not None:
            ignore = bool((lm_eval_options or {}).get("ignore_hash_mismatch"))
            for item, value, where in read(f, anchor_set, ignore):
                merged.add(item, value, where)
            continue
        try:
            samples = f.is_dir() or is_samples_file(f)
        except UnicodeDecodeError:
            samples = False  # the reader below names the file and the byte
        if samples:
            lm_eval_paths.append(f)
        elif f.suffix.lower() in _READERS:
            for item, value, where in _READERS[f.suffix.lower()](f):
                merged.add(item, value, where)
        else:
            raise ResponsesError(
                f"{printable(f)}: unknown responses format (use .csv, .jsonl, .json)"
            )
    if lm_eval_paths:
        where = ", ".join(printable(p) for p in lm_eval_paths)
        for item, value in _read_lm_eval(lm_eval_paths, anchor_set, lm_eval_options).items():
            merged.add(item, value, where)
    merged.check()
    if not merged.values and merged.n_other:  # another benchmark's file, or other ids
        raise ResponsesError(none_of_message(merged.n_other, merged.other, anchor_set.items))
    return merged.values


def read_models_answers(
    paths: Iterable[str | Path], anchor_set: Any, options: Mapping | None = None
) -> dict[str, dict[str, object]]:
    """{model: {item: correct}} of several models' native results, for `check`: Inspect logs,
    Every Eval Ever samples files and HELM run folders, given as files or as folders holding
    them. Each model's logs, files or runs are read together as `predict` reads one model's
    (`read_responses_files`: conflicts and other questions under the set's ids refused)."""
    by_model: dict[str, list[Path]] = {}
    for path in map(Path, paths):
        units = list(_native_units(path))
        if not units:
            raise ResponsesError(
                f"{printable(path)}: no Inspect log, Every Eval Ever samples file or HELM run"
                " in it (a table of answers is a .csv)"
            )
        for unit, model in units:
            by_model.setdefault(model, []).append(unit)
    return {m: read_responses_files(units, anchor_set, options) for m, units in by_model.items()}


def _native_units(path: Path) -> Iterator[tuple[Path, str]]:
    """(file or run folder, its model) of the native results at `path`."""
    from sparseeval.consume.answers.eee_answers import is_eee_samples, read_records
    from sparseeval.consume.answers.helm_answers import is_helm_run, read_spec, run_folders
    from sparseeval.consume.answers.inspect_answers import is_inspect_log, read_log

    if not path.exists():
        raise ResponsesError(f"{printable(path)}: no such file or folder")
    if is_helm_run(path):
        yield from ((run, read_spec(run).model) for run in run_folders(path))
        return
    files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
    for f in files:
        if is_eee_samples(f):
            yield f, next((r.model for r in read_records(f)), "")
        elif is_inspect_log(f):
            yield f, read_log(f, samples=False).model


def none_of_message(n: int, yours: Sequence[str], anchors: Sequence[str]) -> str:
    """The line for `n` answers (ids e.g. `yours`) of which none is one of `anchors`."""
    mine = ", ".join(printable(i) for i in yours[:3])
    theirs = ", ".join(printable(i) for i in anchors[:3])
    return (
        f"none of your {n:,} answers' ids are this set's anchors (yours: {mine}, ...;"
        f" the set's: {theirs}, ...): answers of another benchmark, or ids of another kind?"
        " (`sparseeval anchors` lists the ids this set asks for)"
    )


def _read_lm_eval(paths: list[Path], anchor_set: Any, options: Mapping | None) -> dict:
    from sparseeval.consume.answers.identity import hash_mismatches, mismatch_message
    from sparseeval.consume.lm_eval.harness import LmEvalError, read_responses

    opts = {k: v for k, v in dict(options or {}).items() if v is not None}
    ignore_hashes = bool(opts.pop("ignore_hash_mismatch", False))
    hashes: dict[str, str] = {}
    origins: dict[str, Path] = {}
    try:
        sources = _mapped_sources(anchor_set, opts.pop("id_map", None), opts.get("task"))
        answers = read_responses(
            paths, items=getattr(anchor_set, "known_items", anchor_set.items),
            benchmark=anchor_set.benchmark, hashes=hashes, item_sources=sources,
            origins=origins, **opts,
        )  # fmt: skip
        if not ignore_hashes:
            bad = hash_mismatches(sources, hashes)
            if bad:
                what = "anchor(s)" if set(anchor_set.items).issuperset(bad) else "item(s)"
                where = printable(origins[bad[0]]) if bad[0] in origins else None
                raise LmEvalError(mismatch_message(anchor_set.benchmark, bad, what, where))
        return answers
    except UnicodeDecodeError as e:
        raise ResponsesError(_undecodable_among(paths, e)) from None
    except LmEvalError as e:
        if printable(e) == str(e):
            raise
        raise type(e)(printable(e)) from None


def _mapped_sources(anchor_set: Any, id_map: str | None, task: str | None) -> Mapping | None:
    """The set's item sources, with `--id-map`'s rows (the map export-lm-eval took) over them."""
    from sparseeval.consume.answers import identity as ids
    from sparseeval.consume.lm_eval.taskmap import default_task

    sources = getattr(anchor_set, "all_item_sources", anchor_set.item_sources)
    if not id_map:
        return sources
    mapping = ids.read_id_map(id_map, task or default_task(anchor_set.benchmark),
                              anchor_set.benchmark)  # fmt: skip
    items = list(getattr(anchor_set, "known_items", anchor_set.items))
    return ids.with_id_map(items, sources, mapping)


class MergedAnswers:
    """Answers from several sources; conflicting answers on an anchor are collected.

    Only the set's items are kept (`values`: anchors, and with item curves the others);
    other items are checked
    for a canonical id and dropped, so memory follows the anchors, not the file.

    Item ids are canonicalized (`consume.answers.ids`), so `'1 '` and `'1'` are one item; an id
    that has no canonical form (a control character) is refused naming where it was read.
    `check()` raises the `ResponsesError` naming every conflicting anchor and its sources.
    """

    def __init__(self, anchors: set[str]) -> None:
        self.anchors = anchors
        self.values: dict[str, object] = {}
        self.seen: dict[str, tuple[object, str]] = {}  # item -> (answer, where)
        self.conflicts: dict[str, list[str]] = {}
        self.n_other, self.other = 0, []  # answers of other ids: how many, the first few

    def add(self, item: object, value: object, where: str) -> None:
        item = item_id(item, where)
        if item not in self.anchors:  # never read: not kept (a 50 MB file stays small)
            self.n_other += 1
            if len(self.other) < 3:
                self.other.append(item)
            return
        if item not in self.values:
            self.values[item] = value
            self.seen[item] = (value, where)
            return
        old, old_where = self.seen[item]
        a, b = _comparable(old), _comparable(value)
        if b is None:  # not answered: keeps the earlier answer
            return
        if a is None:
            self.values[item], self.seen[item] = value, (value, where)
        elif a != b and item in self.anchors:
            seen = self.conflicts.setdefault(item, [f"{old_where}: {printable(repr(old))}"])
            seen.append(f"{where}: {printable(repr(value))}")

    def check(self) -> None:
        if not self.conflicts:
            return
        shown = [f"{printable(item)} ({'; '.join(w)})" for item, w in self.conflicts.items()]
        more = f", ... (+{len(shown) - 5} more)" if len(shown) > 5 else ""
        raise ResponsesError(
            f"conflicting answers for {len(shown)} anchor(s): {', '.join(shown[:5])}{more}; "
            "keep one answer per anchor"
        )


def _comparable(value: object) -> object:
    """The answer as +1/-1 (None when not answered); an unreadable value as its text."""
    try:
        s = sign(value, "")
    except ResponsesError:
        return ("text", str(value).strip())
    return None if math.isnan(s) else s


def _read_text(path: Path) -> str:
    """The file as text (UTF-8, an optional byte-order mark dropped); one-line error if not."""
    if (packed := compressed_message(path)) is not None:
        raise ResponsesError(printable(packed))
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        start = e.start + (len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0)
        raise ResponsesError(_not_utf8(path, data, start)) from None


def _not_utf8(path: Path, data: bytes, start: int) -> str:
    line = data.count(b"\n", 0, start) + 1
    return (
        f"{printable(path)}: not UTF-8 text (byte {start}, line {line}: "
        f"{data[start : start + 1]!r}); save it as UTF-8"
    )


def _undecodable_among(paths: list[Path], error: UnicodeDecodeError) -> str:
    """Which of the lm-eval files (or files in folders) is not UTF-8, and where."""
    for p in paths:
        candidates = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
        for q in candidates:
            if q.suffix.lower() not in (".json", ".jsonl"):
                continue
            data = q.read_bytes()
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as e:
                return _not_utf8(q, data, e.start)
    names = ", ".join(printable(p) for p in paths)
    return f"{names}: not UTF-8 text ({printable(error.reason)}); save it as UTF-8"


def _text_lines(path: Path) -> Iterator[str]:
    """The file's lines, streamed (UTF-8, an optional byte-order mark dropped); one-line
    error naming the byte and line if it is not UTF-8. Memory stays bounded by a line."""
    if (packed := compressed_message(path)) is not None:
        raise ResponsesError(printable(packed))
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            yield from f
    except UnicodeDecodeError:
        _read_text(path)  # raises the error naming the byte and line
        raise


def _read_csv(path: Path) -> Iterator[tuple[str, object, str]]:
    """(item, answer, where) of each row; a CSV error (a field past the csv module's limit,
    e.g. a 1 MB item id) is one line naming the file and line."""
    reader = csv.DictReader(_text_lines(path))
    try:
        yield from _csv_rows(path, reader)
    except csv.Error as exc:
        line = reader.line_num + 1  # the row being read
        why = str(exc)
        if "field limit" in why:
            why = (f"a field longer than {csv.field_size_limit():,} characters (an item id is"
                   f" at most {MAX_ITEM_LEN})")  # fmt: skip
        raise ResponsesError(f"{printable(path)}:{line}: not a readable CSV row: {why}") from None


def _csv_rows(path: Path, reader: csv.DictReader) -> Iterator[tuple[str, object, str]]:
    cols = [c.strip() for c in reader.fieldnames or []]
    if "item" not in cols or "correct" not in cols:
        raise ResponsesError(
            f"{printable(path)}: needs a header with columns item,correct"
            f" (got {printable(shown_columns(cols))})" + layout_hint(cols)
        )
    twice = [c for c in ("item", "correct") if cols.count(c) > 1]
    if twice:
        raise ResponsesError(
            f"{printable(path)}: line 1: repeated column(s) {', '.join(twice)}; keep one"
        )
    reader.fieldnames = cols
    for row in reader:
        yield str(row["item"]).strip(), row["correct"], f"{printable(path)}:{reader.line_num}"


def _read_jsonl(path: Path) -> Iterator[tuple[str, object, str]]:
    for n, line in enumerate(_text_lines(path), 1):
        if not line.strip():
            continue
        try:
            rec = loads(line)
        except JsonTextError as e:
            raise ResponsesError(f"{printable(path)}:{n}: not valid JSON ({e})") from None
        if not isinstance(rec, dict) or "item" not in rec or "correct" not in rec:
            raise ResponsesError(f"{printable(path)}:{n}: expected an object with item and correct")
        _refuse_twice(repeated_keys(rec) * 2, f"{printable(path)}:{n}")
        yield str(rec["item"]), rec["correct"], f"{printable(path)}:{n}"


def _refuse_twice(keys: list[str], where: str) -> None:
    """A record naming `item` or `correct` twice has two answers: refused."""
    twice = [k for k in ("item", "correct") if keys.count(k) > 1]
    if twice:
        raise ResponsesError(f"{where}: repeated key(s) {', '.join(twice)}; keep one")


class _Pairs(list):
    """A JSON object as its (key, value) pairs, so that repeated keys are seen."""


def _read_json(path: Path) -> Iterator[tuple[str, object, str]]:
    text = _read_text(path)  # its own one-line errors (not UTF-8 text), never cut short here
    try:
        data = json.loads(text, object_pairs_hook=_Pairs)
    except json.JSONDecodeError as e:
        raise ResponsesError(
            f"{printable(path)}: not valid JSON ({e.msg}, line {e.lineno})"
        ) from None
    except (RecursionError, ValueError) as e:  # deep nesting, a 5,000-digit number
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e).splitlines()[0]
        raise ResponsesError(f"{printable(path)}: not valid JSON ({why[:120]})") from None
    where = printable(path)
    if isinstance(data, _Pairs):
        nested = next((k for k, v in data if isinstance(v, list)), None)  # _Pairs: a list
        if nested is not None:
            raise ResponsesError(
                f"{where}: key {printable(repr(nested))[:60]} holds an object or a list, not "
                "an answer; expected {item: correct} at the top level (unwrap the answers)"
            )
        for k, v in data:
            yield str(k), v, where
        return
    if isinstance(data, list) and all(isinstance(r, _Pairs) for r in data):
        records = [dict(r) for r in data]
        if all("item" in r for r in records):
            for n, (pairs, r) in enumerate(zip(data, records, strict=True)):
                _refuse_twice([k for k, _ in pairs], f"{where}[{n}]")
                yield str(r["item"]), r.get("correct"), f"{where}[{n}]"
            return
    raise ResponsesError(f"{where}: expected {{item: correct}} or a list of {{item, correct}}")


_READERS = {".csv": _read_csv, ".jsonl": _read_jsonl, ".json": _read_json}


__all__ = [
    "BINARY",
    "CORRECT_WORDS",
    "GRADED",
    "ITEM_SCALES",
    "WRONG_WORDS",
    "MergedAnswers",
    "ResponsesError",
    "as_pairs",
    "item_id",
    "none_of_message",
    "printable",
    "read_models_answers",
    "read_responses_files",
    "sign",
]
