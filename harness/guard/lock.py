"""A timed phase's isolation. The host-wide timed lock: two timed phases never overlap (two shells,
pytest-xdist workers). Offline by construction: the trainer child gets `offline_env`, so nothing in it
can start a download (fetch first, with `lorabench fetch`).

Taken by `harness.run.parent` around a timed run's pre-check and training, and nowhere else; the lock
itself is `harness.locks.exclusive_lock` (re-entrant within a thread, released when its holder dies).
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from harness.locks import exclusive_lock, lock_dir

LOCK_NAME = "lorabench-timed.lock"


@contextmanager
def timed_lock(path: Path | None = None, *, timeout_s: float | None = None) -> Generator[Path]:
    """Hold the host-wide timed lock for the block. Waits forever when `timeout_s` is None; raises
    LockBusy naming the holder when the wait runs out (timeout_s=0: do not wait)."""
    with exclusive_lock(path or lock_dir() / LOCK_NAME, timeout_s=timeout_s, what="timed lock") as held:
        yield held


def offline_env() -> dict[str, str]:
    return {
        "HF_HUB_OFFLINE": "1",  # huggingface_hub: cache only, never the network
        "HF_DATASETS_OFFLINE": "1",  # datasets: cache only
        "TRANSFORMERS_OFFLINE": "1",  # transformers < 5 read this one
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
        "WANDB_MODE": "offline",  # TRL reports to wandb when it is installed
        "DO_NOT_TRACK": "1",  # honoured by several libraries' usage statistics
    }
