"""The one host-wide lock helper: an exclusive `flock` on a file (filelock's UnixFileLock), re-entrant
within a thread, naming its holder to whoever waits. Every lock lorabench takes goes through
`exclusive_lock` (the timed lock, the staggered model load, a record's lock, a model conversion's lock).

Why flock: the kernel drops it with the holder's descriptor, so a killed holder never leaves a stale
lock. Why re-entrant: a second lock on the same file in one thread would wait on itself (the suite's
timed lock, then `run_setup`'s). Kept here on top of filelock: the holder writes its pid and command
into the file so a waiter can name it (`read_holder`). filelock closes a held lock in a forked child.

Not covered: hosts without flock (Windows); lock files on NFS; containers that do not share the lock's
folder (mount it, or set $LORABENCH_LOCK_DIR to a shared path).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Generator
from contextlib import contextmanager, suppress
from pathlib import Path

from filelock import BaseFileLock, FileLock, Timeout

from harness import settings
from harness.errors import UserError

POLL_S = 0.05


class LockBusy(UserError):
    """The lock stayed held longer than the caller was willing to wait; the message names the holder."""


def lock_dir() -> Path:
    """Where host-wide locks live: $LORABENCH_LOCK_DIR, else the temp folder."""
    return settings.LOCK_DIR.get() or Path(tempfile.gettempdir())


def read_holder(path: Path) -> str:
    """What the current holder wrote: 'pid 1234 since 2026-…: python -m pytest …', or 'unknown'."""
    try:
        text = path.read_text().strip()
    except OSError:
        return "unknown"
    return text or "unknown (it has not written its name yet)"


def _write_holder(fd: int) -> None:
    """filelock's `on_acquired` hook: the new holder names itself (one function object: a singleton lock
    refuses a second instance built with another hook)."""
    os.ftruncate(fd, 0)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    command = " ".join(sys.argv)[:300] or sys.executable
    os.pwrite(fd, f"pid {os.getpid()} since {stamp}: {command}\n".encode(), 0)


def _file_lock(path: Path) -> BaseFileLock:
    # preserve_lock_file: waiters share the inode and read the holder's name from it; it also turns off
    # filelock's soft-lock fallback (a marker file that a SIGKILLed holder would leave behind).
    return FileLock(path, is_singleton=True, preserve_lock_file=True, on_acquired=_write_holder)


@contextmanager
def exclusive_lock(path: Path, *, timeout_s: float | None = None, what: str = "lock") -> Generator[Path]:
    """Hold an exclusive lock on `path` for the block. Waits forever when `timeout_s` is None; raises
    LockBusy naming the holder when the wait runs out (0: do not wait). `what` names the lock in
    messages ("timed lock", "model load lock")."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = _file_lock(path)
    _acquire(lock, path, timeout_s, what)
    try:
        yield path
    finally:
        if lock.lock_counter == 1:
            with suppress(OSError):
                os.truncate(path, 0)  # while still holding it, so nobody reads a stale name
        lock.release()


def _acquire(lock: BaseFileLock, path: Path, timeout_s: float | None, what: str) -> None:
    try:
        lock.acquire(blocking=False)  # free, or already this thread's: no wait, nothing to say
        return
    except Timeout:
        pass
    if timeout_s is None or timeout_s > 0:
        # Said, not logged: the wait can be long, and logging has no handler in `lorabench run` (issue 39).
        print(f"lorabench: waiting for the {what} {path}, held by {read_holder(path)}", file=sys.stderr)
        try:
            lock.acquire(timeout=-1 if timeout_s is None else timeout_s, poll_interval=POLL_S)
            return
        except Timeout:
            pass
    raise LockBusy(
        f"{what} {path} is held by {read_holder(path)}; waited {timeout_s or 0:g} s."
        " Wait for that process to finish, or stop it"
    )
