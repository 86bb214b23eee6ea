"""The SQL task's scores in the record, and the columns the report shows of them."""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict, Field

from harness.results import Metrics
from harness.tasks.registry import MetricColumn


class SqlMetrics(Metrics):
    """`well_formed` is a query that executes on the question's schema; semantic match runs the query and
    the gold on generated rows (harness/tasks/sql/semantic.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    # Where these keys have sat in the record since format 1 (a record reads the same as before tasks
    # owned their fields).
    json_key_order: ClassVar[tuple[str, ...]] = (
        "exact_match",
        "well_formed",
        "semantic",
        "n",
        "n_scorable",
        "n_unscorable",
        "n_clock_stopped",
    )

    semantic: float | None = Field(
        None, description="answers that return the gold's rows, % of the scorable questions"
    )
    n_scorable: int | None = Field(
        None, description="questions whose gold executes (semantic match is over these)"
    )
    n_unscorable: int | None = None
    # Left out of the JSON when 0 or None, so records whose every score is deterministic are unchanged.
    n_clock_stopped: int | None = Field(
        None,
        exclude_if=lambda value: not value,
        description="answers whose scoring the CPU-time safety net cut short, so their scores may differ on "
        "another machine (every other score is the same on any machine, busy or not)",
    )


METRICS = SqlMetrics


def semantic(metrics: Metrics) -> float | None:
    return metrics.semantic if isinstance(metrics, SqlMetrics) else None


def is_clock_stopped(metrics: Metrics) -> bool:
    return isinstance(metrics, SqlMetrics) and bool(metrics.n_clock_stopped)


# A semantic score that includes answers the safety net cut short is marked: the only scores that can
# differ on another machine.
COLUMNS = (
    MetricColumn(
        label="semantic %",
        value=semantic,
        mark=" ‡",
        is_marked=is_clock_stopped,
        note=" ‡ = the semantic score includes answers whose scoring the SQL scorer's CPU-time safety net cut"
        " short (`metrics.n_clock_stopped`): only those can score otherwise on another machine.",
    ),
)
