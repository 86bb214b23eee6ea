"""The host checks' verdict for a suite that started beside them: `lorabench bench` starts pytest and runs
the doctor's checks (`lorabench doctor`) at once, and each run that trains waits here for their verdict.

The checks took 5.4-6.3 s of the suite's start on the H200 (2026-12-04, `bench_gpu.sh doctor-ab`: torch's
import, the GPU tools); pytest's start, its workers' and their warm trainers' imports take longer, so the
checks now end before the first run needs them instead of before pytest starts. The verdict is one file,
written once by bench: `go`, or the line that names what blocks.
"""

from __future__ import annotations

import time
from pathlib import Path

from harness import atomic
from harness.errors import UserError

GO = "go"
# The doctor's slowest question (a GPU tool that hangs) answers within its 30 s timeout.
WAIT_LIMIT_S = 300.0
POLL_S = 0.02


class HostBlocked(UserError):
    """The host checks found what stops every run (`lorabench doctor` names it and the fix)."""


def open_host_gate(verdict: Path, blocked: str | None) -> None:
    """bench's side: `go`, or the line that names what blocks (None: go)."""
    atomic.write_text(verdict, GO if blocked is None else blocked)


def await_host_gate(verdict: Path, limit_s: float = WAIT_LIMIT_S) -> None:
    """A run's side, before it trains: returns on `go`; raises `HostBlocked` on anything else or no verdict."""
    deadline = time.monotonic() + limit_s
    while not verdict.exists():
        if time.monotonic() > deadline:
            raise HostBlocked(f"no verdict from the host checks (lorabench doctor) after {limit_s:.0f} s")
        time.sleep(POLL_S)
    said = verdict.read_text(encoding="utf-8").strip()
    if said != GO:
        raise HostBlocked(said)
