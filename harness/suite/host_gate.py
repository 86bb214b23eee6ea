"""The host checks' verdict for a suite that started beside them: `lorabench bench` starts pytest and runs
the doctor's checks (`lorabench doctor`) at once, and each run that trains waits here for their verdict.

Before, bench ran them first: 3.8-5.7 s of Exp A's suite on the H200 passed before pytest started
(2026-12-04, each output line stamped; `lorabench doctor --no-guard` alone 5.4-6.3 s, torch's import
most of it). pytest's start, its workers' and their warm trainers' imports take longer (the first seed
read its data ~10 s in), so the checks now end before the first run needs them. The verdict is one file,
written once by bench: `go`, or the line that names what blocks. Beside it bench leaves its identity first
(harness.run.lifeline's: a reused pid is not mistaken for it): a run stops waiting when bench has ended
without a verdict (killed), instead of after the wait's limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from harness import atomic
from harness.errors import UserError
from harness.run.lifeline import identity, is_alive

GO = "go"
# The doctor's slowest question (a GPU tool that hangs) answers within its 30 s timeout.
WAIT_LIMIT_S = 300.0
POLL_S = 0.02
WRITER_EVERY_S = 0.5  # how often a waiting run asks whether bench still lives


class HostBlocked(UserError):
    """The host checks found what stops every run (`lorabench doctor` names it and the fix)."""


def expect_host_gate(verdict: Path) -> None:
    """bench's side, before pytest starts: its identity beside the verdict to come."""
    atomic.write_text(_writer_file(verdict), identity())


def open_host_gate(verdict: Path, blocked: str | None) -> None:
    """bench's side: `go`, or the line that names what blocks (None: go)."""
    atomic.write_text(verdict, GO if blocked is None else blocked)


def await_host_gate(verdict: Path, limit_s: float = WAIT_LIMIT_S) -> None:
    """A run's side, before it trains: returns on `go`; raises `HostBlocked` on anything else, when bench
    ended without a verdict, or when none came within `limit_s`."""
    deadline = time.monotonic() + limit_s
    writer, asked = _writer(verdict), time.monotonic()
    while not verdict.exists():
        now = time.monotonic()
        if now > deadline:
            raise HostBlocked(f"no verdict from the host checks (lorabench doctor) after {limit_s:.0f} s")
        if writer is not None and now - asked >= WRITER_EVERY_S:
            asked = now
            if not is_alive(writer) and not verdict.exists():
                pid = writer.split("/")[2] if writer.count("/") == 3 else "?"
                raise HostBlocked(f"lorabench bench (pid {pid}) ended before its host checks did")
        time.sleep(POLL_S)
    said = verdict.read_text(encoding="utf-8").strip()
    if said != GO:
        raise HostBlocked(said)


def accept_arguments(verdict: Path) -> None:
    """pytest's side (its controller, once its options and lorabench's are parsed): bench shows the host
    checks' screen after this, not under pytest's refusal of its arguments."""
    atomic.write_text(_accepted_file(verdict), "accepted")


def arguments_settled(verdict: Path, ended: Callable[[], bool]) -> None:
    """bench's side: returns once pytest has accepted its arguments or `ended` says it has ended."""
    while not _accepted_file(verdict).exists() and not ended():
        time.sleep(POLL_S)


def _accepted_file(verdict: Path) -> Path:
    return verdict.with_name(verdict.name + ".accepted")


def _writer_file(verdict: Path) -> Path:
    return verdict.with_name(verdict.name + ".writer")


def _writer(verdict: Path) -> str | None:
    try:
        return _writer_file(verdict).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None
