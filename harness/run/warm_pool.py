"""Warm trainers started before the workers that use them: `lorabench bench` starts one warm fork server
(harness.run.warm) per xdist worker it will seat, before pytest starts, so the trainer stack's imports run
while pytest and its workers start instead of after each worker's start; each worker adopts its own by
name (`gw0` finds `gw0.sock` and `gw0.key` in the pool's folder) instead of starting one.

The stack is imported once for the whole pool: one process imports it, then forks a server for every
worker but the first, whose server it becomes (k servers importing at once compete for the cores with
pytest's workers; a fork costs milliseconds, and the servers share the imported pages). The forked
servers stay in its process group, which bench ends as a whole.

Bench binds each server's socket before the server starts (a worker that connects early waits in the
backlog: no race) and writes the environment key it started the server with beside it; a worker whose
trainers' environment differs (another cache, offline for a timed run) starts its own, as without a pool.
Until a worker connects, a server watches bench through a socket pair and ends when bench closes the pool
or dies. Once adopted it is its worker's, as a worker's own server is, but for its process (bench's
child, or that child's fork): it ends when the worker closes the socket or dies, and bench ends what is
left of the pool's process group when pytest has ended.

Measured (Exp A's suite on one H200, reports/benchmarks/h200/2026-12-04-suite-warm-pool.txt): the first
seed's data phase 6.5-9.6 s into the command against 10.0-12.7 s with each worker starting its own server.
One import for the pool (on an H100, reports/benchmarks/h100/2026-12-05-pool-one-import.txt): the last
seed's data phase at a median 7.55 s against 8.85 s with a server importing per worker (n = 10 each).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.atomic import write_text
from harness.run import warm


@dataclass
class WarmPool:
    """Bench's side: the process it started (the first worker's server, which forked the others), and its
    end of each server's socket pair (closing it ends a server no worker adopted)."""

    folder: Path
    owners: list[socket.socket]
    process: subprocess.Popen[bytes] | None = None

    def close(self) -> None:
        """Once pytest has ended: no worker is left to use a server, adopted or not."""
        for owner in self.owners:
            owner.close()
        if self.process is None:
            return
        # Its group holds the servers it forked (trainers have their own). Once it is reaped its pid may name
        # another group; its forks then end by themselves, their sockets closed with pytest's end.
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def start_pool(folder: Path, names: list[str], env: dict[str, str]) -> WarmPool:
    """One server per name, each in `env` (the environment the workers' trainers will have), all from one
    process that imports the stack once; OSError when a socket cannot be made there (a path over the 107
    bytes a Unix socket's name may have)."""
    folder.mkdir(parents=True, exist_ok=True)
    pool = WarmPool(folder, [])
    with contextlib.ExitStack() as theirs:
        try:
            fds: list[int] = []
            for name in names:
                listener = theirs.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET))
                listener.bind(str(folder / f"{name}.sock"))
                listener.listen(1)
                ours, their_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                pool.owners.append(ours)
                fds += [listener.fileno(), theirs.enter_context(their_end).fileno()]
            pool.process = subprocess.Popen(
                [sys.executable, "-m", "harness.run.warm_pool", *map(str, fds), " " * warm.TITLE_ROOM],
                env=env,
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # as a worker's own: Ctrl-C reaches bench, which ends the pool
            )
        except BaseException:
            pool.close()
            raise
    for name in names:  # whole or absent for the worker
        write_text(folder / f"{name}.key", json.dumps(warm.env_key(env)))
    return pool


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


def fork_servers(pairs: list[tuple[socket.socket, socket.socket]]) -> tuple[socket.socket, socket.socket]:
    """In the pool's process, the stack imported: a forked server for every pair but the first, each keeping
    its own pair alone (a listener left open elsewhere would keep a worker waiting in its backlog); the
    pair this process serves."""
    sys.stdout.flush()  # what the imports printed, once: not again from each fork's buffers
    sys.stderr.flush()
    for index, pair in enumerate(pairs[1:], start=1):
        with warm.forking_with_library_threads():
            pid = os.fork()
        if pid == 0:
            for other in pairs[:index] + pairs[index + 1 :]:
                for end in other:
                    end.close()
            return pair
        for end in pair:
            end.close()
    return pairs[0]


if __name__ == "__main__":
    _fds = [int(arg) for arg in sys.argv[1:-1]]
    _pairs = [
        (socket.socket(fileno=a), socket.socket(fileno=b)) for a, b in zip(_fds[::2], _fds[1::2], strict=True)
    ]
    if warm.preloaded():
        _listener, _owner = fork_servers(_pairs)
        if (_worker := await_worker(_listener, _owner)) is not None:
            warm.serve(_worker)
