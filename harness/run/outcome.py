"""What crosses the process boundary of a run: the `Job` the parent hands the trainer child, the
`Outcome` it reports (the record's own models, filled as phases complete, written as `outcome.json`),
and `Events`, the journal of phases with wall-clock stamps (`events.jsonl`; the guard's sampler reads
the timed window from it). Plain data: importing this module loads no torch.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness import atomic
from harness.config import SetupConfig
from harness.results import (
    CheckVerdict,
    DataInfo,
    MemoryStats,
    Metrics,
    ModelInfo,
    RankInfo,
    Status,
    Timings,
    TrainStats,
)

OUTCOME_FILE = "outcome.json"


class Job(BaseModel):
    """What the parent asks of the child: one setup, the folder to work in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    setup: SetupConfig
    work_dir: Path
    quiet: bool = False


class Outcome(BaseModel):
    """What the child reports, in the record's own models; the parent adds what only it knows."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    status: Status = "ok"
    reason: str | None = None
    data: DataInfo | None = None
    model: ModelInfo | None = None
    baseline: Metrics | None = None
    trained: Metrics | None = None
    train: TrainStats | None = None
    memory: MemoryStats | None = None
    timings: Timings = Timings()
    checks: dict[str, CheckVerdict] = {}
    ranks: list[RankInfo] | None = None
    traceback: str | None = None

    def add_timings(self, **seconds: Any) -> None:
        self.timings = self.timings.model_copy(update=seconds)

    def add_checks(self, found: dict[str, CheckVerdict]) -> None:
        self.checks = {**self.checks, **found}


class Events:
    """The run's journal of phases, one JSON line each: {"t": wall clock, "phase", "event": start|end}."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self, phase: str, what: str) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"t": time.time(), "phase": phase, "event": what}) + "\n")

    @contextlib.contextmanager
    def span(self, phase: str) -> Generator[None]:
        self.mark(phase, "start")
        try:
            yield
        finally:
            self.mark(phase, "end")


def write_outcome(outcome: Outcome, work_dir: Path) -> None:
    atomic.write_text(work_dir / OUTCOME_FILE, outcome.model_dump_json(indent=1))


def read_outcome(work_dir: Path) -> Outcome | None:
    path = work_dir / OUTCOME_FILE
    if not path.is_file():
        return None
    return Outcome.model_validate_json(path.read_text(encoding="utf-8"))
