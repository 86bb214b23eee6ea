"""What crosses the process boundary of a run: the `Job` the parent hands the trainer child, the
`Outcome` it reports (the record's own models, filled as phases complete, written as `outcome.json`),
and `Events`, the journal of phases with wall-clock stamps (`events.jsonl`; the guard's sampler reads
the timed window from it). Plain data: importing this module loads no torch.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
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
EVENTS_FILE = "events.jsonl"


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
    # Wall clock (harness.run.timeline): the child's process start and the end of its work, so the parent
    # can name the seconds between its own stamps and the child's (spawn, child_exit).
    started_at: float | None = None
    finished_at: float | None = None
    trainer_wall_s: float | None = None  # the parent's: from asking for the child until it had ended

    def add_timings(self, **seconds: Any) -> None:
        self.timings = self.timings.model_copy(update=seconds)

    def add_checks(self, found: dict[str, CheckVerdict]) -> None:
        self.checks = {**self.checks, **found}


class Events:
    """The run's journal, one JSON line each: phases {"t": wall clock, "phase", "event": start|end}, and
    every training step {"phase": "train", "event": "step", "step", "loss"}, so a trainer that is killed
    or stopped still leaves its progress for the record (`train_progress`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self, phase: str, what: str, **values: Any) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"t": time.time(), "phase": phase, "event": what, **values}) + "\n")

    def on_step(self, step: int, loss: float, grad_norm: float | None = None) -> str | None:
        """A step observer (see `harness.backends.common.StepObserver`): journals the step, never stops it."""
        self.mark("train", "step", step=step, loss=loss)
        return None

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


def read_events(work_dir: Path) -> list[dict[str, Any]]:
    """The journal's lines; a line cut short by a kill is skipped."""
    path = work_dir / EVENTS_FILE
    events = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
    return events


def recordable_losses(raw: list[float]) -> list[float]:
    """The losses a record keeps: those before the first non-finite one (JSON has no NaN; pydantic would
    write null, which the record then cannot read back), rounded. The divergence check names the step."""
    return [round(x, 5) for x in itertools.takewhile(math.isfinite, raw)]


def train_progress(work_dir: Path) -> TrainStats | None:
    """The steps a trainer finished before it was killed or stopped, from the journal; None before step 1."""
    raw = [float(e["loss"]) for e in read_events(work_dir) if e.get("event") == "step" and "loss" in e]
    if not raw:
        return None
    losses = recordable_losses(raw)
    return TrainStats(steps_done=len(raw), loss=losses, first_loss=losses[0] if losses else None)
