"""Seconds from `lorabench bench` starting its warm trainer pool (harness/run/warm_pool.py) until every one
of its K servers has imported the trainer stack and says ready, as a suite's K workers would find them;
and the servers' resident memory then, summed (shared pages counted once per process: psutil's rss).

Usage: python dev/bench_pool_ready.py [K]   (default 3: Exp A's seeds on one GPU under MPS)
Run it from two checkouts with farm-bench to compare two ways of starting the pool.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import psutil

from harness.run import launch, warm
from harness.run.warm_pool import WarmPool


def main() -> None:
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory(prefix="pool-ready-") as folder:
        started = time.perf_counter()
        pool = launch.start_trainer_pool(Path(folder) / "warm", workers, dict(os.environ))
        assert pool is not None, "no pool started"
        try:
            socks = []
            for index in range(workers):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                sock.connect(str(pool.folder / f"gw{index}.sock"))
                socks.append(sock)
            for sock in socks:
                warm.receive(sock)
            ready = time.perf_counter() - started
            servers = _pool_processes(pool)
            rss = sum(p.memory_info().rss for p in servers) / 2**30
            uss = sum(p.memory_full_info().uss for p in servers) / 2**30
            print(f"{workers} servers ready in {ready:.2f} s; {len(servers)} processes, rss {rss:.2f} GiB, "
                  f"unique {uss:.2f} GiB", flush=True)  # fmt: skip
        finally:
            pool.close()


def _pool_processes(pool: WarmPool) -> list[psutil.Process]:
    """The pool's servers: its process and the ones it forked, all in its process group."""
    assert pool.process is not None
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(OSError):
            if os.getpgid(process.pid) == pool.process.pid:
                found.append(process)
    return found


if __name__ == "__main__":
    main()
