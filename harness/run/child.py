"""The trainer child: one process (one per rank under DDP) that runs design steps 3–9 for one run.

`python -m harness.run.child JOB.json`. It runs in its own process so a memory cap or watchdog can kill
it without killing the run: the parent then still writes a record. A typed `RunPlan` comes in (harness/run/plan.py), a typed
`Outcome` goes out (`harness.run.outcome`); the recipe itself is `harness.run.recipe`, imported only
here, in the child: it pulls in torch, which the parent never imports.
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import sys
import time
import traceback
from pathlib import Path

from harness import settings
from harness.backends.common import silence_library_progress
from harness.errors import InputRefused, RunStopped, UserError, describe_os_error, os_error_within
from harness.results import MemoryStats
from harness.run.distributions import remember_distributions
from harness.run.gate import await_gate
from harness.run.lifeline import watch_parent
from harness.run.outcome import EVENTS_FILE, Events, Outcome, unwritten_exit, write_outcome
from harness.run.plan import RunPlan
from harness.run.progress import Progress
from harness.run.ranks import bind_local_gpu, is_main_process, rank_name
from harness.run.timeline import add_phase, phase, process_started
from harness.run.workdir import mark_trainer


def peak_rss_bytes() -> int:
    # ru_maxrss is KiB on Linux; this process only (the parent is not counted).
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def keep_imports_out_of_gc() -> None:
    """The stack's imports made ~440,000 objects that live as long as the process: frozen out of the cyclic
    GC, a full collection no longer walks them (this Xeon: 197 ms after the imports, 1-3 ms frozen with the
    model loaded). On the H200 one full collection fell inside each Exp A seed's steps, 0.25-0.29 s
    (reports/benchmarks/h200/2026-12-04-checkpoint-saves.txt)."""
    gc.freeze()


def execute_plan(plan: RunPlan, started_at: float | None = None) -> Outcome:
    """Run steps 3–9; never raises for run failures — they become the outcome's status and reason.
    `started_at`: this process's start (wall clock) when it is the trainer child, for the record's phases."""
    began = time.time()
    if plan.setup.backend == "unsloth":
        # Unsloth patches transformers, PEFT and TRL at import: it must come first.
        with contextlib.suppress(ImportError):
            import unsloth  # ruff: ignore[unused-import]
    from harness.run import recipe

    main_process = is_main_process()
    # Rank 0 keeps what it has computed in the work folder as it goes: a killed run's record keeps it.
    outcome = Outcome(started_at=started_at)
    if main_process:
        outcome.keep_in(plan.work_dir)
    events = Events(plan.work_dir / (EVENTS_FILE if main_process else f"events-{rank_name()}.jsonl"))
    progress = Progress(
        quiet=plan.quiet or not main_process, events_file=plan.progress_file if main_process else None
    )
    try:
        # The interpreter and the heavy imports (torch, transformers, PEFT, TRL) as one phase, so the load
        # phase times loading (inline, under tests: only the imports this call made).
        recipe.preload(plan.setup)
        if started_at is not None:  # the trainer's own process, not a run inline in its caller's
            keep_imports_out_of_gc()
        if progress.quiet:
            silence_library_progress()
        add_phase(outcome, "child_start", time.time() - (started_at if started_at is not None else began))
        if plan.await_guard:
            with phase(outcome, "guard"):
                await_gate(plan.work_dir)
        recipe.run_phases(plan, outcome, events, progress)
    except UserError as exc:
        outcome.status, outcome.reason = "failed", str(exc)
        outcome.refused_input = isinstance(exc, InputRefused)
    except OSError as exc:
        # The environment, not the setup: a full disk, a folder removed under the run. One line says
        # which file and what to do; the traceback is kept all the same.
        outcome.status, outcome.reason = "failed", describe_os_error(exc)
        outcome.traceback = traceback.format_exc()
    except RunStopped as exc:
        outcome.status, outcome.reason = exc.status, exc.reason
    except Exception as exc:
        # An I/O fault in another exception's clothes (a checkpoint save on a full disk) reads as one.
        os_error = os_error_within(exc)
        outcome.status = "failed"
        outcome.reason = describe_os_error(os_error) if os_error else f"{type(exc).__name__}: {exc}"
        outcome.traceback = traceback.format_exc()
    device = outcome.model.device if outcome.model else "unknown"
    memory = outcome.memory or MemoryStats(device=device)
    outcome.memory = memory.model_copy(update={"peak_rss_bytes": peak_rss_bytes()})
    outcome.finished_at = time.time()
    return outcome


def main(argv: list[str]) -> int:
    started_at = process_started()
    # First, before torch loads: a trainer whose parent is gone must not train on unwatched.
    watch_parent()
    plan = RunPlan.read(Path(argv[0]))
    if is_main_process():
        mark_trainer(plan.work_dir)
    bind_local_gpu()
    # Before transformers and TRL are imported: each reads every installed distribution's metadata.
    remember_distributions(settings.CACHE.value())
    outcome = execute_plan(plan, started_at)
    if is_main_process():
        try:
            write_outcome(outcome, plan.work_dir)
        except OSError as exc:  # the exit status tells the parent why (see harness.run.outcome)
            print(
                f"lorabench trainer: could not write its outcome: {describe_os_error(exc)}", file=sys.stderr
            )
            return unwritten_exit(exc)
    return 0 if outcome.status == "ok" else 1


def leave(code: int, world_size: int) -> None:
    """Ends the trainer once its outcome is on disk. One process: at once (os._exit), skipping the
    interpreter's teardown of torch, CUDA and every module (seconds the parent waited for nothing: the
    record's child_exit phase). Under torchrun the ranks end the usual way, so their process group closes."""
    if world_size > 1:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    leave(main(sys.argv[1:]), int(os.environ.get("WORLD_SIZE", "1")))
