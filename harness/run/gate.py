"""The guard's gate: a timed run's trainer starts during the guard's pre-check window and waits here, after
its imports and before it reads the data or touches a device, for the parent's verdict.

The pre-check watches the machine for 3 s before any timed phase; the trainer's start (its interpreter and
the imports of torch, transformers, PEFT and TRL) took 3.2 s of every timed Exp A seed on the lent H200,
after that window. Both run at once now, and the trainer goes on only when the machine was quiet (or the
run allows noise). The verdict is one file in the run's work folder, written once by the parent.
"""

from __future__ import annotations

import time
from pathlib import Path

from harness import atomic
from harness.errors import RunStopped

GATE_FILE = "guard-verdict"
GO, REFUSED = "go", "refused"
# The parent writes the verdict within the window (at most 60 s) and its GPU tools' timeouts; a trainer
# whose parent died is ended by its lifeline (harness.run.lifeline) long before this.
WAIT_LIMIT_S = 600.0
POLL_S = 0.01


def open_gate(work_dir: Path, *, go: bool) -> None:
    """The parent's verdict for the trainer waiting in `work_dir` (a folder already removed: no one waits)."""
    if work_dir.is_dir():
        atomic.write_text(work_dir / GATE_FILE, GO if go else REFUSED)


def await_gate(work_dir: Path, limit_s: float = WAIT_LIMIT_S) -> None:
    """Returns when the parent says go; raises `RunStopped` when it refused the run or never said."""
    gate, deadline = work_dir / GATE_FILE, time.monotonic() + limit_s
    while not gate.exists():
        if time.monotonic() > deadline:
            raise RunStopped("failed", f"no verdict from the quiet-machine guard after {limit_s:.0f} s")
        time.sleep(POLL_S)
    if gate.read_text(encoding="utf-8").strip() != GO:
        raise RunStopped("refused", "the quiet-machine guard refused to time this run")
