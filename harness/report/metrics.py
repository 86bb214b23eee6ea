"""The one vocabulary of figures: every metric a report table, `report --json` or `compare` shows, with
its machine key (unit in the name: `train_time_s`, `mfu_pct`) for JSON, its table label and its getter.

Where a figure is read is a condition, not part of its name: tokens/s and MFU are read over the steady
steps when the record has a steady step time, else over the whole run; outputs say which in `window`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from harness.report import tables
from harness.report.groups import SetupRuns
from harness.results import RunRecord

Window = Literal["steady", "whole", "mixed"]


@dataclass(frozen=True)
class Metric:
    key: str  # the JSON key: snake_case, unit last
    label: str  # the table header
    getter: tables.Getter
    higher_is_better: bool
    is_windowed: bool = False  # steady steps where the record has a step time, else the whole run


def executes(r: RunRecord) -> float | None:
    """Answers in the task's output form (for SQL: a query that executes on the question's schema)."""
    return r.trained.well_formed if r.trained else None


METRICS = (
    Metric("baseline_exact_match_pct", "baseline EM %", tables.baseline_em, True),
    Metric("exact_match_pct", "trained EM %", tables.trained_em, True),
    Metric("gain_points", "gain (points)", tables.gain, True),
    Metric("executes_pct", "executes %", executes, True),
    Metric("train_time_s", "train time (s)", tables.train_seconds, False),
    Metric("step_s", "step (s, steady)", tables.step_seconds, False),
    Metric("peak_vram_gib", "peak VRAM (GiB)", tables.peak_vram_gib, False),
    Metric("tokens_per_s", "tokens/s", tables.tokens_per_s, True, is_windowed=True),
    Metric("mfu_pct", "MFU %", tables.mfu_percent, True, is_windowed=True),
)
BY_KEY = {m.key: m for m in METRICS}
# What `lorabench compare` compares: the trained score and the costs.
COMPARED = tuple(
    BY_KEY[k] for k in ("exact_match_pct", "train_time_s", "tokens_per_s", "peak_vram_gib", "mfu_pct")
)


def metric_key(label: str) -> str:
    """A task column's key from its label: 'semantic %' → 'semantic_pct'."""
    words = label.replace("%", " pct").lower()
    return re.sub(r"[^a-z0-9]+", "_", words).strip("_")


def task_metrics(setups: Sequence[SetupRuns]) -> list[Metric]:
    """The score columns of these setups' tasks, as metrics (after the exact match, before the costs)."""
    return [
        Metric(metric_key(c.label), c.label, tables.column_getter(c), True)
        for c in tables.task_columns(setups)
    ]


def setup_metrics(setups: Sequence[SetupRuns]) -> list[Metric]:
    """Every metric a setup table shows, in its order: scores, the tasks' own, then the costs."""
    scores, costs = METRICS[:4], METRICS[4:]
    return [*scores, *task_metrics(setups), *costs]


def window(r: RunRecord) -> Literal["steady", "whole"]:
    """Where the record's windowed figures are read: its steady steps, or the whole run (no step time)."""
    return "steady" if tables.steady(r) is not None else "whole"


def windows(records: Sequence[RunRecord]) -> Window | None:
    """The window of these records' windowed figures; None when there are none."""
    found = {window(r) for r in records}
    if not found:
        return None
    return found.pop() if len(found) == 1 else "mixed"
