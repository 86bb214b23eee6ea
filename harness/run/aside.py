"""Scoring beside training: the task's scores computed in a second process while this one trains (issue 28).

Scoring the untrained model's answers needs nothing that training makes, yet it held up every run before
its first step: on the lent H200 the baseline_score phase took 1.3-1.5 s of a 33 s Exp A seed alone, and
1.9-2.0 s with three seeds at once (the SQL task executes every answer in SQLite several times;
reports/benchmarks/h200/logs-2026-12-01-simplification/lease3/final_breakdown.txt). Here it goes to one worker process,
started when the answers are ready, and the run collects it after training (the collection's wait is
the baseline_score phase). The final scoring goes to the same worker, so a task that remembers the
scores it computed (the SQL task does) does not score the baseline's answers a second time.

Only where the machine has cores to spare (at least `MIN_CPUS`): on a 2-core CPU host training uses both,
and a second process would take its time from the steps. Elsewhere the same calls run in this process.
The worker ends with this process: it exits when its parent is gone (a SIGKILLed trainer leaves no worker).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Generator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from harness.cpuinfo import usable_cores

T = TypeVar("T")
MIN_CPUS = 4
POLL_S = 0.5


def _exit_with_parent(parent: int) -> None:
    """In the worker: a daemon thread that ends it once the process that started it is gone."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="lorabench-aside-lifeline", daemon=True).start()


class Aside:
    """Calls run in the worker when there is one, else at once in this process (a finished Future)."""

    def __init__(self, pool: ProcessPoolExecutor | None) -> None:
        self.pool = pool

    @property
    def in_worker(self) -> bool:
        return self.pool is not None

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        if self.pool is not None:
            return self.pool.submit(fn, *args)
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # the caller's .result() raises it, as a worker's would
            done.set_exception(exc)
        return done


@contextlib.contextmanager
def scoring_aside(choice: str = "auto") -> Generator[Aside]:
    """A worker for the span (`choice`: "1", or "auto" where cores are spare; "0" none); its calls are
    cancelled on the way out."""
    if choice == "0" or (choice == "auto" and usable_cores() < MIN_CPUS):
        yield Aside(None)
        return
    # spawn: a fresh interpreter that imports only what the scoring needs (never a fork of a process
    # that holds a GPU context and the trainer's threads).
    pool = ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_exit_with_parent,
        initargs=(os.getpid(),),
    )
    try:
        yield Aside(pool)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
