"""The miss analysis of one setup: `analyze_misses` over the predictions of its ok seeds, as a table."""

from __future__ import annotations

from dataclasses import dataclass

from harness.report.groups import SetupRuns
from harness.report.tables import table
from harness.tasks.sql.misses import MissAnalysis, analyze_misses, load_predictions

SHOWN_INDICES = 10


@dataclass(frozen=True)
class MissSection:
    setup: str
    seeds: tuple[int, ...]
    analysis: MissAnalysis

    def render(self) -> str:
        a = self.analysis
        n = a.n_questions

        def row(name: str, indices: tuple[int, ...]) -> list[object]:
            shown = ", ".join(map(str, indices[:SHOWN_INDICES])) + (
                " …" if len(indices) > SHOWN_INDICES else ""
            )
            return [name, len(indices), f"{100 * len(indices) / n:.1f}" if n else "–", shown]

        rows = [
            row("always right", a.always_right),
            row("fixed by every run (base wrong)", a.fixed_by_every_run),
            row("always wrong", a.always_wrong),
            row("style misses (semantically right)", a.style_misses),
            row("mixed (depends on the seed)", a.mixed),
            row("style-only fixes", a.style_only_fixes),
            row("bad-gold candidates", tuple(c.index for c in a.bad_gold_candidates)),
        ]
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
