"""The report step: the run's Markdown report (rendered once) and its Prefect artifacts."""

from __future__ import annotations

from dataclasses import replace

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from sparseeval.pipeline.records import RunSummary
from sparseeval.pipeline.reports import run_report as runreport
from sparseeval.pipeline.settings import PathsSection


@task(name="report", cache_policy=NO_CACHE)
def report(paths: PathsSection, run: RunSummary) -> RunSummary:
    """Write `reports/` and the run's artifacts (report, ingest, metrics, published paths)."""
    markdown = runreport.render_report(run)
    run = replace(run, report_path=str(runreport.write_report(paths.reports_dir, markdown)))
    create_markdown_artifact(markdown, key="sparseeval-refresh-report", description="refresh")
    create_markdown_artifact(
        run.ingest.markdown(), key="sparseeval-ingest", description="what arrived, per source"
    )
    create_table_artifact(
        runreport.metrics_rows(run), key="sparseeval-metrics", description="test metrics"
    )
    published = [f"- {r.label} v{r.published_version}: `{r.published_path}`"
                 for r in run.results if r.published_path]  # fmt: skip
    if run.suite.startswith("suite: published"):
        published.append(f"- {run.suite}")
    if published:
        create_markdown_artifact(
            "\n".join(published),
            key="sparseeval-published", description="published anchor sets",
        )  # fmt: skip
    get_run_logger().info(runreport.summary_line(run))
    return run


__all__ = [
    "report",
]
