"""`reports/README.md`: the index of every scorecard under the reports folder (from their summary.json
files, so a report written earlier from other results stays listed), sorted platform / stack / host, and
what the records given to this `lorabench report` show across scorecards (harness.report.across)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import UserError
from harness.json_types import JsonObject
from harness.report.conditions import LEGEND
from harness.report.scorecard import SUMMARY_FILE, ReportSummary, templates
from harness.report.tables import NONE, table


def read_summaries(out_dir: Path) -> list[ReportSummary]:
    found = []
    for path in sorted(out_dir.glob(f"*/*/{SUMMARY_FILE}")):
        try:
            found.append(ReportSummary(**json.loads(path.read_text(encoding="utf-8"))))
        except (json.JSONDecodeError, TypeError) as exc:
            raise UserError(
                f"{path}: not a report summary ({exc}); delete it or re-run lorabench report"
            ) from None
    return found


# The platforms the project is for, AMD first: each gets a line in the index until a record comes from it.
PLATFORMS = (("AMD GPU", "ROCm"), ("NVIDIA GPU", "CUDA"), ("CPU", "CPU"))


def coverage(summary: ReportSummary) -> str:
    """Claims judged here (passed or failed) out of the suite's: what the verdict word stands on."""
    if summary.claims_judged is None or summary.claims_total is None:
        return NONE
    return f"{summary.claims_judged} / {summary.claims_total}"


def missing_platforms(summaries: list[ReportSummary]) -> list[str]:
    """A line for each platform no scorecard comes from yet."""
    return [
        f"No {name} record yet ({runtime}): no claim of the suite has been judged on one."
        for name, runtime in PLATFORMS
        if not any((s.platform or "").startswith(runtime) for s in summaries)
    ]


def render_index(out_dir: Path, across: JsonObject | None = None) -> Path:
    """The index; `across`: the sections across scorecards (setups on several hosts, stacks compared),
    from the records of this report only."""
    summaries = sorted(read_summaries(out_dir), key=lambda s: (s.platform or NONE, s.stack, s.host))
    rows = [
        [s.verdict, coverage(s), s.platform or NONE, s.stack, s.host, s.date, f"[scorecard]({s.path})"]
        for s in summaries
    ]
    headers = ["verdict", "claims judged / in the suite", "platform", "stack", "host", "date", "report"]
    body = table(rows, headers) if rows else "No reports yet."
    env = templates()
    path = out_dir / "README.md"
    context = {
        "table": body,
        "setups": [],
        "stacks": None,
        "sources": [],
        "legend": LEGEND,
        "missing": missing_platforms(summaries),
        **(across or {}),
    }
    path.write_text(env.get_template("index.md.j2").render(**context), encoding="utf-8")
    return path
