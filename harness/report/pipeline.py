"""Records on disk → scorecards and the index."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from harness.errors import UserError
from harness.report.claim_table import DEFAULT_BENCHMARKS
from harness.report.groups import group_records, load_records
from harness.report.index import render_index
from harness.report.scorecard import ReportSummary, render_scorecard


def write_reports(
    results: Iterable[Path], out_dir: Path, benchmarks: Path = DEFAULT_BENCHMARKS
) -> tuple[list[ReportSummary], Path]:
    """Scorecards and the index from the records under `results`; claims judged with the bounds of the
    suite's setup files under `benchmarks`."""
    results = list(results)
    loaded = load_records(results)
    if not loaded:
        raise UserError(
            f"no run records (seed-*.json) under {', '.join(map(str, results))}; run `lorabench run` first"
        )
    summaries = [render_scorecard(group, out_dir, benchmarks) for group in group_records(loaded)]
    return summaries, render_index(out_dir)
