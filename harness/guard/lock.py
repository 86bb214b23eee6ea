"""The host-wide timed lock: two timed phases never overlap (two shells, pytest-xdist workers).

Taken by `harness.run.parent` around a timed run's pre-check and training, and nowhere else; the lock
itself is `harness.locks.exclusive_lock` (re-entrant within a thread, released when its holder dies).
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from harness.locks import exclusive_lock, lock_dir

LOCK_NAME = "lorabench-timed.lock"


def default_lock_path() -> Path:
    return lock_dir() / LOCK_NAME


@contextmanager
def timed_lock(path: Path | None = None, *, timeout_s: float | None = None) -> Generator[Path]:
    """Hold the host-wide timed lock for the block. Waits forever when `timeout_s` is None; raises
    LockBusy naming the holder when the wait runs out (timeout_s=0: do not wait)."""
    with exclusive_lock(path or default_lock_path(), timeout_s=timeout_s, what="timed lock") as held:
        yield held
