"""What crosses the process boundary of a run besides the `RunPlan` the parent hands the trainer child (plan.py): the
`Outcome` it reports (the record's own models, filled as phases complete, written as `outcome.json`),
and `Events`, the journal of phases with wall-clock stamps (`events.jsonl`; the guard's sampler reads
the timed window from it). Plain data: importing this module loads no torch.

Three files, three meanings, so that whoever reads a work folder later (the parent after a kill, the
next run's sweep) knows how far the run got:
- `partial.json`: the trainer's outcome so far, rewritten as each field is filled (data, model,
  baseline, timings, checks): a killed run's record keeps what was already computed.
- `outcome.json`: the trainer's final outcome, written once when it has finished: the run is over,
  with this status, whatever happens to the parent next.
- `ended.json`: the parent's final outcome with the guard's verdict, written before the record: a
  record that cannot be written now (a full disk, a lock folder that is a file, a signal while waiting
  for the record's lock) is written later from it, as the run ended.
A full disk must not take the run's outcome with it: the work folder holds a reserve file that the
first write to fail with ENOSPC deletes before it tries again (`write_durable`). Should even that be
taken (another process filling the disk as it frees), the status and the errno go into the name of
an empty file, `ended.<status>.<ERRNO>`, which needs no free block, and a trainer that cannot write its
outcome says why by its exit status (`UNWRITTEN_EXIT` + errno).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import math
import os
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from harness import atomic
from harness.guard.verdict import GuardRecord
from harness.json_types import JsonObject
from harness.results import (
    CheckVerdict,
    DataInfo,
    MemoryStats,
    Metrics,
    ModelInfo,
    RankInfo,
    Seeding,
    Status,
    Timings,
    TrainStats,
)

OUTCOME_FILE = "outcome.json"
PARTIAL_FILE = "partial.json"
ENDED_FILE = "ended.json"
EVENTS_FILE = "events.jsonl"
RESERVE_FILE = "reserve"
# Room for the final outcome, the parent's ended.json and a traceback once the disk is full (a
# 300-step outcome is about 10 KB; a traceback a few KB).
RESERVE_BYTES = 1 << 20
# A trainer that could not write its outcome exits with this plus the errno (ENOSPC: 92).
UNWRITTEN_EXIT = 64


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
    seeding: Seeding | None = None
    traceback: str | None = None
    # Set by the trainer when a check of its inputs refused the run before any work was done: the
    # parent then answers like any input check (one line, exit 2) and writes no record.
    refused_input: bool = False
    _sink: Path | None = PrivateAttr(None)

    def keep_in(self, work_dir: Path) -> Outcome:
        """Rewrite `partial.json` in `work_dir` each time a field is set, so a trainer killed at any
        point leaves what it had computed."""
        self._sink = work_dir
        self._persist()
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if not name.startswith("_"):
            self._persist()

    def _persist(self) -> None:
        if self._sink is not None:
            # Best effort: a full disk shows in the journal and the final outcome, not here.
            with contextlib.suppress(OSError):
                atomic.write_text(self._sink / PARTIAL_FILE, self.model_dump_json(indent=1))

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


def reserve_space(work_dir: Path) -> None:
    """Hold `RESERVE_BYTES` of the disk for the outcome files (see the module's docstring)."""
    with (work_dir / RESERVE_FILE).open("wb") as handle:
        handle.write(b"\0" * RESERVE_BYTES)


def write_durable(path: Path, text: str) -> None:
    """Atomically; on a full disk, once more after deleting the work folder's reserve."""
    try:
        atomic.write_text(path, text)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        try:
            os.unlink(path.parent / RESERVE_FILE)
        except FileNotFoundError:
            raise exc from None
        atomic.write_text(path, text)


def write_outcome(outcome: Outcome, work_dir: Path) -> None:
    write_durable(work_dir / OUTCOME_FILE, outcome.model_dump_json(indent=1))


def _read(path: Path) -> Outcome | None:
    if not path.is_file():
        return None
    return Outcome.model_validate_json(path.read_text(encoding="utf-8"))


def read_outcome(work_dir: Path) -> Outcome | None:
    """The trainer's final outcome; None while it has not finished."""
    return _read(work_dir / OUTCOME_FILE)


def read_partial(work_dir: Path) -> Outcome | None:
    """What the trainer had computed when it last wrote (an unreadable file counts as nothing)."""
    with contextlib.suppress(OSError, ValueError):
        return _read(work_dir / PARTIAL_FILE)
    return None


def write_ended(work_dir: Path, outcome: Outcome, guard: GuardRecord, unwritten: str | None = None) -> None:
    """The parent's final word on the run, before its record; `unwritten` says why the record could not
    be written (added when it could not)."""
    body = {"outcome": outcome.model_dump(mode="json"), "guard": guard.to_record(), "unwritten": unwritten}
    write_durable(work_dir / ENDED_FILE, json.dumps(body, indent=1, ensure_ascii=False))


def read_ended(work_dir: Path) -> tuple[Outcome, GuardRecord, str | None] | None:
    path = work_dir / ENDED_FILE
    if not path.is_file():
        return None
    body = json.loads(path.read_text(encoding="utf-8"))
    guard = GuardRecord.model_validate(body.get("guard") or {})
    return Outcome.model_validate(body["outcome"]), guard, body.get("unwritten")


def read_events(work_dir: Path, path: Path | None = None) -> list[JsonObject]:
    """The journal's lines (rank 0's, or the one at `path`); a line cut short by a kill is skipped."""
    path = path or work_dir / EVENTS_FILE
    events = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
    return events


def train_window(work_dir: Path) -> tuple[float, float] | None:
    """The train phase's wall-clock start and end, as the trainer stamped them: rank 0's journal first,
    else any rank's (a node of a several-node run that holds no rank 0 has only those)."""
    journals = [work_dir / EVENTS_FILE, *sorted(work_dir.glob("events-*.jsonl"))]
    for path in journals:
        stamps = {e["event"]: e["t"] for e in read_events(work_dir, path) if e.get("phase") == "train"}
        if {"start", "end"} <= stamps.keys():
            return stamps["start"], stamps["end"]
    return None


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


def unwritten_exit(exc: OSError) -> int:
    return UNWRITTEN_EXIT + (exc.errno or 0) if exc.errno and exc.errno < 190 else 1


def unwritten_error(returncode: int, work_dir: Path) -> OSError | None:
    """The error of a trainer that exited with `unwritten_exit`, rebuilt to be named."""
    number = returncode - UNWRITTEN_EXIT
    if returncode <= UNWRITTEN_EXIT or number not in errno.errorcode:
        return None
    return OSError(number, os.strerror(number), str(work_dir / OUTCOME_FILE))


def mark_unwritten(work_dir: Path, status: str, exc: OSError) -> None:
    """The last resort when not even `ended.json` fits: status and errno in an empty file's name."""
    name = errno.errorcode.get(exc.errno or 0, "EIO")
    with contextlib.suppress(OSError):
        (work_dir / f"ended.{status}.{name}").touch()


def read_unwritten_mark(work_dir: Path) -> tuple[str, OSError] | None:
    for mark in work_dir.glob("ended.*.E*"):
        _, status, name = mark.name.split(".", 2)
        number = getattr(errno, name, None)
        if status in ("ok", "failed", "refused", "diverged", "killed") and isinstance(number, int):
            return status, OSError(number, os.strerror(number))
    return None
