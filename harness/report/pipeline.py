"""Records on disk → scorecards and the index."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from harness.errors import UserError
from harness.report.across import setups_across, stacks_across
from harness.report.claim_table import DEFAULT_BENCHMARKS, setup_references
from harness.report.groups import group_records, load_records
from harness.report.index import render_index
from harness.report.settings import public
from harness.report.scorecard import ReportSummary, render_scorecard


def write_reports(
    results: Iterable[Path], out_dir: Path, benchmarks: Path = DEFAULT_BENCHMARKS
) -> tuple[list[ReportSummary], Path]:
    """Scorecards and the index from the records under `results` (several folders merge: e.g. one per CI
    runner's artifact); claims judged with the bounds of the suite's setup files under `benchmarks`."""
    results = list(results)
    loaded = load_records(results)
    if not loaded:
        raise UserError(
            f"no run records (seed-*.json) under {', '.join(map(str, results))}; run `lorabench run` first"
        )
    groups = group_records(loaded, setup_references(benchmarks))
    summaries = [render_scorecard(group, out_dir, benchmarks) for group in groups]
    across = {
        "setups": setups_across(groups), "stacks": stacks_across(groups, benchmarks),
        "sources": [public(str(r)) for r in results],
    }  # fmt: skip
    return summaries, render_index(out_dir, across)
