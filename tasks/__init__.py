"""Thin Prefect tasks over the `sparseeval` library, one module per step: no algorithm code here.

ingest   ingest, store_state, clean_leftovers
fit      build_matrix, fit_benchmark (both reuse their artifacts on disk), fit_line
assess   live_set, fresh_models, assess, evaluate_published
publish  write_candidate, write_suite_candidate, suite_status, mirror_to_hub, promote,
         point_default
report   report

A task takes the one section of the run's settings it uses, as its type (`PathsSection`,
`SourcesSection`, `MatrixSection`), or the whole `Settings` where its step reads several
(a fit, the suite, assess, a candidate whose manifest records every setting). Expensive tasks cache
on content, and the cache is the artifacts on disk, `artifacts/{kind}/{key}`: the key is
the fingerprint of their inputs (store content signature or matrix fingerprint) plus the
settings that matter plus the code version. No task result is persisted to Prefect's result storage
(no pickles; a new Prefect home reuses every fit, a deleted file is rebuilt). Tasks take
and return small typed records (`sparseeval.pipeline.records`).
"""

from sparseeval.tasks.assess import assess, evaluate_published, fresh_models, live_set
from sparseeval.tasks.fit import build_matrix, fit_benchmark, fit_line
from sparseeval.tasks.ingest import clean_leftovers, ingest, store_state
from sparseeval.tasks.publish import (
    discard_candidate,
    mirror_to_hub,
    point_default,
    promote,
    suite_status,
    write_candidate,
    write_suite_candidate,
)
from sparseeval.tasks.report import report

__all__ = [
    "assess", "build_matrix", "clean_leftovers", "discard_candidate", "evaluate_published",
    "fit_benchmark", "fit_line", "fresh_models", "ingest", "live_set", "mirror_to_hub",
    "point_default", "promote", "report", "store_state", "suite_status", "write_candidate",
    "write_suite_candidate",
]  # fmt: skip
