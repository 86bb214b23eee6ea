"""The miss analysis of one setup: `analyze_misses` over the predictions of its ok seeds, as a table."""

from __future__ import annotations

from dataclasses import dataclass

from harness.report.groups import SetupRuns
from harness.report.tables import table
from harness.tasks.sql.misses import MissAnalysis, analyze_misses, category_rows, load_predictions
from harness.tasks.sql.resolve import record_test_rows

SHOWN_INDICES = 10


@dataclass(frozen=True)
class MissSection:
    setup: str
    seeds: tuple[int, ...]
    analysis: MissAnalysis

    def render(self) -> str:
        a = self.analysis
        rows = category_rows(a, shown=SHOWN_INDICES)
        return table(rows, ["category", "questions", "%", "question indices"])


def miss_section(setup: SetupRuns) -> MissSection | None:
    loaded = [item for item in setup.runs if item.record.status == "ok" and item.predictions]
    # The categories (semantic match, bad gold) are the SQL task's; other tasks have none yet.
    if not loaded or any(item.record.setup.get("task", "sql") != "sql" for item in loaded):
        return None
    predictions = [load_predictions(item.predictions) for item in loaded if item.predictions is not None]
    labels = [f"seed {item.record.seed}" for item in loaded]
    return MissSection(
        setup.setup,
        tuple(item.record.seed for item in loaded),
        analyze_misses(predictions, labels=labels, test_rows=record_test_rows(loaded[0].record)),
    )
