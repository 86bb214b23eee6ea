"""`reports/README.md`: the index of every scorecard under the reports folder (from their summary.json
files, so a report written earlier from other results stays listed)."""

from __future__ import annotations

import json
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined

from harness.errors import UserError
from harness.report.scorecard import SUMMARY_FILE, ReportSummary
from harness.report.tables import table


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


def render_index(out_dir: Path) -> Path:
    summaries = sorted(read_summaries(out_dir), key=lambda s: (s.host, s.stack))
    rows = [
        [s.date, s.host, s.stack, s.verdict, f"[scorecard]({s.path})"]
        for s in summaries
    ]  # fmt: skip
    body = table(rows, ["date", "host", "stack", "verdict", "report"]) if rows else "No reports yet."
    env = Environment(loader=PackageLoader("harness.report", "templates"), undefined=StrictUndefined,
                      keep_trailing_newline=True, autoescape=False)  # fmt: skip
    path = out_dir / "README.md"
    path.write_text(env.get_template("index.md.j2").render(table=body), encoding="utf-8")
    return path
