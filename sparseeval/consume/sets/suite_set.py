"""A published suite anchor set: every benchmark's anchors read together (NumPy only).

    suite = load_suite(".sparseeval/published")
    suite.predict({"arc": arc_answers, "gsm8k": gsm8k_answers, ...})
    # {"arc": Estimate, ..., "average": Estimate}; one benchmark alone -> its own reader

The suite is published like any anchor set, as benchmark `suite` (`published/suite/vN/`,
one manifest sealing every file, promotion by `latest`, optional signature). Its
top-level anchor set reads every benchmark's anchors (item ids `{benchmark}/{item}`) and
estimates the suite average; `manifest["suite"]["members"][b]` describes two more readers
per benchmark, each in its own folder with its own interval: `joint` (reads every anchor)
and `own` (reads only b's anchors: the fallback when b is answered alone).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sparseeval.consume.answers.responses import (
    BINARY,
    MergedAnswers,
    ResponsesError,
    as_pairs,
    printable,
)
from sparseeval.consume.scoring.estimate import Estimate
from sparseeval.consume.scoring.flags import KEY, disagreement, widened
from sparseeval.consume.scoring.inference import WEIGHTS_FILE, load_predictor
from sparseeval.consume.scoring.next_items import KEY as CURVES_KEY
from sparseeval.consume.sets.anchorset import AnchorSet, load_anchor_set
from sparseeval.consume.sets.fields import Manifest
from sparseeval.consume.sets.files import check_npz_size, load_curves
from sparseeval.consume.sets.layout import LATEST, AnchorSetError
from sparseeval.consume.sets.shape import check_arrays, check_reader

SUITE = "suite"
AVERAGE = "average"


def joint_item(benchmark: str, item: str) -> str:
    """The suite's id of one benchmark's anchor item."""
    return f"{benchmark}/{item}"


@dataclass
class SuiteAnchorSet:
    """The suite average and, per benchmark, a joint reader and its own (fallback) reader."""

    average: AnchorSet
    joint: dict[str, AnchorSet]
    own: dict[str, AnchorSet]

    @property
    def benchmarks(self) -> list[str]:
        return list(self.own)

    @property
    def version(self) -> int:
        return self.average.version

    def items(self, benchmark: str) -> list[str]:
        """The anchor items a model must answer on `benchmark`."""
        return self.own[self._known(benchmark)].items

    def predict(self, answers: Mapping[str, object], allow_missing: bool = False) -> dict:
        """Estimates per answered benchmark, plus the suite "average" when all are answered.

        answers: {benchmark: responses}, each as `AnchorSet.predict` takes them (a dict
        {item: correct}, an item/correct table, or a sequence in anchor order). With every
        benchmark answered each is read from all anchors; otherwise each given benchmark
        falls back to its own reader and there is no average. Answers on a benchmark's
        other items (its own set's `next_items`) correct that benchmark's estimate
        (`AnchorSet.predict`); the average stays the joint readers'.
        """
        for b in answers:
            self._known(b)
        if set(answers) != set(self.benchmarks):
            return {b: _read(self.own[b], r, allow_missing, b) for b, r in answers.items()}
        joint = self.merge(
            (b, [(joint_item(b, item), v) for item, v in self._pairs(b, r)])
            for b, r in answers.items()
        )
        out: dict[str, Estimate] = {}
        disagree: list[str] = []
        for b in self.benchmarks:
            est = _read(self.joint[b], joint, allow_missing)
            line = disagreement(est, _read(self.own[b], answers[b], allow_missing, b))
            width = float(self.joint[b].conformal.halfwidths(est.value))
            out[b] = self.own[b].corrected(widened(est, (line,) if line else (), width), answers[b])
            disagree += [line] if line else []
        average = _read(self.average, joint, allow_missing)
        width = float(self.average.conformal.halfwidths(average.value))
        return out | {AVERAGE: widened(average, tuple(disagree), width)}

    def fallback_note(self, answered: Iterable[str]) -> str:
        """What a partial answer falls back to, naming the benchmarks not answered ('' when
        every benchmark is answered)."""
        missing = [b for b in self.benchmarks if b not in set(answered)]
        if not missing:
            return ""
        return (
            f"no answers for {', '.join(missing)} ({len(missing)} of {len(self.benchmarks)}"
            " benchmarks): each answered benchmark is read from its own anchors only, and there"
            " is no suite average; answer every benchmark for the joint estimates and average"
        )

    def merge(self, sources: Iterable[tuple[str, Iterable[tuple[str, object]]]]) -> dict:
        """{suite id: correct} from (where, (suite id `B/item`, correct) pairs) sources.

        One anchor answered differently by two sources (a benchmark's own file and a joint
        file, or two rows) is refused with a `ResponsesError` naming the anchors.
        """
        anchors = {joint_item(b, i) for b, own in self.own.items() for i in own.items}
        merged = MergedAnswers(anchors | set(self.average.items))
        for where, pairs in sources:
            for key, value in pairs:
                merged.add(key, value, where)
        merged.check()
        return merged.values

    def split(self, joint: Mapping[str, object]) -> dict[str, dict]:
        """{benchmark: {item: correct}} of answers keyed by suite ids (`B/item`)."""
        out: dict[str, dict] = {}
        for key, value in joint.items():
            bench, _, item = str(key).partition("/")
            out.setdefault(bench, {})[item] = value
        return out

    def _pairs(self, benchmark: str, responses) -> list:
        pairs = as_pairs(responses)
        if pairs is not None:
            return list(pairs)
        values, items = list(responses), self.own[benchmark].items
        if len(values) != len(items):
            raise ResponsesError(
                f"{benchmark}: got {len(values)} answers in anchor order, expected {len(items)}"
            )
        return list(zip(items, values, strict=True))

    def _known(self, benchmark: str) -> str:
        if benchmark not in self.own:
            raise AnchorSetError(
                f"the suite has no benchmark {printable(repr(benchmark))}; "
                f"it has {', '.join(self.benchmarks)}"
            )
        return benchmark


def _read(reader: AnchorSet, responses, allow_missing: bool, benchmark: str = "") -> Estimate:
    """`reader.predict`; unusable answers are refused saying where the suite's anchors are
    listed (they are its own: answers to a benchmark's published set may miss some)."""
    try:
        return reader.predict(responses, allow_missing)
    except ResponsesError as exc:
        where = f"{benchmark}: " if benchmark else ""
        raise ResponsesError(
            f"{where}{exc} (the suite's anchors of each benchmark are its own, not the"
            " benchmark set's: `sparseeval anchors --benchmark suite` lists them)"
        ) from None


def load_suite(
    path_or_repo: str | Path,
    version: int | str = LATEST,
    hub_client=None,
    revision: str | None = None,
    public_key=None,
) -> SuiteAnchorSet:
    """Load and verify the published suite (see `load_anchor_set`: every check applies)."""
    average = load_anchor_set(
        path_or_repo, SUITE, version, hub_client, revision, public_key=public_key
    )
    members = (average.manifest.suite or {}).get("members")
    if not members:
        raise AnchorSetError(f"{printable(average.source)}: not a suite anchor set (no members)")
    if not isinstance(members, dict) or not all(isinstance(m, dict) for m in members.values()):
        raise AnchorSetError(f"{printable(average.source)}: suite members are not readers")
    joint, own = {}, {}
    scales = {m.get("item_scale", BINARY) for m in members.values()}
    shared = scales.pop() if len(scales) == 1 else BINARY  # the joint reader reads them all
    for b, member in members.items():
        own[b] = _member(
            average, b, member, "own", member["items"], member.get("item_scale", BINARY)
        )
        joint[b] = _member(average, b, member, "joint", average.items, shared)  # fmt: skip
    return SuiteAnchorSet(average, joint, own)


def _member(
    suite: AnchorSet, benchmark: str, member: dict, kind: str, items: list[str], scale: str
) -> AnchorSet:
    """One member reader (`kind`: joint or own) as an `AnchorSet` (its files were verified
    with the suite's); it says what the member estimates and where its data came from."""
    reader = member[kind]
    check_reader(suite.source, benchmark, reader, items)
    check_npz_size(suite.source, suite.folder / reader["folder"] / WEIGHTS_FILE)  # before loading
    try:
        predictor = load_predictor(suite.folder / reader["folder"])
    except Exception as e:
        raise AnchorSetError(
            f"{printable(suite.source)}: cannot load {benchmark} reader ({printable(e)})"
        ) from e
    check_arrays(suite.source, predictor.state()[1])
    manifest = {
        "benchmark": benchmark,
        "version": suite.version,
        "items": items,
        "item_scale": scale,
        "item_sources": reader.get("item_sources"),
        "interval": reader["interval"],
        "predictor": {"folder": reader["folder"], "anchor_means": reader.get("anchor_means")},
        KEY: reader.get(KEY),
        "target": member.get("target"),
        "provenance": member.get("provenance") or suite.manifest.provenance,
    }
    if reader.get(CURVES_KEY):
        manifest[CURVES_KEY] = reader[CURVES_KEY]
    curves = load_curves(suite.folder, manifest)
    checked = Manifest.read(suite.source, manifest, checked=True)  # check_reader did
    member = AnchorSet(checked, predictor, suite.source, suite.folder, curves=curves)
    member.check_predictor()
    return member


__all__ = [
    "AVERAGE",
    "SUITE",
    "SuiteAnchorSet",
    "joint_item",
    "load_suite",
]
