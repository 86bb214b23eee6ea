"""Where a run's seconds go, from the moment its process started to the moment its record is written.

Each phase is a named span of wall-clock seconds (`Timings.phases`), measured where it runs: in the parent
(interpreter and imports, input checks, provenance, the guard, starting the trainer, the record) and in the
trainer child (its interpreter and imports, data, load, baseline, preflight, graph capture, steps, eval,
...). `Timings.wall_s` is measured independently of them (process start to record), so
`Timings.unaccounted_s = wall_s - sum(phases)` shows what no phase covers: near zero when the phases say
where every second went. Spans are wall clock (`time.time()`), so the parent's and the child's compare.

Not covered: the record file's own write (an atomic JSON write and renames, milliseconds) comes after the
record's content is final, and the interpreter's exit after it; both stay outside `wall_s`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Generator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.run.outcome import Outcome


def process_started() -> float | None:
    """Wall-clock time at which this process was created (Linux: /proc), None where the OS does not say.

    The kernel stamps a process's start in clock ticks since boot (10 ms on Linux); boot time in wall
    clock comes from /proc/stat's btime (whole seconds), so the current uptime is used instead: both
    readings are taken together, and their difference is the process's age."""
    try:
        with open(f"/proc/{os.getpid()}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
        with open("/proc/uptime", encoding="ascii") as uptime:
            up = float(uptime.read().split()[0])
        now = time.time()
    except (OSError, ValueError, IndexError):
        return None
    # Field 22 of stat (starttime) is the 20th after the ")" that ends the command name.
    started_after_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return now - max(0.0, up - started_after_boot)


def add_phase(outcome: Outcome, name: str, seconds: float) -> None:
    """Adds `seconds` to the phase `name` (a phase met twice, e.g. per rank or per retry, sums)."""
    phases = dict(outcome.timings.phases or {})
    phases[name] = round(phases.get(name, 0.0) + max(0.0, seconds), 3)
    outcome.add_timings(phases=phases)


@contextlib.contextmanager
def phase(outcome: Outcome, name: str) -> Generator[None]:
    """Times the block as phase `name`, also when it raises (a failed load still took its seconds)."""
    started = time.time()
    try:
        yield
    finally:
        add_phase(outcome, name, time.time() - started)


def close_books(outcome: Outcome, process_start: float | None, fallback_start: float) -> None:
    """Sets wall_s (process start, or `fallback_start` where the OS cannot tell, to now) and what no
    phase accounts for."""
    start = process_start if process_start is not None else fallback_start
    wall = time.time() - start
    spent = sum((outcome.timings.phases or {}).values())
    outcome.add_timings(wall_s=round(wall, 2), unaccounted_s=round(wall - spent, 2))


_command_started: list[float | None] = []


def command_started() -> float | None:
    """The process's start for the first run this process makes (a `lorabench run`), None for later ones
    (a suite runs many in one process: the second's wall clock starts where its run does)."""
    if _command_started:
        return None
    _command_started.append(process_started())
    return _command_started[0]


def bracket_trainer(outcome: Outcome, launched: float, returned: float) -> None:
    """The parent's view around the trainer child's phases: `spawn` (asking for the process until its
    interpreter started) before them, `child_exit` (its last phase until the parent had control back: the
    outcome written, CUDA and the interpreter torn down) after. A child that reported no stamps (killed,
    crashed) leaves what its phases do not cover as `trainer_unreported`."""
    outcome.trainer_wall_s = returned - launched
    phases = dict(outcome.timings.phases or {})
    if outcome.started_at is not None and outcome.finished_at is not None:
        phases = {
            "spawn": round(max(0.0, outcome.started_at - launched), 3),
            **phases,
            "child_exit": round(max(0.0, returned - outcome.finished_at), 3),
        }
    else:
        phases["trainer_unreported"] = round(max(0.0, returned - launched - sum(phases.values())), 3)
    outcome.add_timings(phases=phases)


def prepend_phases(outcome: Outcome, before: dict[str, float]) -> None:
    """The parent's phases that ran before the child's, first in the record's order."""
    phases = {name: round(seconds, 3) for name, seconds in before.items()}
    for name, seconds in (outcome.timings.phases or {}).items():
        phases[name] = round(phases.get(name, 0.0) + seconds, 3)
    outcome.add_timings(phases=phases)


def trainer_window(outcome: Outcome) -> float:
    """Wall seconds the trainer took as the parent saw them (its phases' sum when it ran inline)."""
    if outcome.trainer_wall_s is not None:
        return outcome.trainer_wall_s
    return sum((outcome.timings.phases or {}).values())


# Phases whose seconds grow with the steps trained or the questions decoded; every other phase is paid once
# per run whatever its length (start-up, imports, load, preflight, graph capture, ...).
PER_STEP = ("steps",)
PER_QUESTION = ("eval", "score")
PER_QUESTION_ONCE = ("baseline", "baseline_score")  # the baseline's answers are cached after the first run


def projected_wall_s(
    phases: dict[str, float],
    *,
    steps_done: int,
    steps: int,
    questions_done: int,
    questions: int,
    runs: int = 1,
    baseline_cached: bool = False,
) -> float:
    """The wall clock of `runs` full runs (e.g. `make bench`'s seeds, one after another) projected from
    one shorter run's phases: steps and decoding scale linearly with their counts, the rest repeats per
    run as measured, and the baseline is decoded once (none when `baseline_cached`). For a short run to
    stand in, its steps must be past the warm-up (graph capture and compile are their own phases)."""
    if min(steps_done, questions_done) <= 0 or runs < 1:
        raise ValueError(
            f"need steps_done, questions_done and runs >= 1, got {steps_done}, {questions_done}, {runs}"
        )
    per_step = sum(phases.get(name, 0.0) for name in PER_STEP) / steps_done
    per_question = sum(phases.get(name, 0.0) for name in PER_QUESTION) / questions_done
    baseline = sum(phases.get(name, 0.0) for name in PER_QUESTION_ONCE) / questions_done
    scaled = set(PER_STEP) | set(PER_QUESTION) | set(PER_QUESTION_ONCE)
    fixed = sum(seconds for name, seconds in phases.items() if name not in scaled)
    per_run = fixed + per_step * steps + per_question * questions
    return runs * per_run + (0.0 if baseline_cached else baseline * questions)
