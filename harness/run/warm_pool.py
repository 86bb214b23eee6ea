"""Warm trainers started before the workers that use them: `lorabench bench` starts one warm fork server
(harness.run.warm) per xdist worker it will seat, before pytest starts, so the trainer stack's imports run
while pytest and its workers start instead of after each worker's start; each worker adopts its own by
name (`gw0` finds `gw0.sock` and `gw0.key` in the pool's folder) instead of starting one.

Bench binds each server's socket before the server starts (a worker that connects early waits in the
backlog: no race) and writes the environment key it started the server with beside it; a worker whose
trainers' environment differs (another cache, offline for a timed run) starts its own, as without a pool.
Until a worker connects, a server watches bench through a socket pair and ends when bench closes the pool
or dies. Once adopted it is its worker's, as a worker's own server is, but for its process (bench's
child): it ends when the worker closes the socket or dies, and bench reaps it when pytest has ended.

Measured (Exp A's suite on one H200, reports/benchmarks/h200/2026-12-04-suite-warm-pool.txt): the first
seed's data phase 6.5-9.6 s into the command against 10.0-12.7 s with each worker starting its own server.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.atomic import write_text
from harness.run import warm


@dataclass
class WarmPool:
    """Bench's side: the servers it started, and its end of each one's socket pair (closing it ends a server
    no worker adopted)."""

    folder: Path
    processes: list[subprocess.Popen[bytes]]
    owners: list[socket.socket]

    def close(self) -> None:
        """Once pytest has ended: no worker is left to use a server, adopted or not."""
        for owner in self.owners:
            owner.close()
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()


def start_pool(folder: Path, names: list[str], env: dict[str, str]) -> WarmPool:
    """One server per name, each in `env` (the environment the workers' trainers will have); OSError
    when a socket cannot be made there (a path over the 107 bytes a Unix socket's name may have)."""
    folder.mkdir(parents=True, exist_ok=True)
    pool = WarmPool(folder, [], [])
    try:
        for name in names:
            _start_server(pool, name, env)
    except BaseException:
        pool.close()
        raise
    return pool


def _start_server(pool: WarmPool, name: str, env: dict[str, str]) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pool.owners.append(ours)
    with listener, theirs:
        listener.bind(str(pool.folder / f"{name}.sock"))
        listener.listen(1)
        fds = [listener.fileno(), theirs.fileno()]
        pool.processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "harness.run.warm_pool", *map(str, fds), " " * warm.TITLE_ROOM],
                env=env,
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # as a worker's own: Ctrl-C reaches bench, which ends the pool
            )
        )
    write_text(pool.folder / f"{name}.key", json.dumps(warm.env_key(env)))  # whole or absent for the worker


def adopt(folder: Path, name: str, env: dict[str, str]) -> bool:
    """This process's warm server is the pool's `name`, if there is one for `env`."""
    try:
        key = tuple(tuple(pair) for pair in json.loads((folder / f"{name}.key").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return False
    if key != warm.env_key(env):
        return False
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(str(folder / f"{name}.sock"))
    except OSError:
        sock.close()
        return False
    warm.adopt(warm.WarmServer(key, sock, None))
    return True


def await_worker(listener: socket.socket, owner: socket.socket) -> socket.socket | None:
    """In the server: the worker's connection, or None when bench closed the pool or died first."""
    with listener, owner:
        ready, _, _ = select.select([listener, owner], [], [])
        if listener not in ready:
            return None
        sock, _ = listener.accept()
        return sock


if __name__ == "__main__":
    _listener = socket.socket(fileno=int(sys.argv[1]))
    _owner = socket.socket(fileno=int(sys.argv[2]))
    if warm.preloaded() and (_worker := await_worker(_listener, _owner)) is not None:
        warm.serve(_worker)
