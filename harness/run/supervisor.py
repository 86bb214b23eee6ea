"""One supervisor, two ways to run it: the phases every run goes through, as seen from a parent process.

`supervise` is the one order of a run (the design's ten steps), whichever way (`Way`) it runs: 0. every
input checked (a UserError, no record, in a second instead of after the model has loaded) and stale work
folders recorded; 1. the provenance snapshot and the record's header; 2–10. the way's own guard,
trainer(s) and record, written whatever happened; then a stop from outside goes on up. The ways: one host
(`harness.run.parent.OneHost`) or several (`harness.run.nodes.Nodes`); `harness.run.start` picks.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import sys
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from harness import settings
from harness.backends.checkpoint import is_resumable
from harness.config import SetupConfig
from harness.errors import UserError, describe_os_error
from harness.gpu.visibility import hide_integrated_gpus
from harness.guard import GuardConfig, GuardRecord
from harness.provenance import collect_provenance, default_stack
from harness.results import RUN_ID_TIME, MemoryStats, NodeInfo, RecordHeader, RunRecord, run_fingerprint
from harness.run.capped import ChildOutcome
from harness.run.inputs import check_inputs
from harness.run.landing import land_run
from harness.run.memory_env import check_memory_settings, name_the_cap
from harness.run.outcome import (
    Outcome,
    mark_unwritten,
    read_outcome,
    read_partial,
    unwritten_error,
    write_ended,
)
from harness.run.plan import Placement
from harness.run.timeline import command_started
from harness.run.workdir import keep_ended, remove_work_dir, sweep_stale_runs


@dataclass(frozen=True)
class RunOptions:
    results_dir: Path = Path("results")
    stack: str = field(default_factory=default_stack)
    timed: bool = False
    allow_noisy: bool = False
    guard: GuardConfig = field(default_factory=GuardConfig)
    quiet: bool = False
    isolate: bool = True  # the trainer in a child process; tests may run it inline
    memory_cap_bytes: int | None = field(default_factory=settings.MEM_CAP.get)
    # The watchdog kills the trainer, never the host, when available memory falls below this floor
    # (unified-memory APUs freeze instead of failing an allocation).
    memory_floor_bytes: int | None = field(default_factory=settings.MEMORY_FLOOR.get)
    # Free space the results folder needs before a run starts (adapter, predictions, record).
    min_free_bytes: int | None = field(default_factory=settings.MIN_FREE.get)
    # Resumable checkpoints under <results>/.checkpoints (untimed runs of one process; harness/run/plan.py).
    checkpoints: bool = True
    progress_file: Path | None = None  # the trainer's progress lines, for a follower (the suite's)
    placement: Placement | None = None  # the devices the suite gave the run (None: what the command sees)


@dataclass(frozen=True)
class Begun:
    """The run as steps 0 and 1 left it: what it is, and when they ended (the record's timings)."""

    setup: SetupConfig
    options: RunOptions
    header: RecordHeader
    started: float  # perf_counter once the inputs were checked: the record's total_s counts from here
    process_start: float | None  # the command's process start (harness/run/timeline.py)
    began: float  # time.time() when the supervisor began
    before: dict[str, float]  # seconds of steps 0 and 1 (the record's phases): startup, inputs, provenance


@dataclass(frozen=True)
class Landed:
    """How a run ended for this process: the record, where it is, and a stop from outside to pass on."""

    record: RunRecord
    path: Path
    interrupted: BaseException | None = None


class Way(Protocol):
    """One way to run steps 2–10: on this host, or across several."""

    def run(self, begun: Begun) -> Landed:
        """The guard, the trainer(s) and the record: once begun, a run always ends with a record."""


def supervise(way: Way, setup: SetupConfig, options: RunOptions) -> tuple[RunRecord, Path]:
    # Where the record's seconds start (harness/run/timeline.py): the command's process start.
    process_start, began = command_started(), time.time()
    check_and_sweep(setup, options)
    started, checked = time.perf_counter(), time.time()
    header = record_header(setup, options)
    before = {
        "startup": began - process_start if process_start is not None else 0.0,
        "inputs": checked - began,
        "provenance": time.time() - checked,
    }
    landed = way.run(Begun(setup, options, header, started, process_start, began, before))
    if landed.interrupted is not None:
        # The record is written; the stop goes on up, so a suite or a shell loop stops too.
        print(summary_line(landed.record, landed.path), file=sys.stderr)
        raise KeyboardInterrupt(str(landed.interrupted)) from landed.interrupted
    return landed.record, landed.path


def new_run_id(created: datetime, fp: str, seed: int) -> str:
    # Microseconds and a random tail: two runs of one setup and seed started in the same second (two
    # shells, two suite sessions) shared a work folder, and the first's cleanup deleted the second's.
    return f"{created.strftime(RUN_ID_TIME)}Z-{fp[:8]}-s{seed}-{secrets.token_hex(3)}"


def check_and_sweep(setup: SetupConfig, options: RunOptions) -> None:
    """Step 0: every input checked, and the work folders of runs that ended without a record recorded."""
    check_memory_settings(options.memory_cap_bytes, options.memory_floor_bytes)
    refuse_unused_checkpoints(setup, options)
    check_inputs(setup, options.results_dir, options.min_free_bytes)
    for swept in sweep_stale_runs(options.results_dir):
        print(f"lorabench: {swept}", file=sys.stderr)


def refuse_unused_checkpoints(setup: SetupConfig, options: RunOptions) -> None:
    """A `recipe.checkpoint_every` the user set that this run cannot honour is refused, not ignored."""
    every = setup.recipe.checkpoint_every
    if "checkpoint_every" not in setup.recipe.model_fields_set or not every:
        return
    why = (
        "a timed run saves no checkpoints (the saves would be in its time)"
        if options.timed
        else "a run of several processes (gpus or nodes > 1) is not resumable"
        if not is_resumable(setup)
        else "this run saves no checkpoints"
        if not options.checkpoints
        else None
    )
    if why:
        raise UserError(f"recipe.checkpoint_every = {every} cannot take effect: {why}; leave it out")


def record_header(setup: SetupConfig, options: RunOptions) -> RecordHeader:
    """Step 1, the provenance snapshot (host, stack, git; an iGPU is hidden from HIP first, before torch
    looks), and the record's fields known at the start: run id, fingerprint, setup."""
    created = datetime.now(UTC)
    provenance = collect_provenance(options.stack, hidden_gpus=hide_integrated_gpus())
    if options.placement is not None:
        provenance = provenance.model_copy(update={"placement": options.placement.facts})
    fp = run_fingerprint(setup, options.stack, str(provenance.host.kind))
    return RecordHeader(
        run_id=new_run_id(created, fp, setup.recipe.seed),
        created=created.isoformat(timespec="seconds"),
        experiment=setup.experiment,
        setup_name=setup.name,
        seed=setup.recipe.seed,
        stack=options.stack,
        host=str(provenance.host.id),
        fingerprint=fp,
        setup=setup,
        provenance=provenance,
    )


def trainer_outcome(work_dir: Path, child: ChildOutcome, cap_bytes: int | None) -> Outcome:
    """What the trainer (this host's reporting process) left in the work folder once it ended, with the
    memory its parent saw from outside."""
    outcome = read_outcome(work_dir)
    if outcome is None:
        # Died without a word: killed, with what it had computed so far; or it could not write its
        # outcome (a full disk), which its exit status names.
        outcome = read_partial(work_dir) or Outcome()
        error = unwritten_error(child.returncode, work_dir)
        outcome.status = "failed" if error else "killed"
        outcome.reason = (
            f"the trainer could not write its outcome: {describe_os_error(error)}" if error else None
        )
    if outcome.status == "killed" and child.reason and not outcome.reason:
        outcome.reason = f"trainer {child.reason} before reporting an outcome"
    if cap_bytes is not None and outcome.status in ("failed", "killed") and not outcome.refused_input:
        outcome.reason = name_the_cap(outcome.reason, child, cap_bytes)
    memory = outcome.memory or MemoryStats(device=outcome.model.device if outcome.model else "unknown")
    outcome.memory = memory.model_copy(
        update={
            "peak_rss_bytes": child.peak_rss_bytes,
            "cap_method": child.cap_method,
            "watchdog_reading": child.reading or None,
        }
    )
    return outcome


def land_record(
    results_dir: Path,
    header: RecordHeader,
    outcome: Outcome,
    guard: GuardRecord,
    work_dir: Path,
    nodes: list[NodeInfo] | None = None,
) -> tuple[RunRecord, Path]:
    """Step 10, the outcome first, durable in the work folder (`ended.json`), then the record from it: a record
    that cannot be written now (a full disk, a lock that cannot be taken, a stop while waiting for the
    lock) is written by the next run's sweep as the run ended, never guessed from a dead process."""
    try:
        write_ended(work_dir, outcome, guard)
    except OSError as exc:  # a disk too full even for this: the status and the errno in a file's name
        mark_unwritten(work_dir, outcome.status, exc)
    try:
        with stop_signals_raise():
            landed = land_run(results_dir, header, outcome, guard, work_dir, nodes=nodes)
    except (Stopped, KeyboardInterrupt) as exc:
        name = signal_name(exc)
        cause = f"stopped by {STOP_CAUSES.get(name, name)} while writing its record"
        with contextlib.suppress(OSError):
            write_ended(work_dir, outcome, guard, unwritten=cause)
        print(
            f"lorabench: the run ended ({outcome.status}) but was {cause}; its outcome is kept in {work_dir}, "
            f"and the next run in {results_dir} records it",
            file=sys.stderr,
        )
        raise KeyboardInterrupt(name) from exc
    except (OSError, UserError) as exc:
        cause = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
        keep_ended(work_dir, outcome, guard, cause)
        raise UserError(
            f"the run ended ({outcome.status}{': ' + outcome.reason if outcome.reason else ''}) but its record "
            f"could not be written: {cause}. Its outcome is kept in {work_dir}; the next run in {results_dir} "
            "records it"
        ) from exc
    assert landed is not None  # not late: nothing else lands this run
    remove_work_dir(work_dir)
    return landed


# How a stop from outside is named in the record: what the user did, not only the signal.
STOP_CAUSES = {
    "SIGINT": "SIGINT (Ctrl-C)",
    "SIGTERM": "SIGTERM (a timeout, docker stop, a cancelled job)",
    "SIGHUP": "SIGHUP (the terminal closed)",
}


class Stopped(Exception):
    """SIGTERM reached the parent: the run is being stopped from outside."""


def signal_name(stop: BaseException) -> str:
    """The signal behind a stop from outside: `Stopped` names it, a KeyboardInterrupt is Ctrl-C."""
    return str(stop) if isinstance(stop, Stopped) else "SIGINT"


def stopped_reason(name: str) -> str:
    return f"stopped from outside by {STOP_CAUSES.get(name, name)} before the run ended"


@contextlib.contextmanager
def stop_signals_raise() -> Generator[None]:
    """SIGTERM raises `Stopped` in the main thread for the block, so that a run stopped by `timeout`,
    `docker stop` or a cancelled CI job still ends with a `killed` record (the H200 lost one that way).
    After the record, `supervise` raises KeyboardInterrupt: the caller (CLI: exit 130, pytest) stops too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_stopped(signum: int, _frame: Any) -> None:
        raise Stopped(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, raise_stopped) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def summary_line(record: RunRecord, path: Path) -> str:
    parts = [f"{record.status}", f"{record.experiment}/{record.setup_name} seed {record.seed}"]
    if record.baseline and record.trained:
        parts.append(f"exact match {record.baseline.exact_match:.1f}% → {record.trained.exact_match:.1f}%")
    elif record.trained:
        parts.append(f"exact match {record.trained.exact_match:.1f}%")
    if record.timings.total_s:
        parts.append(f"{record.timings.total_s:.0f} s")
    if record.reason:
        parts.append(f"reason: {record.reason}")
    parts.append(f"record: {path}")
    return " | ".join(parts)
