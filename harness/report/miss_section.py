"""The miss analysis of one setup: `analyze_misses` over the predictions of its ok seeds, as a table."""

from __future__ import annotations

from dataclasses import dataclass

from harness.report.groups import SetupRuns
from harness.report.tables import table
from harness.tasks.sql.misses import MissAnalysis, analyze_misses, category_rows, load_predictions

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
    runs = [
        (item.record.seed, item.predictions)
        for item in setup.runs
        if item.record.status == "ok" and item.predictions
    ]
    if not runs:
        return None
    predictions = [load_predictions(path) for _, path in runs if path is not None]
    labels = [f"seed {seed}" for seed, _ in runs]
    return MissSection(
        setup.setup, tuple(seed for seed, _ in runs), analyze_misses(predictions, labels=labels)
    )
