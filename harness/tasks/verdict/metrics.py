"""The verdict task's scores in the record: the gate's rates beside the common ones."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from harness.results import Metrics
from harness.tasks.registry import MetricColumn


class VerdictMetrics(Metrics):
    """`exact_match` is the judgment (the decision matches the gold's), `well_formed` an answer that keeps
    the output contract; `gate` holds every rate (harness/tasks/verdict/scoring.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gate: dict[str, float | int | None] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="contract, judgment, false blocks, catches, tag match, abstentions (percent) and n",
    )


METRICS = VerdictMetrics
COLUMNS: tuple[MetricColumn, ...] = ()
