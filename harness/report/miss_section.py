"""The miss analysis of one setup, when its task has one: over the predictions of its ok seeds, as a table."""

from __future__ import annotations

from dataclasses import dataclass

from harness.report.groups import SetupRuns
from harness.report.tables import table
from harness.tasks.registry import MissReport, task_module

SHOWN_INDICES = 10


@dataclass(frozen=True)
class MissSection:
    setup: str
    seeds: tuple[int, ...]
    analysis: MissReport

    def render(self) -> str:
        rows = self.analysis.category_rows(shown=SHOWN_INDICES)
        return table(rows, ["category", "questions", "%", "question indices"])


def miss_section(setup: SetupRuns) -> MissSection | None:
    loaded = [item for item in setup.runs if item.record.status == "ok" and item.predictions]
    tasks = {item.record.task for item in loaded}
    if not loaded or len(tasks) != 1:
        return None
    analyze_runs = task_module(tasks.pop()).analyze_runs
    if analyze_runs is None:
        return None  # this task has no miss categories
    files = [item.predictions for item in loaded if item.predictions is not None]
    labels = [f"seed {item.record.seed}" for item in loaded]
    return MissSection(
        setup.setup, tuple(item.record.seed for item in loaded), analyze_runs(files, labels, loaded[0].record)
    )
