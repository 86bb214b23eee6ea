"""Two lorabench nodes on one machine: two real `lorabench run` processes, each starting its own torchrun
agent, meeting through a real c10d rendezvous on 127.0.0.1 (gloo on the CPU). Each node gets its own lock
folder, as two hosts would have, so their timed locks and staggered loads are their own."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Node:
    name: str
    proc: subprocess.Popen[str]
    results: Path
    log: Path

    def wait(self, timeout: float = 300) -> int:
        """Its exit status; past `timeout`, a failure that shows what the node printed and what still runs
        (a bare TimeoutExpired would lose both)."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            running = []
            for process in self.tree():
                with contextlib.suppress(psutil.Error):
                    running.append(" ".join(process.cmdline()[:4]))
            pytest.fail(
                f"node {self.name} still running after {timeout} s: {running}\n{self.output()[-4000:]}"
            )

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def tree(self) -> list[psutil.Process]:
        """This node's processes: the parent, its torchrun agent and the agent's workers (each in a session
        of its own, so a process group would miss them)."""
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        return []

    def kill(self) -> None:
        """The whole node at once, as a host that lost power: SIGKILL to every process of it."""
        for proc in self.tree():
            with contextlib.suppress(psutil.Error):
                proc.kill()
        self.proc.wait(timeout=30)


def start_node(tmp: Path, name: str, port: int, *args: str, env: dict[str, str] | None = None) -> Node:
    results, locks, log = tmp / f"results-{name}", tmp / f"locks-{name}", tmp / f"{name}.log"
    locks.mkdir(parents=True, exist_ok=True)
    node_env = {
        **os.environ, "PYTHONPATH": str(ROOT), "LORABENCH_RDZV_ENDPOINT": f"127.0.0.1:{port}",
        "LORABENCH_LOCK_DIR": str(locks), "GLOO_SOCKET_IFNAME": "lo", "LORABENCH_RDZV_TIMEOUT": "180",
        **(env or {}),
    }  # fmt: skip
    handle = log.open("w", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", *args, "--results", str(results)],
        cwd=tmp, env=node_env, stdout=handle, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    handle.close()
    return Node(name, proc, results, log)


def start_pair(
    tmp: Path, args: tuple[str, ...], *, args_b: tuple[str, ...] | None = None,
    env_a: dict[str, str] | None = None, env_b: dict[str, str] | None = None,
) -> tuple[Node, Node]:  # fmt: skip
    """Node a first: it binds the endpoint and leads; node b joins it (with `args_b` when given).

    On one host the first parent to bind the endpoint leads (harness.run.nodegroup), and the tests read
    the record on node a; so node b starts only once node a listens there. A fixed 1 s head start can be
    lost to node a's imports and provenance on a loaded 2-core machine: node b then leads and writes the
    record in its own results folder (a full suite under `-n 2` once found none on node a)."""
    port = free_port()
    a = start_node(tmp, "a", port, *args, env=env_a)
    try:
        wait_for(
            lambda: a.proc.poll() is not None or is_listening(a, port),
            240,
            f"node a to listen on port {port}",
        )  # fmt: skip  (~2 s idle, ~6 s on a loaded 2-core box)
        if a.proc.poll() is not None:
            raise AssertionError(f"node a ended ({a.proc.returncode}) before listening: {a.output()[-3000:]}")
    except BaseException:
        stop_all(a)
        raise
    return a, start_node(tmp, "b", port, *(args if args_b is None else args_b), env=env_b)


def is_listening(node: Node, port: int) -> bool:
    """Whether the node's parent process listens on `port` (it hosts the rendezvous store there)."""
    with contextlib.suppress(psutil.Error):
        connections = psutil.Process(node.proc.pid).net_connections(kind="tcp")
        return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in connections)
    return False


def stop_all(*nodes: Node) -> None:
    for node in nodes:
        if node.proc.poll() is None:
            node.kill()


def records(results: Path) -> list[Path]:
    return sorted(p for p in results.glob("*/*/*/*/seed-*.json") if ".prev-" not in p.name)


def wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
