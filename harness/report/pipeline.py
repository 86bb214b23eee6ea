"""Records on disk → scorecards and the index."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from harness.errors import UserError
from harness.report.across import setups_across, stacks_across
from harness.report.charts import finish_drawing
from harness.report.claim_table import DEFAULT_BENCHMARKS, evaluate_claims, load_setups, setup_references
from harness.report.groups import group_records, load_records
from harness.report.index import missing_platforms, read_summaries, render_index
from harness.report.outputs import ReportOut
from harness.report.scorecard import ReportSummary, render_scorecard
from harness.report.settings import public
from harness.report.to_json import across_out, scorecard_out, stacks_out


def build_reports(
    results: Iterable[Path], out_dir: Path, benchmarks: Path = DEFAULT_BENCHMARKS, setups: Sequence[Path] = ()
) -> tuple[list[ReportSummary], Path, ReportOut]:
    """Scorecards and the index from the records under `results` (several folders merge: e.g. one per CI
    runner's artifact), and the same scorecards as `lorabench report --json` prints them; claims as the
    suite's setup files under `benchmarks/setups` and the folders `setups` (a user's own benchmarks)
    declare them."""
    results = list(results)
    catalogue = load_setups(benchmarks, setups)  # the setup files first: a mistake there is one line
    loaded = load_records(results)
    if not loaded:
        raise UserError(
            f"no run records (seed-*.json) under {', '.join(map(str, results))}; run `lorabench run` first"
        )
    groups = group_records(loaded, setup_references(catalogue))
    try:
        summaries = [render_scorecard(group, out_dir, catalogue, benchmarks) for group in groups]
    finally:
        finish_drawing()
    across = {
        "setups": setups_across(groups),
        "stacks": stacks_across(groups, catalogue),
        "sources": [public(str(r)) for r in results],
    }
    index = render_index(out_dir, across)
    scorecards = [
        scorecard_out(g, s, evaluate_claims(g, catalogue)) for g, s in zip(groups, summaries, strict=True)
    ]
    out = ReportOut(
        scorecards=scorecards,
        across=across_out(groups),
        stacks=stacks_out(groups, catalogue),
        missing_platforms=missing_platforms(read_summaries(out_dir)),
    )
    return summaries, index, out
