"""One run, top to bottom (the design's ten steps), as seen from the parent process.

The parent takes the provenance snapshot, asks the guard, starts the trainer child (steps 3–9, see
`harness.run.recipe`), and always writes the record — also when the child failed, was stopped by a
check, or died without a word. Nothing a run learned is lost.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import sys
import threading
import time
import traceback
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import settings
from harness.backends.checkpoint import is_resumable, latest, remove
from harness.config import SetupConfig
from harness.errors import UserError, describe_os_error
from harness.gpu.visibility import hide_integrated_gpus
from harness.guard import GuardConfig, GuardRecord, GuardVerdict, Sampler, offline_env, precheck, timed_lock
from harness.provenance import collect_provenance, default_stack
from harness.results import MemoryStats, RecordHeader, RunRecord, run_fingerprint
from harness.run.child import execute_plan
from harness.run.inputs import check_inputs
from harness.run.landing import land_run
from harness.run.launch import start_trainer
from harness.run.memory_env import check_memory_settings, name_the_cap
from harness.run.outcome import (
    Outcome,
    mark_unwritten,
    read_outcome,
    read_partial,
    train_progress,
    train_window,
    unwritten_error,
    write_ended,
)
from harness.run.plan import Placement, RunPlan, checkpoint_folder
from harness.run.timeline import bracket_trainer, close_books, command_started, prepend_phases, trainer_window
from harness.run.workdir import create_work_dir, keep_ended, remove_work_dir, sweep_stale_runs


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


def new_run_id(created: datetime, fp: str, seed: int) -> str:
    # Microseconds and a random tail: two runs of one setup and seed started in the same second (two
    # shells, two suite sessions) shared a work folder, and the first's cleanup deleted the second's.
    return f"{created.strftime('%Y%m%dT%H%M%S.%f')}Z-{fp[:8]}-s{seed}-{secrets.token_hex(3)}"


def check_and_sweep(setup: SetupConfig, options: RunOptions) -> None:
    """Before anything starts: every input checked (a UserError, no record, in a second instead of after
    the model has loaded), and the work folders of runs that ended without a record recorded."""
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


def checkpoints_of(setup: SetupConfig, options: RunOptions, header: RecordHeader) -> Path | None:
    """Where this run keeps its resumable checkpoints (None: none); says so when it resumes from one."""
    if options.timed or not options.checkpoints or not is_resumable(setup):
        return None
    folder = checkpoint_folder(options.results_dir, header.stack, header.host, setup, header.fingerprint)
    if resumes := latest(folder):
        print(
            f"lorabench: resuming from step {resumes[1].step} of {setup.recipe.steps} (checkpoint {resumes[0]})",
            file=sys.stderr,
        )
    return folder.resolve()


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


# How a stop from outside is named in the record: what the user did, not only the signal.
STOP_CAUSES = {
    "SIGINT": "SIGINT (Ctrl-C)",
    "SIGTERM": "SIGTERM (a timeout, docker stop, a cancelled job)",
    "SIGHUP": "SIGHUP (the terminal closed)",
}


def run_setup(setup: SetupConfig, options: RunOptions) -> tuple[RunRecord, Path]:
    # Where the record's seconds start (harness/run/timeline.py): the command's process start.
    process_start, began = command_started(), time.time()
    # Nothing has started yet: what fails here is an input (UserError, no record), found in a second
    # instead of after the model has loaded.
    check_and_sweep(setup, options)
    if setup.nodes > 1:
        # Several hosts: the same ten steps, with the nodes agreeing through the rendezvous's store.
        raise UserError(
            f"nodes: {setup.nodes} hosts run through harness.run.start (as `lorabench run` does), not here"
        )
    started = time.perf_counter()
    stamps = [time.time()]
    header = record_header(setup, options)
    stamps.append(time.time())

    # From here on the run has started: whatever happens, it ends with a record.
    work_dir = create_work_dir(options.results_dir, header)
    plan = RunPlan(
        setup=setup,
        work_dir=work_dir.resolve(),
        quiet=options.quiet,
        run_id=header.run_id,
        fingerprint=header.fingerprint,
        checkpoints=checkpoints_of(setup, options, header),
        progress_file=options.progress_file,
        visible_gpus=options.placement.visible_gpus if options.placement else None,
    )
    stamps.append(time.time())
    before = {
        "startup": began - process_start if process_start is not None else 0.0,
        "inputs": stamps[0] - began,
        "provenance": stamps[1] - stamps[0],
        "work_dir": stamps[2] - stamps[1],
    }
    ended = run_phases_in_child(plan, options)
    outcome = ended.outcome
    if outcome.refused_input and ended.interrupted is None:
        # The trainer's input check refused the run before any work: an input error, no record.
        remove_work_dir(work_dir)
        raise UserError(outcome.reason or "the trainer refused its inputs")
    if outcome.status == "killed" and outcome.train is None:
        outcome.train = train_progress(work_dir)  # the steps the journal kept

    # 10. The record, atomically, its predictions, adapter and traceback beside it.
    outcome.add_timings(total_s=round(time.perf_counter() - started, 2))
    # The parent's own seconds around the trainer: the guard (timed runs), reading the outcome. A trainer
    # stopped from outside never reported its window: its seconds are named as such, not as the parent's.
    unreported = options.isolate and outcome.trainer_wall_s is None
    around = "trainer_unreported" if unreported else "parent"
    prepend_phases(outcome, {**before, around: time.time() - stamps[2] - trainer_window(outcome)})
    close_books(outcome, process_start, began)
    record, path = land_record(options.results_dir, header, outcome, ended.guard, work_dir)
    if plan.checkpoints and record.status != "killed":
        remove(plan.checkpoints)  # a killed run keeps its checkpoint: the same command resumes from it
    if ended.interrupted is not None:
        # The record is written; the stop goes on up, so a suite or a shell loop stops too.
        print(summary_line(record, path), file=sys.stderr)
        raise KeyboardInterrupt(str(ended.interrupted)) from ended.interrupted
    return record, path


def stopped_outcome(work_dir: Path, signal_name: str) -> Outcome:
    """The outcome of a run stopped from outside. A trainer that had written its final outcome had
    finished: the run is recorded as it ended (the stop still goes on up). Otherwise `killed`, with
    every field the trainer had computed (data, model, baseline, checks, timings)."""
    with contextlib.suppress(OSError, ValueError):
        final = read_outcome(work_dir)
        if final is not None:
            return final
    outcome = read_partial(work_dir) or Outcome()
    outcome.status = "killed"
    outcome.reason = (
        f"stopped from outside by {STOP_CAUSES.get(signal_name, signal_name)} before the run ended"
    )
    return outcome


@dataclass(frozen=True)
class Phases:
    """How steps 2–9 ended: the outcome, the guard's verdict on the run, and a stop from outside (the
    record is written first; the stop then goes on up)."""

    outcome: Outcome
    guard: GuardRecord
    interrupted: BaseException | None = None


def run_phases_in_child(plan: RunPlan, options: RunOptions) -> Phases:
    """Steps 2–9: the guard (timed runs) and the trainer child. Whatever happens, the result is the
    outcome to record: the run has started, so it ends with a record."""
    guard = GuardRecord(timed=options.timed)
    try:
        with stop_signals_raise():
            if not options.timed:
                return Phases(run_trainer(plan, options) if options.isolate else execute_plan(plan), guard)
            # 2. Guard pre-check, under the host-wide lock so two timed phases never overlap.
            with timed_lock():
                # The suite's sibling workers are its own load, not foreign: the record says they shared.
                siblings = options.placement.sibling_pids if options.placement else set
                verdict = precheck(options.guard, exclude_pids=siblings())
                guard = GuardRecord(timed=True, precheck=verdict.to_dict())
                if not verdict.ok and not options.allow_noisy:
                    return Phases(Outcome(status="refused", reason=verdict.reason), guard)
                # 3–9. The trainer child, offline, watched by the sampler through the timed phase.
                with Sampler(options.guard, exclude_pids_fn=siblings) as sampler:
                    outcome = run_trainer(plan, options, extra_env=offline_env())
                return Phases(outcome, timing_verdict(verdict, sampler, plan.work_dir))
    except (Stopped, KeyboardInterrupt, Exception) as exc:
        return Phases(
            caught_outcome(exc, plan.work_dir),
            guard,
            exc if isinstance(exc, Stopped | KeyboardInterrupt) else None,
        )


def caught_outcome(exc: BaseException, work_dir: Path) -> Outcome:
    """The outcome of steps 2–9 ended by an exception (called while it is handled)."""
    if isinstance(exc, Stopped | KeyboardInterrupt):
        # The trainer's process group is already killed (run_capped).
        return stopped_outcome(work_dir, str(exc) if isinstance(exc, Stopped) else "SIGINT")
    if isinstance(exc, OSError):
        # The environment failed the parent mid-run (a full disk, the work folder removed): still a record.
        return Outcome(status="failed", reason=describe_os_error(exc), traceback=traceback.format_exc())
    if isinstance(exc, UserError):  # e.g. a guard that cannot take its readings
        return Outcome(status="failed", reason=str(exc))
    # A lorabench bug: the run had started, so it still ends with a record.
    return Outcome(status="failed", reason=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())


def land_record(
    results_dir: Path, header: RecordHeader, outcome: Outcome, guard: GuardRecord, work_dir: Path
) -> tuple[RunRecord, Path]:
    """The outcome first, durable in the work folder (`ended.json`), then the record from it: a record
    that cannot be written now (a full disk, a lock that cannot be taken, a stop while waiting for the
    lock) is written by the next run's sweep as the run ended, never guessed from a dead process."""
    try:
        write_ended(work_dir, outcome, guard)
    except OSError as exc:  # a disk too full even for this: the status and the errno in a file's name
        mark_unwritten(work_dir, outcome.status, exc)
    try:
        with stop_signals_raise():
            landed = land_run(results_dir, header, outcome, guard, work_dir)
    except (Stopped, KeyboardInterrupt) as exc:
        signal_name = str(exc) if isinstance(exc, Stopped) else "SIGINT"
        cause = f"stopped by {STOP_CAUSES.get(signal_name, signal_name)} while writing its record"
        with contextlib.suppress(OSError):
            write_ended(work_dir, outcome, guard, unwritten=cause)
        print(
            f"lorabench: the run ended ({outcome.status}) but was {cause}; its outcome is kept in {work_dir}, "
            f"and the next run in {results_dir} records it",
            file=sys.stderr,
        )
        raise KeyboardInterrupt(signal_name) from exc
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


class Stopped(Exception):
    """SIGTERM reached the parent: the run is being stopped from outside."""


@contextlib.contextmanager
def stop_signals_raise() -> Generator[None]:
    """SIGTERM raises `Stopped` in the main thread for the block, so that a run stopped by `timeout`,
    `docker stop` or a cancelled CI job still ends with a `killed` record (the H200 lost one that way).
    After the record, `run_setup` raises KeyboardInterrupt: the caller (CLI: exit 130, pytest) stops too."""
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


def timing_verdict(precheck_verdict: GuardVerdict, sampler: Sampler, work_dir: Path) -> GuardRecord:
    """Whether the timing holds: a quiet pre-check and no noise while the train phase ran."""
    window = train_window(work_dir)
    report = sampler.report(window=window)
    valid = precheck_verdict.ok and report.valid
    reasons = [r for r in (precheck_verdict.reason if not precheck_verdict.ok else None, report.reason) if r]
    return GuardRecord(
        timed=True,
        precheck=precheck_verdict.to_dict(),
        sampler=report.to_dict(),
        timing_valid=valid,
        timing_invalid_reason="; ".join(reasons) or None,
    )


def run_trainer(plan: RunPlan, options: RunOptions, extra_env: dict[str, str] | None = None) -> Outcome:
    # One process, or torchrun on this host (harness.run.launch); several hosts: harness.run.nodes.
    launched = time.time()
    child = start_trainer(
        plan, cap_bytes=options.memory_cap_bytes, floor_bytes=options.memory_floor_bytes, extra_env=extra_env
    )
    returned = time.time()
    outcome = read_outcome(plan.work_dir)
    if outcome is None:
        # Died without a word: killed, with what it had computed so far; or it could not write its
        # outcome (a full disk), which its exit status names.
        outcome = read_partial(plan.work_dir) or Outcome()
        error = unwritten_error(child.returncode, plan.work_dir)
        outcome.status = "failed" if error else "killed"
        outcome.reason = (
            f"the trainer could not write its outcome: {describe_os_error(error)}" if error else None
        )
    if outcome.status == "killed" and child.reason and not outcome.reason:
        outcome.reason = f"trainer {child.reason} before reporting an outcome"
    if (
        options.memory_cap_bytes is not None
        and outcome.status in ("failed", "killed")
        and not outcome.refused_input
    ):
        outcome.reason = name_the_cap(outcome.reason, child, options.memory_cap_bytes)
    bracket_trainer(outcome, launched, returned)
    memory = outcome.memory or MemoryStats(device=outcome.model.device if outcome.model else "unknown")
    outcome.memory = memory.model_copy(
        update={
            "peak_rss_bytes": child.peak_rss_bytes,
            "cap_method": child.cap_method,
            "watchdog_reading": child.reading or None,
        }
    )
    return outcome


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
