"""Data-parallel ranks (DDP under torchrun): which process is rank 0, each rank's GPU, values gathered
from every rank, and staggered model loading.

Staggered loading: the processes of one multi-process run load their model one after another instead
of all at once. N ranks reading and materialising a checkpoint together hold N copies in host RAM at
the peak; on a 24–64 GiB box with a 12B model that is the difference between a run and a frozen machine
(on a unified-memory APU the GPU shares that RAM). Training then runs in parallel.
Several hosts (`nodes` > 1): each host staggers its own ranks only (the lock is a file on that host),
and the record is written on the lead node (the one hosting the rendezvous store, harness.run.nodes), so
"the main process" there is the lead node's first process, wherever the rendezvous put global rank 0.
"""

from __future__ import annotations

import os
import resource
import socket
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import settings
from harness.locks import exclusive_lock, lock_dir
from harness.results import RankInfo

# Set by the parent of a multi-node run on its trainer: which lorabench node this is ("0" = the lead).
NODE_ENV = settings.NODE.name


def node_index() -> int:
    return settings.NODE.value()


def is_main_process() -> bool:
    """The process that scores, stamps events and reports: rank 0 under torchrun on one node, or the only
    process; on several nodes the lead node's local rank 0 (the lead writes the record; the c10d
    rendezvous orders nodes by address, so global rank 0 may be on another host)."""
    if settings.NODE.is_set():
        return node_index() == 0 and int(os.environ.get("LOCAL_RANK", "0")) == 0
    return int(os.environ.get("RANK", "0")) == 0


def rank_name() -> str:
    return f"rank{os.environ.get('RANK', '0')}"


def bind_local_gpu() -> None:
    """Under torchrun each rank drives the GPU of its local rank; "cuda" then means that one."""
    if "LOCAL_RANK" in os.environ:
        import torch

        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))


def gathered(value: Any) -> list[Any]:
    """`value` from every rank, in rank order, under DDP (every rank must call this); else `[value]`."""
    import torch

    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return [value]
    values: list[Any] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(values, value)
    return values


def rank_facts(load_window: tuple[float, float], peak_vram_bytes: int | None, device: str) -> list[RankInfo]:
    """Every rank's host, device, load window and peaks, in rank order (every rank must call this)."""
    mine = {
        "rank": int(os.environ.get("RANK", "0")),
        "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
        "node": node_index(),
        "hostname": socket.gethostname(),
        "device": device,
        "load_window": load_window,
        "peak_vram_bytes": peak_vram_bytes,
        # ru_maxrss is KiB on Linux; this process only.
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    every = gathered(mine)
    windows = load_windows([tuple(f["load_window"]) for f in every])
    return [RankInfo(**{**f, "load_window": w}) for f, w in zip(every, windows, strict=True)]


def load_windows(windows: Sequence[tuple[float, float]]) -> list[list[float]]:
    """Each rank's [start, end] of loading the model, in seconds from the first start."""
    first = min(start for start, _ in windows)
    return [[round(start - first, 2), round(end - first, 2)] for start, end in windows]


def load_lock_path() -> Path:
    """One lock per user and host: $LORABENCH_LOAD_LOCK, else a file in the lock folder."""
    if path := settings.LOAD_LOCK.get():
        return path
    return lock_dir() / f"lorabench-model-load-{os.getuid()}.lock"


@contextmanager
def staggered_load(path: Path | None = None) -> Generator[Path]:
    """Hold the model-load lock for the block (waiting until it is free)."""
    with exclusive_lock(path or load_lock_path(), what="model load lock") as held:
        yield held
