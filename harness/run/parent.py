"""One run on one host: the supervisor's way (harness.run.supervisor) of steps 2–10 from the parent process.

The parent asks the guard, starts the trainer child (steps 3–9, see `harness.run.recipe`), and always
writes the record — also when the child failed, was stopped by a check, or died without a word. Nothing
a run learned is lost.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from harness.backends.checkpoint import is_resumable, latest, remove
from harness.config import SetupConfig
from harness.errors import UserError, describe_os_error
from harness.guard import GuardRecord, GuardVerdict, Precheck, Sampler, offline_env, timed_lock
from harness.results import RecordHeader, RunRecord
from harness.run.child import execute_plan
from harness.run.gate import open_gate
from harness.run.launch import start_trainer
from harness.run.outcome import Outcome, read_outcome, read_partial, train_progress, train_window
from harness.run.plan import RunPlan, checkpoint_folder
from harness.run.supervisor import (
    Begun,
    Landed,
    RunOptions,
    Stopped,
    land_record,
    signal_name,
    stop_signals_raise,
    stopped_reason,
    supervise,
    trainer_outcome,
)
from harness.run.timeline import bracket_trainer, close_books, prepend_phases, trainer_window
from harness.run.workdir import create_work_dir, remove_work_dir


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


class OneHost:
    """The supervisor's way on one host: the guard under the host-wide timed lock, one trainer child (or
    torchrun on this host), the record written by this process."""

    def run(self, begun: Begun) -> Landed:
        options, header, at = begun.options, begun.header, time.time()
        if begun.setup.nodes > 1:  # several hosts agree through the rendezvous's store: harness.run.nodes
            raise UserError(
                f"nodes: {begun.setup.nodes} hosts run through harness.run.start (as `lorabench run` does), not here"
            )
        # From here on the run has started: whatever happens, it ends with a record.
        work_dir = create_work_dir(options.results_dir, header)
        plan = RunPlan(
            setup=begun.setup,
            work_dir=work_dir.resolve(),
            quiet=options.quiet,
            run_id=header.run_id,
            fingerprint=header.fingerprint,
            checkpoints=checkpoints_of(begun.setup, options, header),
            progress_file=options.progress_file,
            gpu_env=options.placement.gpu_env if options.placement else {},
            await_guard=options.timed,
        )
        made = time.time()
        ended = run_phases_in_child(plan, options)
        outcome = ended.outcome
        if outcome.refused_input and ended.interrupted is None:
            # The trainer's input check refused the run before any work: an input error, no record.
            remove_work_dir(work_dir)
            raise UserError(outcome.reason or "the trainer refused its inputs")
        if outcome.status == "killed" and outcome.train is None:
            outcome.train = train_progress(work_dir)  # the steps the journal kept

        # 10. The record, atomically, its predictions, adapter and traceback beside it.
        outcome.add_timings(total_s=round(time.perf_counter() - begun.started, 2))
        # The parent's own seconds around the trainer: the guard (timed runs), reading the outcome. A
        # trainer stopped from outside never reported its window: its seconds are named as such.
        around = "trainer_unreported" if options.isolate and outcome.trainer_wall_s is None else "parent"
        phases = {
            **begun.before,
            "work_dir": made - at,
            around: time.time() - made - trainer_window(outcome),
        }
        prepend_phases(outcome, phases)
        close_books(outcome, begun.process_start, begun.began)
        record, path = land_record(options.results_dir, header, outcome, ended.guard, work_dir)
        if plan.checkpoints and record.status != "killed":
            remove(plan.checkpoints)  # a killed run keeps its checkpoint: the same command resumes from it
        return Landed(record, path, ended.interrupted)


def run_setup(setup: SetupConfig, options: RunOptions) -> tuple[RunRecord, Path]:
    return supervise(OneHost(), setup, options)


def stopped_outcome(work_dir: Path, signal_name: str) -> Outcome:
    """The outcome of a run stopped from outside. A trainer that had written its final outcome had
    finished: the run is recorded as it ended (the stop still goes on up). Otherwise `killed`, with
    every field the trainer had computed (data, model, baseline, checks, timings)."""
    with contextlib.suppress(OSError, ValueError):
        final = read_outcome(work_dir)
        if final is not None:
            return final
    outcome = read_partial(work_dir) or Outcome()
    outcome.status, outcome.reason = "killed", stopped_reason(signal_name)
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
            # 2. Guard pre-check, under the host-wide lock so two timed phases never overlap. Its window
            # overlaps the trainer's start (3.2 s of imports a seed on the H200), which then waits for the
            # verdict before it touches the data or a device (harness.run.gate).
            with timed_lock():
                # The suite's sibling workers are its own load, not foreign: the record says they shared.
                siblings = options.placement.sibling_pids if options.placement else set
                checking = Precheck(options.guard, exclude_pids=siblings())
                verdict = GatedVerdict(checking, plan.work_dir, allow_noisy=options.allow_noisy)
                # 3–9. The trainer child, offline, watched by the sampler through the timed phase.
                with Sampler(options.guard, exclude_pids_fn=siblings) as sampler:
                    outcome = run_trainer(plan, options, extra_env=offline_env())
                said = verdict.result()
                if not said.ok and not options.allow_noisy:
                    refused = Outcome(status="refused", reason=said.reason)
                    return Phases(refused, GuardRecord(timed=True, precheck=said.to_dict()))
                return Phases(outcome, timing_verdict(said, sampler, plan.work_dir))
    except (Stopped, KeyboardInterrupt, Exception) as exc:
        return Phases(
            caught_outcome(exc, plan.work_dir),
            guard,
            exc if isinstance(exc, Stopped | KeyboardInterrupt) else None,
        )


class GatedVerdict:
    """The pre-check's verdict, taken in a thread while the trainer starts, and the gate it opens."""

    def __init__(self, checking: Precheck, work_dir: Path, *, allow_noisy: bool) -> None:
        self._verdict: GuardVerdict | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._decide, args=(checking, work_dir, allow_noisy), name="guard-precheck", daemon=True
        )
        self._thread.start()

    def _decide(self, checking: Precheck, work_dir: Path, allow_noisy: bool) -> None:
        try:
            self._verdict = checking.verdict()
        except BaseException as exc:  # e.g. a guard that cannot take its readings: the parent raises it
            self._error = exc
        go = self._verdict is not None and (self._verdict.ok or allow_noisy)
        with contextlib.suppress(OSError):  # a work folder gone with a stopped run: no one waits
            open_gate(work_dir, go=go)

    def result(self) -> GuardVerdict:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._verdict is not None
        return self._verdict


def caught_outcome(exc: BaseException, work_dir: Path) -> Outcome:
    """The outcome of steps 2–9 ended by an exception (called while it is handled)."""
    if isinstance(exc, Stopped | KeyboardInterrupt):
        # The trainer's process group is already killed (run_capped).
        return stopped_outcome(work_dir, signal_name(exc))
    if isinstance(exc, OSError):
        # The environment failed the parent mid-run (a full disk, the work folder removed): still a record.
        return Outcome(status="failed", reason=describe_os_error(exc), traceback=traceback.format_exc())
    if isinstance(exc, UserError):  # e.g. a guard that cannot take its readings
        return Outcome(status="failed", reason=str(exc))
    # A lorabench bug: the run had started, so it still ends with a record.
    return Outcome(status="failed", reason=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())


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
    outcome = trainer_outcome(plan.work_dir, child, options.memory_cap_bytes)
    bracket_trainer(outcome, launched, returned)
    return outcome
