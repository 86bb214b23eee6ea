"""Staggered model loading: processes of one multi-process run (DDP ranks, xdist workers) load their
model one after another instead of all at once.

Why: N ranks reading and materialising a checkpoint together hold N copies in host RAM at the peak; on a
24–64 GiB box with a 12B model that is the difference between a run and a frozen machine (and on a
unified-memory APU the GPU shares that RAM). An exclusive flock serialises the load; training then runs
in parallel. The lock is released when the holder exits, even if it crashes, because the kernel drops
flock locks with the file descriptor.

Not covered: hosts that share a lock path over NFS (flock there is not reliable); ranks on several hosts.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path


def default_lock_path() -> Path:
    """One lock per user and host: $LORABENCH_LOAD_LOCK, else a file in the temp dir."""
    if env := os.environ.get("LORABENCH_LOAD_LOCK"):
        return Path(env)
    return Path(tempfile.gettempdir()) / f"lorabench-model-load-{os.getuid()}.lock"


@contextmanager
def staggered_load(path: Path | None = None) -> Generator[Path, None, None]:
    """Hold an exclusive lock on `path` for the duration of the block (blocking until it is free)."""
    lock_path = path or default_lock_path()
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield lock_path
    finally:
        # Closing drops the lock; explicit unlock first so a forked child holding a copy of the fd
        # cannot keep it.
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
