"""A host-wide lock so two timed phases never overlap (two shells, pytest-xdist workers).

`fcntl.flock` on one file: the kernel releases it when the holder dies, so a crashed run never
leaves a stale lock. The holder writes its pid and command into the file so a waiter can say who.
Not covered: hosts without flock (Windows), and separate containers that do not share /tmp
(mount the lock directory, or set LORABENCH_LOCK_DIR to a shared path).
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import UserError

log = logging.getLogger(__name__)
LOCK_NAME = "lorabench-timed.lock"


class TimedLockBusy(UserError):
    """Another timed phase holds the host-wide lock longer than the caller was willing to wait."""


def default_lock_path() -> Path:
    return Path(os.environ.get("LORABENCH_LOCK_DIR") or "/tmp") / LOCK_NAME


def read_holder(path: Path) -> str:
    """What the current holder wrote: 'pid 1234 since 2025-…: python -m pytest …', or 'unknown'."""
    try:
        text = path.read_text().strip()
    except OSError:
        return "unknown"
    return text or "unknown (it has not written its name yet)"


@contextmanager
def timed_lock(path: Path | None = None, *, timeout_s: float | None = None) -> Generator[Path]:
    """Hold the host-wide timed lock for the block. Waits forever when `timeout_s` is None; raises
    TimedLockBusy naming the holder when the wait runs out (timeout_s=0: do not wait)."""
    path = path or default_lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        _acquire(fd, path, timeout_s)
        try:
            os.ftruncate(fd, 0)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            command = " ".join(sys.argv)[:300] or sys.executable
            os.pwrite(fd, f"pid {os.getpid()} since {stamp}: {command}\n".encode(), 0)
            yield path
        finally:
            os.ftruncate(fd, 0)  # while still holding it, so nobody reads a stale name
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, path: Path, timeout_s: float | None) -> None:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    announced = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        if deadline is not None and time.monotonic() >= deadline:
            raise TimedLockBusy(
                f"timed lock {path} is held by {read_holder(path)}; waited {timeout_s:g} s."
                " Wait for that run to finish, or run untimed"
            )
        if not announced:
            log.info("waiting for the timed lock %s held by %s", path, read_holder(path))
            announced = True
        time.sleep(0.05)
