"""The warm trainer: a fork server that pays the trainer child's start (the interpreter and the imports of
torch, transformers, PEFT, TRL and datasets) once per lorabench process, and forks one trainer per run.

A suite runs its seeds one after another in one process; each spawned trainer child imported the heavy
stack anew (5.8 s of a warm Exp A seed's 26.1 s on an H200). The server is started by the run's parent at
its first run (a suite's xdist worker starts it with itself: `prewarm`), imports the stack without touching
CUDA (a CUDA context does not survive a fork), and then, for each run, forks a child that becomes what a
spawned child is: its own session (process group), the parent's stdin/stdout/stderr of that moment (passed
over the socket), the run's environment and working folder, and `python -m harness.run.child JOB.json` as
its command line (written over the server's, so `ps` and the sweeps find it as before). From there it runs
`harness.run.child.main` as a spawned child would, lifeline included: it watches the run's parent.

The parent keeps its watchdog and its order of waiting (harness.run.capped): the server waits for the
child's end without reaping it, says so, and reaps it only when the parent has stopped its watchdog, so a
reused pid is never signalled. The server ends when the parent closes the socket or dies (its end of the
socket closes with it), also while it waits for a child, which it then kills: a trainer hung before its
lifeline started (or stopped) is not left behind.

One server serves one environment: a run whose environment differs (another cache, offline for a timed
run) starts a new one, since the stack reads some variables at import. Not covered, and spawned as
before: runs under torchrun (several GPUs or nodes), runs under a memory cap (a fork starts with the
server's imports, hundreds of MiB of address space that RLIMIT_DATA counts, so a cap would measure the
server and refuse the trainer's first allocations; a systemd-run scope must be the command's), and the
unsloth backend (it patches the stack at import, first). A server that cannot start or dies is replaced
by a spawn for that run.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import traceback
import warnings
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import settings
from harness.gpu import mps

MESSAGE_BYTES = 1 << 20
# Room in the server's own command line for a child's `python -m harness.run.child JOB.json`.
TITLE_ROOM = 4096
# Variables no import reads, so a server started under other values serves the run as well (its child gets
# the run's environment whole): the GPU pins and the MPS pipe, read when the GPU starts, the run's parent (the
# trainer's lifeline reads it when it starts: a server from bench's pool was started by bench), and what pytest
# and pytest-xdist tell their workers, the terminal's size among it (a suite's worker starts its server before
# its first test, or adopts one bench started before pytest: harness.suite.plugin, harness.run.warm_pool).
PER_RUN_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    mps.PIPE_ENV,
    settings.PARENT.name,
    "PYTEST_CURRENT_TEST",
    "PYTEST_VERSION",
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "COLUMNS",
    "LINES",
)


class ServerGone(Exception):
    """The fork server ended or broke its protocol."""


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    socket.send_fds(sock, [json.dumps(message).encode()], fds or [])


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, 3)
    if not data:
        raise ServerGone("the fork server closed its socket")
    return json.loads(data), fds


def env_key(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items() if k not in PER_RUN_ENV))


@dataclass
class WarmChild:
    """A trainer forked by the server: its pid, and the server that waits for it."""

    pid: int
    server: WarmServer

    returncode: int | None = None

    def wait_exit(self) -> None:
        """Blocks until the child has ended (the server has not reaped it yet)."""
        message, _ = receive(self.server.sock)
        self.returncode = int(message["exit"])

    def reap(self) -> tuple[int, int]:
        """Lets the server reap the child: its exit code (as Popen gives it) and its peak RSS in KiB."""
        returncode = -signal.SIGKILL if self.returncode is None else self.returncode
        try:
            send(self.server.sock, {"reap": True})
            message, _ = receive(self.server.sock)
        except (OSError, ServerGone):
            close_server()
            return returncode, 0
        return returncode, int(message["maxrss_kib"])


class WarmServer:
    """The parent's side: one server process for one environment, started here (`start`) or adopted from
    `lorabench bench`'s pool (harness.run.warm_pool: its process is bench's child, not ours)."""

    def __init__(
        self, key: tuple[tuple[str, str], ...], sock: socket.socket, process: subprocess.Popen[bytes] | None
    ) -> None:
        self.key = key
        self.sock = sock
        self.process = process
        self.ready = False
        self.forked = 0

    @classmethod
    def start(cls, env: dict[str, str]) -> WarmServer:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            # Its own session: a Ctrl-C at the terminal reaches the parent, which ends the server.
            process = subprocess.Popen(
                [sys.executable, "-m", "harness.run.warm", str(theirs.fileno()), " " * TITLE_ROOM],
                env=env,
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return cls(env_key(env), ours, process)

    def fork(self, job_file: str, env: dict[str, str], cwd: str) -> WarmChild:
        if not self.ready:  # the first run waits for the imports (its `spawn` phase)
            receive(self.sock)
            self.ready = True
        request = {"job": job_file, "env": env, "cwd": cwd}
        send(self.sock, request, [0, 1, 2])
        message, _ = receive(self.sock)
        self.forked += 1
        return WarmChild(int(message["pid"]), self)

    def close(self) -> None:
        self.sock.close()  # an adopted server ends with its socket; its process is bench's to reap
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait()


_servers: list[WarmServer] = []


def warm_child(job_file: str, env: dict[str, str], cwd: str) -> WarmChild | None:
    """A trainer forked from this process's server for `env` (started at its first run); None when no
    server can serve it: the caller spawns the child instead."""
    if _servers and _servers[0].key != env_key(env):
        close_server()
    prewarm(env)
    if not _servers:
        return None
    try:
        return _servers[0].fork(job_file, env, cwd)
    except (OSError, ServerGone, ValueError):
        close_server()
        return None


def prewarm(env: dict[str, str]) -> None:
    """Starts this process's server for `env` now, before its first run, so the stack's imports overlap what
    the process does until then; a first run with another environment replaces it (`warm_child`)."""
    if not _servers:
        with contextlib.suppress(OSError, ValueError):  # not started: the run is spawned
            _servers.append(WarmServer.start(env))


def adopt(server: WarmServer) -> None:
    """This process's server is `server` (one of bench's pool: harness.run.warm_pool), before its first run."""
    close_server()
    _servers.append(server)


def close_server() -> None:
    """Ends this process's server (a run interrupted mid-way leaves it in an unknown state)."""
    while _servers:
        _servers.pop().close()


atexit.register(close_server)


# The server's side, in its own process.


def preload_stack() -> None:
    """The imports every hf trainer makes (harness.backends.hf.preload without the GPU's start)."""
    from harness.run.distributions import remember_distributions

    remember_distributions(settings.CACHE.value())
    from harness.backends import hf
    from harness.run import child, recipe  # ruff: ignore[unused-import]

    hf._skip_sklearn()
    import datasets  # ruff: ignore[unused-import]
    import peft  # ruff: ignore[unused-import]
    from transformers import AutoModelForCausalLM, AutoTokenizer  # ruff: ignore[unused-import]
    from trl import SFTConfig, SFTTrainer  # ruff: ignore[unused-import]


def retitle(argv: list[str]) -> None:
    """Writes `argv` over this process's command line (/proc/PID/cmdline), NUL-padded to its old length."""
    fields = Path("/proc/self/stat").read_text(encoding="ascii").rpartition(")")[2].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48 and 49 of stat)
    title = b"\0".join(os.fsencode(arg) for arg in argv) + b"\0"
    if len(title) > end - start:
        return
    with open("/proc/self/mem", "r+b", buffering=0) as memory:
        memory.seek(start)
        memory.write(title.ljust(end - start, b"\0"))


def become_trainer(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: a spawned trainer's surroundings, then its main. Never returns."""
    code = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv = [sys.executable, "-m", "harness.run.child", request["job"]]
        with contextlib.suppress(OSError, ValueError, IndexError):
            retitle(argv)
        sys.argv = [argv[2], request["job"]]
        from harness.run import child

        code = child.main([request["job"]])
    except BaseException:
        traceback.print_exc()
    finally:
        # What a spawned trainer's interpreter does at its end, which os._exit skips: the exit handlers
        # (weakref finalizers among them: the Trainer's scratch folder in /tmp is removed by one).
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def exit_code(info: os.waitid_result) -> int:
    """Popen's returncode for a waitid result: the status, or minus the signal that ended the child."""
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def wait_child_or_parent(sock: socket.socket, pid: int) -> os.waitid_result:
    """The child's end, not reaped; ServerGone when the parent closes the socket (or dies) first."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # no pidfd (Linux < 5.3): wait for the child alone
        pidfd = None
    if pidfd is not None:
        try:
            ready, _, _ = select.select([pidfd, sock], [], [])
        finally:
            os.close(pidfd)
        if pidfd not in ready:
            receive(sock)  # the parent sends nothing while its trainer runs: this is the socket's end
            raise ServerGone("the parent sent a message while its trainer ran")
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


@contextlib.contextmanager
def forking_with_library_threads() -> Generator[None]:
    """Python 3.12 warns at every fork of a process with more than one thread. The server's other threads are
    the libraries' own, started by its imports (OpenBLAS's worker pool with numpy, the jemalloc background
    thread of pyarrow, which datasets imports); both make themselves safe across a fork (pthread_atfork), and
    the server runs no Python thread but its main one. The warning would print in every forked run's log."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*is multi-threaded, use of fork\(\)", category=DeprecationWarning
        )
        yield


def serve_one(sock: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    with forking_with_library_threads():
        pid = os.fork()
    if pid == 0:
        sock.close()
        become_trainer(request, fds)
    for fd in fds:
        os.close(fd)
    try:
        send(sock, {"pid": pid})
        info = wait_child_or_parent(sock, pid)
        send(sock, {"exit": exit_code(info)})
        receive(sock)  # the parent has stopped watching the pid
    except (OSError, ServerGone):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        raise
    finally:
        _, _, usage = os.wait4(pid, 0)
    send(sock, {"maxrss_kib": usage.ru_maxrss})


def preloaded() -> bool:
    """The stack imported here, without a CUDA context (which would not survive a fork: the parent then spawns)."""
    preload_stack()
    import torch

    return not torch.cuda.is_initialized()


def serve(sock: socket.socket) -> None:
    """Says it is ready, then forks a trainer per request until the parent closes its socket."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        send(sock, {"ready": True})
        while True:
            request, fds = receive(sock)
            serve_one(sock, request, fds)
    except (OSError, ServerGone):
        return


if __name__ == "__main__":
    _sock = socket.socket(fileno=int(sys.argv[1]))
    if preloaded():
        serve(_sock)
