"""Live progress of the suite's runs, shown although pytest captures the trainer's output.

pytest captures a test's output, the trainer child's stderr with it, so `make bench` printed nothing
for an hour. The suite hands the child a progress file (in its run plan, `progress_file`; written by
`harness.run.progress.Progress`: a JSON line per phase and per step), follows it from a thread, and
writes lines through a sink that gets past the capture (see `harness.suite.plugin.terminal_sink`):

    [lorabench] exp_a/smollm2-135m-lora seed 3407 · train 120/300 · loss 0.412 · 4:58 · eta 7:27

Five training steps in, one lasting line estimates the whole run (and the seeds of the setup still to
run) from the steps and the baseline eval measured so far (`Estimate`), while Ctrl-C still costs little.

Two modes: `live` (a terminal) rewrites one status line in place, at most once a second, and leaves a
line per phase; `lines` (CI logs, files) writes a line when a phase starts and then every `every_s`
seconds, so a log stays short. Not covered: progress of runs in other pytest processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.json_types import JsonObject

Mode = Literal["live", "lines", "off"]
# (text, transient): a transient line is replaced by the next one (live mode's status line).
Sink = Callable[[str, bool], None]
LIVE_EVERY_S = 1.0
POLL_S = 0.25


def clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


@dataclass
class PhaseState:
    """One phase as the events tell it; the rate is taken from its first step on, so the time a phase
    spends before its first step (the trainer's setup, preflight checks) does not skew the ETA."""

    name: str
    total: int
    started: float
    done: int = 0
    values: dict[str, float] | None = None
    first: tuple[float, int] | None = None  # (t, done) of the first step
    last_t: float = 0.0

    def update(self, event: JsonObject) -> None:
        self.done, self.last_t = int(event.get("done", 0)), float(event["t"])
        self.values = {
            k: v for k, v in event.items() if k not in ("t", "phase", "done", "total")
        } or self.values
        if self.first is None and self.done > 0:
            self.first = (self.last_t, self.done)

    def eta(self) -> float | None:
        if self.first is None or not self.total or self.done <= self.first[1]:
            return None
        rate = (self.last_t - self.first[0]) / (self.done - self.first[1])
        return rate * (self.total - self.done)

    def describe(self, now: float) -> str:
        parts = [f"{self.name} {self.done}/{self.total}" if self.total else self.name]
        parts += [f"{k} {v:.4g}" for k, v in (self.values or {}).items()]
        parts.append(clock(now - self.started))
        if (eta := self.eta()) is not None:
            parts.append(f"eta {clock(eta)}")
        elif self.total and self.done == 0:
            parts.append("preparing")
        return " · ".join(parts)


ESTIMATE_STEPS = 5  # training steps timed before the estimate of the whole is shown
FEW_TIMED = 0.1  # an estimate from under this share of the steps is rough (warm-up, checkpoints, eval)
BUSY_LOAD = 1.5  # a load average above this many times the cores: other work shares the machine


def rough_reasons(timed: int, total: int, load: float | None, cores: int | None) -> tuple[str, ...]:
    """Why an estimate may be far off, briefly: under load the CPU suite's estimates were 1.6-15× too low."""
    reasons = []
    if load is not None and cores and load > BUSY_LOAD * cores:
        reasons.append(f"machine busy (load {load:.1f} on {cores} cores)")
    if total and timed < FEW_TIMED * total:
        reasons.append(f"{timed} of {total} steps timed")
    return tuple(reasons)


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


@dataclass
class Estimate:
    """The whole run's time, from what has been measured so far: the training steps after the first (a
    first step pays for warm-up) and the baseline eval, which the final eval repeats on the same questions."""

    elapsed_s: float
    step_s: float
    steps_left: int
    eval_s: float | None  # the baseline eval's duration; None when its answers came from the cache
    more_runs: int = 0
    rough: tuple[str, ...] = ()  # why it may be far off (`rough_reasons`)

    def line(self) -> str:
        left = self.step_s * self.steps_left + (self.eval_s or 0.0)
        whole = self.elapsed_s + left
        evals = (
            f"the baseline eval {clock(self.eval_s)} (the final eval about as long)"
            if self.eval_s is not None
            else "the final eval not measured (the baseline came from the cache)"
        )
        text = "rough: " + ", ".join(self.rough) + "; " if self.rough else ""
        text += (
            f"estimate from {ESTIMATE_STEPS} steps ({self.step_s:.2f} s/step) and {evals}: this run ~{clock(whole)} "
            f"in all, ~{clock(left)} to go"
        )
        if self.more_runs:
            text += (
                f"; up to {self.more_runs} more seed(s) of this setup: ~{clock(whole * self.more_runs)} more"
            )
        return text + " (Ctrl-C stops; run it again to resume from the last checkpoint)"


class ProgressView:
    """Turns the child's events into lines for the sink, at the pace of its mode."""

    def __init__(self, label: str, sink: Sink, mode: Mode, every_s: float, more_runs: int = 0) -> None:
        self.label, self.sink, self.mode, self.every_s = label, sink, mode, every_s
        self.more_runs = more_runs
        self.phase: PhaseState | None = None
        self._shown = 0.0
        self._transient = False
        self._started: float | None = None
        self._baseline_s: float | None = None
        self.estimate: Estimate | None = None
        # Set by `followed_run`: reads the child's last events before the outcome line, so a run's final
        # phase ("eval 4/4") never prints after its "ok |" line (CI saw that order once).
        self.drain: Callable[[], None] = lambda: None
        # (load average, cores) when the estimate is made; a test sets its own.
        self.machine_load: Callable[[], tuple[float | None, int | None]] = lambda: (_load(), os.cpu_count())
        # Set by `followed_run`: the file the trainer writes its events to (the runner puts it in the plan).
        self.progress_file: Path | None = None

    def _write(self, text: str, *, transient: bool) -> None:
        self.sink(f"[lorabench] {self.label} · {text}", transient)
        self._transient = transient

    def event(self, event: JsonObject) -> None:
        name = str(event.get("phase", ""))
        if self._started is None:
            self._started = float(event["t"])
        if self.phase is None or name != self.phase.name or int(event.get("done", 0)) < self.phase.done:
            if self.phase is not None and self.phase.name == "baseline eval":
                self._baseline_s = float(event["t"]) - self.phase.started
            self.close_phase()
            self.phase = PhaseState(name, int(event.get("total", 0)), float(event["t"]))
            self.phase.update(event)
            self._write(self.phase.describe(time.time()), transient=self.mode == "live")
            self._shown = time.monotonic()
            return
        self.phase.update(event)
        self._maybe_estimate()

    def _maybe_estimate(self) -> None:
        """Once per run, when the first `ESTIMATE_STEPS` timed steps are in: the whole run's time."""
        phase = self.phase
        if self.estimate is not None or phase is None or phase.name != "train" or phase.first is None:
            return
        timed = phase.done - phase.first[1]
        if timed < ESTIMATE_STEPS or self._started is None:
            return
        self.estimate = Estimate(
            elapsed_s=phase.last_t - self._started,
            step_s=(phase.last_t - phase.first[0]) / timed,
            steps_left=phase.total - phase.done,
            eval_s=self._baseline_s,
            more_runs=self.more_runs,
            rough=rough_reasons(timed, phase.total, *self.machine_load()),
        )
        if phase.total > phase.done:
            self._write(self.estimate.line(), transient=False)

    def tick(self, *, force: bool = False) -> None:
        """Show the current phase again when its interval has passed (a clock that moves without events too)."""
        if self.phase is None:
            return
        every = LIVE_EVERY_S if self.mode == "live" else self.every_s
        if force or time.monotonic() - self._shown >= every:
            self._write(self.phase.describe(time.time()), transient=self.mode == "live")
            self._shown = time.monotonic()

    def note(self, text: str) -> None:
        """A lasting line about the run (what it is about to do, how it ended)."""
        self._write(text, transient=False)

    def close_phase(self) -> None:
        """The phase that just ended, once more as a lasting line: live mode replaces its status line, and
        a phase with steps says how long all of them took."""
        if self.phase is not None and (self.mode == "live" or self.phase.total):
            self._write(self.phase.describe(self.phase.last_t or time.time()), transient=False)

    def finish(self, outcome: str) -> None:
        self.drain()
        self.close_phase()
        self.phase = None
        self.note(outcome)


class ProgressFollower:
    """Follows one progress file from a thread, feeding a `ProgressView`."""

    def __init__(self, path: Path, view: ProgressView) -> None:
        self.path, self.view = path, view
        self._stop = threading.Event()
        self._offset = 0
        self._thread = threading.Thread(target=self._loop, name="lorabench-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._read()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            self._read()
            self.view.tick()

    def _read(self) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return
        complete, _, _ = data.rpartition(b"\n")  # a line still being written waits for the next read
        if not complete:
            return
        self._offset += len(complete) + 1
        for raw in complete.splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                self.view.event(json.loads(raw))


@contextlib.contextmanager
def followed_run(
    label: str, sink: Sink, mode: Mode, every_s: float, header: str | None = None, more_runs: int = 0
) -> Generator[ProgressView | None]:
    """For the block, trainer children started in it report to a progress file that is shown through
    `sink`, after `header`. The caller writes the outcome with `view.finish(...)`. Mode `off`: nothing."""
    if mode == "off":
        yield None
        return
    view = ProgressView(label, sink, mode, every_s, more_runs)
    if header:
        view.note(header)  # before the follower starts: the sink is called from one thread at a time
    with tempfile.TemporaryDirectory(prefix="lorabench-progress-") as tmp:
        path = Path(tmp) / "progress.jsonl"
        path.touch()
        follower = ProgressFollower(path, view)
        view.drain = (
            follower.stop
        )  # stopping twice is harmless: the thread has ended, the file is read to its end
        follower.start()
        view.progress_file = path
        try:
            yield view
        finally:
            follower.stop()
