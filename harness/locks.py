"""The one host-wide lock helper: an exclusive `flock` on a file, re-entrant within a thread.

Every lock lorabench takes goes through `exclusive_lock`: the timed lock (two timings never overlap),
the staggered model load (DDP ranks load one after another), a record's lock (two suite workers
needing the same run train it once) and a model conversion's lock (one process dequantizes a GGUF).

Why flock: the kernel drops it with the holder's file descriptor, so a crashed or SIGKILLed holder
never leaves a stale lock. Why re-entrant: flock locks belong to an open file description, so a second
`open()` of the same file in the same process waits on itself forever (the suite took the timed lock,
then `run_setup` took it again: a deadlock). Here a thread that already holds a lock on the file just
counts one more level. The holder writes its pid and command into the file so a waiter can name it.

Not covered: hosts without flock (Windows); lock files on NFS (flock there is not reliable); containers
that do not share the lock's folder (mount it, or set $LORABENCH_LOCK_DIR to a shared path).
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError

log = logging.getLogger(__name__)
POLL_S = 0.05


class LockBusy(UserError):
    """The lock stayed held longer than the caller was willing to wait; the message names the holder."""


@dataclass
class _Held:
    fd: int
    depth: int


# (device, inode, thread id) → the descriptor that holds the lock and how many blocks are inside it.
_held: dict[tuple[int, int, int], _Held] = {}
_held_guard = threading.Lock()


def lock_dir() -> Path:
    """Where host-wide locks live: $LORABENCH_LOCK_DIR, else the temp folder."""
    return Path(os.environ.get("LORABENCH_LOCK_DIR") or tempfile.gettempdir())


def read_holder(path: Path) -> str:
    """What the current holder wrote: 'pid 1234 since 2026-…: python -m pytest …', or 'unknown'."""
    try:
        text = path.read_text().strip()
    except OSError:
        return "unknown"
    return text or "unknown (it has not written its name yet)"


@contextmanager
def exclusive_lock(path: Path, *, timeout_s: float | None = None, what: str = "lock") -> Generator[Path]:
    """Hold an exclusive lock on `path` for the block. Waits forever when `timeout_s` is None; raises
    LockBusy naming the holder when the wait runs out (0: do not wait). `what` names the lock in
    messages ("timed lock", "model load lock")."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    stat = os.fstat(fd)
    key = (stat.st_dev, stat.st_ino, threading.get_ident())
    with _held_guard:
        held = _held.get(key)
        if held is not None:
            held.depth += 1
    if held is not None:
        os.close(fd)  # this thread holds it through the first descriptor already
        try:
            yield path
        finally:
            with _held_guard:
                held.depth -= 1
        return
    try:
        _acquire(fd, path, timeout_s, what)
        with _held_guard:
            _held[key] = _Held(fd, 1)
        try:
            os.ftruncate(fd, 0)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            command = " ".join(sys.argv)[:300] or sys.executable
            os.pwrite(fd, f"pid {os.getpid()} since {stamp}: {command}\n".encode(), 0)
            yield path
        finally:
            with _held_guard:
                del _held[key]
            os.ftruncate(fd, 0)  # while still holding it, so nobody reads a stale name
            # Unlock before closing: a forked child holding a copy of the descriptor must not keep it.
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, path: Path, timeout_s: float | None, what: str) -> None:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    announced = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        if deadline is not None and time.monotonic() >= deadline:
            raise LockBusy(
                f"{what} {path} is held by {read_holder(path)}; waited {timeout_s:g} s."
                " Wait for that process to finish, or stop it"
            )
        if not announced:
            log.info("waiting for the %s %s held by %s", what, path, read_holder(path))
            announced = True
        time.sleep(POLL_S)
