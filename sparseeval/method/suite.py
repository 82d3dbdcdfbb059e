"""One suite instead of separate benchmarks: each benchmark read from every benchmark's anchors.

Leaderboard models answer every benchmark, and a model's answers on the other benchmarks'
anchors say much about this one (tinyBenchmarks and metabench estimate jointly for this
reason). `SuiteSparseEval` selects anchors per benchmark exactly as `SparseEval` does,
then gives each benchmark a reader of all the suite's anchors side by side, and
estimates the suite average (the mean of the benchmarks' accuracies) with its interval.

    suite = SuiteSparseEval(n_anchors=50).fit(X_train, y_train, X_valid, y_valid)
    suite.predict({"arc": X_arc, "gsm8k": X_gsm8k, ...})   # {"arc": ..., "average": ...}

Every `X` and `y` is a mapping from benchmark to an array; rows are the same models in
the same order in every benchmark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, clone
from threadpoolctl import threadpool_limits

from sparseeval.consume.scoring.inference import widen
from sparseeval.method.anchor_estimator import check_item_ids
from sparseeval.method.estimator import SparseEval
from sparseeval.method.matrix import MatrixError, check_Xy, item_scale, to_signs
from sparseeval.method.model_files import estimator_params
from sparseeval.method.parallel import side_by_side, trainings_at_once, usable_cpus
from sparseeval.method.predictors import BlendPredictor
from sparseeval.method.selection import anchors_that_fit

AVERAGE = "average"
SHARED_HIDDEN = (256, 128, 64)  # the shared reader's trunk: every anchor in, every benchmark out


class SuiteSparseEval(BaseEstimator):
    """Anchors per benchmark, a reader per benchmark over every anchor, and the suite average.

    Parameters
    ----------
    n_anchors : int, default=50
        Anchors selected per benchmark, capped by `selection.anchors_that_fit`.
    max_anchor_share : float, default=1.0
        The anchors read at most this share of a benchmark's items.
    estimator : SparseEval or None, default=None
        Template of the per-benchmark fit (cloned per benchmark, `n_anchors` set);
        None uses `SparseEval()` defaults. Its `n_jobs` also sets how the suite's fits
        run: None (default) side by side in threads (the benchmarks' fits, then the
        readers, then their refits), at most CPUs + 1 MLPs training at once; 1: one
        after another; the result is the same, bit for bit.
    progress : callable or None, default=None
        Called with one-line progress messages.

    Attributes
    ----------
    benchmarks_ : list of str
        The benchmarks, in the order their anchors sit in the joint input.
    estimators_ : dict of str to SparseEval
        Each benchmark's own fit (its anchors and its own reader, the fallback when only
        that benchmark is answered).
    columns_ : dict of str to ndarray
        Positions of each benchmark's anchors in the joint input.
    readers_ : dict of str to predictor
        Each benchmark's reader of the joint input (+-1 answers on every anchor).
    reader_names_ : dict of str to str
        Which candidate each benchmark kept: "own" (its own anchors only), "joint" (an MLP
        of the estimator's configuration over all anchors), "own+joint" (their mean) or
        "own+joint+shared" (the mean of those two and the benchmark's output of the
        shared reader: MLPs over all anchors with one output per benchmark).
    valid_scores_ : dict of str to dict
        Validation MAE of each candidate, per benchmark (before any refit).
    calibration_residuals_ : dict of str to ndarray
        Residuals (estimate - truth) per benchmark and for "average", from calibration
        models after `calibrate`, else from validation models (which under-cover).
    own_calibration_residuals_ : dict of str to ndarray
        The same for each benchmark's own reader (its fallback).
    calibration_predictions_, own_calibration_predictions_ : dict of str to ndarray
        The estimates those residuals are of (an adaptive interval's width follows them).
    calibration_source_ : {"validation", "calibration"}
    """

    def __init__(
        self,
        n_anchors: int = 50,
        estimator: SparseEval | None = None,
        progress: Callable[[str], None] | None = None,
        max_anchor_share: float = 1.0,
    ) -> None:
        self.n_anchors = n_anchors
        self.estimator = estimator
        self.progress = progress
        self.max_anchor_share = max_anchor_share

    def fit(
        self, X_train, y_train, X_valid, y_valid, item_ids=None, fitted=None
    ) -> SuiteSparseEval:
        """Select each benchmark's anchors, then choose each benchmark's reader on validation.

        Parameters
        ----------
        X_train, X_valid : mapping of str to array-like of shape (n_models, n_items_b)
            Correctness per benchmark (-1/+1, 0/1 or boolean), the same models in the
            same order in every benchmark.
        y_train, y_valid : mapping of str to array-like of shape (n_models,)
            Full-benchmark accuracy per benchmark, in [0, 1].
        item_ids : mapping of str to array-like, default=None
            Item ids per benchmark (for each estimator's `anchor_ids_`).
        fitted : mapping of str to SparseEval, default=None
            Benchmarks' estimators already fitted on exactly these training and validation
            rows and item ids (the caller vouches for the rows: `pipeline.suite_recipe`
            compares model ids). Each is used as it is, selecting nothing, when its
            parameters equal the per-benchmark template's and its anchors and validation
            residuals fit these inputs; the result is the same as fitting it here.
        """
        say = self.progress or (lambda s: None)
        X, y, Xv, yv = self._checked(X_train, y_train, X_valid, y_valid)
        self.benchmarks_ = list(X)
        self.valid_scores_, given = {}, fitted or {}
        ids = lambda b: None if item_ids is None else item_ids[b]  # noqa: E731
        tasks = [partial(self._benchmark_fit, b, X[b], y[b], Xv[b], yv[b], ids(b), given.get(b),
                         say) for b in self.benchmarks_]  # fmt: skip
        # One BLAS thread throughout: a fit's own limit, left by a fit beside it, would else
        # restore the caller's while this one still selects (k-means is not bit-identical).
        with threadpool_limits(limits=1):
            fits = self.side_by_side(tasks)
        self.estimators_ = dict(zip(self.benchmarks_, fits, strict=True))
        self.reused_ = [b for b in self.benchmarks_ if self.estimators_[b] is given.get(b)]
        sizes = [len(self.estimators_[b].anchors_) for b in self.benchmarks_]
        ends = np.cumsum(sizes)
        self.columns_ = {
            b: np.arange(e - n, e) for b, n, e in zip(self.benchmarks_, sizes, ends, strict=True)
        }
        self._fit_readers(self.joint_input(X), y, self.joint_input(Xv), yv, say)
        self.own_calibration_residuals_ = {
            b: self.estimators_[b].valid_residuals_ for b in self.benchmarks_
        }
        self._predictions_of_residuals(yv)
        self.calibration_source_ = "validation"
        return self

    @staticmethod
    def _checked(X_train, y_train, X_valid, y_valid) -> tuple[dict, dict, dict, dict]:
        X, y = check_suite(X_train, y_train, "training")
        Xv, yv = check_suite(X_valid, y_valid, "validation")
        if set(X) != set(Xv):
            raise MatrixError(f"validation benchmarks {sorted(Xv)} differ from {sorted(X)}")
        if len(X) < 2:
            raise MatrixError(f"a suite needs at least two benchmarks, got {sorted(X)}")
        return X, y, Xv, yv

    def benchmark_template(self, n_items: int, scale: str) -> SparseEval:
        """The per-benchmark estimator, unfitted: the template with `n_anchors` capped and
        the benchmark's item scale said (as the pipeline fits each benchmark on its own)."""
        k = anchors_that_fit(self.n_anchors, n_items, self.max_anchor_share)
        return clone(self.estimator or SparseEval()).set_params(n_anchors=k, item_scale=scale)

    def side_by_side(self, tasks: list[Callable]) -> list:
        """`parallel.side_by_side` of `tasks` as the template's `n_jobs` says (None: all at
        once, 1: one at a time), with at most that many MLPs training at once (None: one
        per CPU and one more, as an ensemble of 3 on 2 CPUs) in all of them and in the fits
        they start."""
        n_jobs = (self.estimator or SparseEval()).n_jobs
        with trainings_at_once(n_jobs or usable_cpus() + 1):
            return side_by_side(tasks, n_jobs)

    def _benchmark_fit(self, b: str, X, y, Xv, yv, ids, given, say) -> SparseEval:
        """`given` when it can stand for this benchmark's fit (see `reusable`), else a fit."""
        est = self.benchmark_template(X.shape[1], item_scale(X))
        if given is not None and reusable(given, est, X.shape[1], len(yv), ids):
            say(f"{b}: anchors reused from the benchmark's own fit")
            return given
        say(f"selecting {b} anchors")
        if est.progress is not None:  # its lines name the benchmark: "arc: init kmeans ..."
            est.set_params(progress=_prefixed(est.progress, f"{b}: "))
        return est.fit(X, y, X_valid=Xv, y_valid=yv, item_ids=ids)

    def _fit_readers(self, XA, y, XvA, yv, say) -> None:
        """Each benchmark's reader of every anchor (`readers_`), chosen on validation MAE.

        The shared reader and every benchmark's MLP of all anchors train side by side, then
        the kept ones' refits on training and validation models, side by side (`_refits`)."""
        shared, joints = self._first_readers(XA, y, say)
        shared_valid = _blend_predict(shared, XvA)
        choices = {
            b: self._choose_reader(b, joints[b].predict(XvA), yv[b], shared_valid[:, j])
            for j, b in enumerate(self.benchmarks_)
        }
        names = {b: name for b, (name, _) in choices.items()}
        refit_shared, refit_joints = self._refits(np.vstack([XA, XvA]), y, yv, names, say)
        shared, joints = refit_shared or shared, joints | refit_joints
        self.readers_, self.reader_names_ = {}, names
        for j, b in enumerate(self.benchmarks_):
            own = widen(self.estimators_[b].predictor_, self.columns_[b], XA.shape[1])
            parts = {"own": own, "joint": joints[b], "shared": _output(shared, j)}
            members = [parts[part] for part in names[b].split("+")]
            self.readers_[b] = (
                members[0] if len(members) == 1
                else BlendPredictor(members, [1 / len(members)] * len(members))
            )  # fmt: skip
        self.calibration_residuals_ = _with_average({b: c[1] for b, c in choices.items()})

    def _first_readers(self, XA, y, say) -> tuple[list, dict]:
        """The shared reader and each benchmark's MLP of every anchor, side by side."""
        n = len(self.benchmarks_)

        def joint(j: int, b: str):
            say(f"{b}: training its reader of every anchor ({j + 1}/{n})")
            return self.estimators_[b].fit_reader(XA, y[b], "mlp")

        say("training the shared reader (one output per benchmark)")
        tasks = [partial(self._fit_shared, XA, _stack(y, self.benchmarks_))]
        tasks += [partial(joint, j, b) for j, b in enumerate(self.benchmarks_)]
        shared, *joints = self.side_by_side(tasks)
        return shared, dict(zip(self.benchmarks_, joints, strict=True))

    def _refits(self, both, y, yv, names: dict, say) -> tuple[list | None, dict]:
        """(shared, {benchmark: joint MLP}) refitted on training and validation models
        (`both`), side by side: a benchmark's MLP unless it kept "own", the shared reader
        when some benchmark kept it (else None). Nothing where `refits` says no."""
        n_valid = len(next(iter(yv.values())))
        refits = {b: self.estimators_[b].refits(len(both) - n_valid, n_valid)
                  for b in self.benchmarks_}  # fmt: skip
        joint = [b for b in self.benchmarks_ if names[b] != "own" and refits[b]]
        shared = refits[self.benchmarks_[0]] and any("shared" in name for name in names.values())
        tasks = []  # the longest first: the shared reader's members are the widest nets
        if shared:
            say("refitting the shared reader on training and validation models")
            Y = np.vstack([_stack(y, self.benchmarks_), _stack(yv, self.benchmarks_)])
            tasks.append(partial(self._fit_shared, both, Y))
        if joint:
            say(f"refitting the reader of every anchor of {', '.join(joint)} on training and "
                "validation models")  # fmt: skip
        tasks += [partial(self.estimators_[b].fit_reader, both, np.concatenate([y[b], yv[b]]),
                          "mlp") for b in joint]  # fmt: skip
        fits = self.side_by_side(tasks)
        return (fits.pop(0) if shared else None), dict(zip(joint, fits, strict=True))

    def _fit_shared(self, XA, Y) -> list:
        """MLPs over every anchor with one output per benchmark (a shared trunk), an ensemble."""
        est = self.estimators_[self.benchmarks_[0]]  # every benchmark's estimator is alike
        return est.fit_mlp_members(XA, Y, hidden=SHARED_HIDDEN)

    def _choose_reader(self, b: str, joint_valid, yv, shared_valid) -> tuple[str, np.ndarray]:
        """(name, validation residuals) of the candidate with the lowest validation MAE.

        Candidates: own anchors only, all anchors (this benchmark's MLP), and the means of
        own + all, and of own + all + the shared reader's output (all before any refit).
        """
        own_valid = self.estimators_[b].valid_residuals_ + yv  # before the refit
        valid = {
            "own": own_valid,
            "joint": joint_valid,
            "own+joint": (own_valid + joint_valid) / 2,
            "own+joint+shared": (own_valid + joint_valid + shared_valid) / 3,
        }
        self.valid_scores_[b] = {n: float(np.mean(np.abs(p - yv))) for n, p in valid.items()}
        name = min(self.valid_scores_[b], key=self.valid_scores_[b].get)
        return name, valid[name] - yv

    def joint_input(self, X: Mapping[str, np.ndarray]) -> np.ndarray:
        """Every benchmark's anchor columns side by side, as +-1 float32 (the readers' input)."""
        missing = [b for b in self.benchmarks_ if b not in X]
        if missing:
            raise MatrixError(f"the joint input needs answers on {', '.join(missing)}")
        return np.hstack(
            [to_signs(X[b], what=f"X ({b})")[:, self.estimators_[b].anchors_]
             for b in self.benchmarks_]
        ).astype(np.float32)  # fmt: skip

    def predict(self, X: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Estimated accuracy per benchmark, and the suite "average" when all are given.

        With every benchmark answered each is read from all anchors; with only some, each
        given benchmark falls back to its own reader and no average is returned.
        """
        unknown = sorted(set(X) - set(self.benchmarks_))
        if unknown:
            raise MatrixError(f"unknown benchmark(s) {unknown}; the suite has {self.benchmarks_}")
        if set(X) != set(self.benchmarks_):
            return {b: self.estimators_[b].predict(X[b]) for b in self.benchmarks_ if b in X}
        XA = self.joint_input(X)
        out = {b: self.readers_[b].predict(XA) for b in self.benchmarks_}
        return out | {AVERAGE: np.mean([out[b] for b in self.benchmarks_], axis=0)}

    def refit_reader(
        self, b: str, XA, y, fit_own: Callable | None = None
    ) -> Callable[[np.ndarray], np.ndarray]:
        """Benchmark b's reader of the joint input, of the kind it kept (`reader_names_`),
        refitted on (XA, y); its predict. The own part reads b's anchor columns (fitted by
        `fit_own`, default b's `fit_reader`), the joint part is an MLP of every anchor, which
        also stands in for the shared reader's output (one trunk for every benchmark: too
        costly to refit per benchmark). The pool check's top edge refits it without the
        strongest models (`method.pool.fit_edge`). The own and joint parts fit side by side."""
        est, cols, names = self.estimators_[b], self.columns_[b], self.reader_names_[b].split("+")
        XA = np.asarray(XA, dtype=np.float32)
        tasks = [
            partial(fit_own or est.fit_reader, XA[:, cols], y) if "own" in names else lambda: None,
            partial(est.fit_reader, XA, y, "mlp") if names != ["own"] else lambda: None,
        ]
        own, joint = self.side_by_side(tasks)

        def predict(X) -> np.ndarray:
            X = np.asarray(X, dtype=np.float32)
            return np.mean([own.predict(X[:, cols]) if n == "own" else joint.predict(X)
                            for n in names], axis=0)  # fmt: skip

        return predict

    def refit_average(self, XA, Y) -> Callable[[np.ndarray], np.ndarray]:
        """The suite average's reader refitted on (XA, Y: one column per benchmark, in
        `benchmarks_` order): the mean of `refit_reader` per benchmark (side by side); its
        predict."""
        reads = self.side_by_side(
            [partial(self.refit_reader, b, XA, Y[:, j]) for j, b in enumerate(self.benchmarks_)]
        )
        return lambda X: np.mean([read(X) for read in reads], axis=0)

    def calibrate(self, X_calib, y_calib) -> SuiteSparseEval:
        """Interval residuals per benchmark and for the average, from models `fit` never saw."""
        X, y = check_suite(X_calib, y_calib, "calibration")
        pred = self.predict(X)
        self.calibration_residuals_ = _with_average({b: pred[b] - y[b] for b in self.benchmarks_})
        self.own_calibration_residuals_ = {
            b: self.estimators_[b].predict(X[b]) - y[b] for b in self.benchmarks_
        }
        self._predictions_of_residuals(y)
        self.calibration_source_ = "calibration"
        return self

    def _predictions_of_residuals(self, y: Mapping) -> None:
        """`calibration_predictions_` (and own): residual + truth, the average's included."""
        truth = _with_average({b: np.asarray(y[b], dtype=np.float64) for b in self.benchmarks_})
        res, own = self.calibration_residuals_, self.own_calibration_residuals_
        self.calibration_predictions_ = {b: res[b] + truth[b] for b in res}
        self.own_calibration_predictions_ = {b: own[b] + truth[b] for b in own}


def reusable(est, template: SparseEval, n_items: int, n_valid: int, item_ids=None) -> bool:
    """Whether a fitted `est` can stand for `template` fitted on this benchmark's rows.

    Explicit and cheap: the same parameters (threads and progress aside), anchors that are
    these items' (ids at their columns) and one validation residual per validation row.
    That the rows are the same models is the caller's to know.
    """
    ids = check_item_ids(item_ids, n_items)
    anchors = np.asarray(getattr(est, "anchors_", []))
    return (
        estimator_params(est) == estimator_params(template)
        and anchors.size == template.n_anchors
        and bool(np.all((anchors >= 0) & (anchors < n_items)))
        and [str(i) for i in ids[anchors]] == [str(i) for i in est.anchor_ids_]
        and len(getattr(est, "valid_residuals_", ())) == n_valid
    )


def _stack(y: Mapping[str, np.ndarray], benchmarks: list[str]) -> np.ndarray:
    return np.stack([np.asarray(y[b], dtype=np.float64) for b in benchmarks], axis=1)


def _blend_predict(members: list, X: np.ndarray) -> np.ndarray:
    return np.mean([m.predict(X) for m in members], axis=0)


def _output(members: list, j: int):
    """Output j of an ensemble of multi-output MLPs, as one published-format reader."""
    return BlendPredictor([m.output(j) for m in members], [1 / len(members)] * len(members))


def suite_average(y: Mapping[str, np.ndarray]) -> np.ndarray:
    """The suite average of per-benchmark accuracies (their unweighted mean)."""
    return np.mean([np.asarray(v, dtype=np.float64) for v in y.values()], axis=0)


def _with_average(residuals: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return residuals | {AVERAGE: suite_average(residuals)}


def check_suite(X, y, what: str) -> tuple[dict, dict]:
    """`check_Xy` per benchmark, and the same number of models in every benchmark."""
    if not isinstance(X, Mapping) or not isinstance(y, Mapping):
        raise MatrixError(f"X and y ({what}) must be mappings from benchmark to array")
    if set(X) != set(y):
        raise MatrixError(f"X ({what}) has benchmarks {sorted(X)}, y has {sorted(y)}")
    checked = {b: check_Xy(X[b], y[b], f"{what}, {b}") for b in X}
    rows = {b: len(v[1]) for b, v in checked.items()}
    if len(set(rows.values())) > 1:
        raise MatrixError(f"X ({what}): benchmarks have different numbers of models: {rows}")
    return {b: v[0] for b, v in checked.items()}, {b: v[1] for b, v in checked.items()}


def _prefixed(say: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    """`say` with `prefix` before each line."""
    return lambda line: say(prefix + line)


__all__ = [
    "AVERAGE",
    "SHARED_HIDDEN",
    "SuiteSparseEval",
    "check_suite",
    "reusable",
    "suite_average",
]
