"""Shared helpers and fixtures for the guard tests: real namespaces, real processes, real traffic."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def child_env(**extra: str) -> dict[str, str]:
    """Environment for child Pythons: this worktree's `harness` first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env.update(extra)
    return env


def _can_unshare() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare(1) not installed"
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "--net", "true"], capture_output=True
    )
    return None if probe.returncode == 0 else f"unshare not permitted: {probe.stderr.decode().strip()}"


@pytest.fixture(scope="session")
def hermetic() -> list[str]:
    """argv prefix for a quiet machine: new pid namespace (no other processes visible) and new
    network namespace (only a loopback), so the shared CI host's other jobs cannot leak in."""
    reason = _can_unshare()
    if reason:
        pytest.skip(reason)
    return ["unshare", "--pid", "--fork", "--mount-proc", "--net"]


BURNER = "import time\nt = time.time()\nwhile time.time() - t < {seconds}: pass\n"


def burner_code(seconds: float) -> str:
    """A real CPU burner that stops by itself, so a failed test never leaves it running."""
    return BURNER.format(seconds=seconds)


@dataclass(frozen=True)
class VethPair:
    host_if: str
    host_ip: str
    netns: str
    ns_ip: str


@pytest.fixture
def veth() -> Iterator[VethPair]:
    """A veth pair whose far end lives in a network namespace this test creates and removes."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and ip(8) to create a network namespace")
    tag = f"{os.getpid() % 10000}{random.randrange(100)}"
    netns, host_if, ns_if = f"lbguard{tag}", f"lbgh{tag}", f"lbgn{tag}"
    subnet = random.randrange(0, 250)
    host_ip, ns_ip = f"10.231.{subnet}.1", f"10.231.{subnet}.2"
    steps = [
        ["ip", "netns", "add", netns],
        ["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if],
        ["ip", "link", "set", ns_if, "netns", netns],
        ["ip", "addr", "add", f"{host_ip}/30", "dev", host_if],
        ["ip", "link", "set", host_if, "up"],
        ["ip", "netns", "exec", netns, "ip", "addr", "add", f"{ns_ip}/30", "dev", ns_if],
        ["ip", "netns", "exec", netns, "ip", "link", "set", ns_if, "up"],
    ]
    try:
        for step in steps:
            done = subprocess.run(step, capture_output=True)
            if done.returncode != 0:
                pytest.skip(
                    f"cannot build the test network ({' '.join(step)}): {done.stderr.decode().strip()}"
                )
        yield VethPair(host_if, host_ip, netns, ns_ip)
    finally:
        subprocess.run(["ip", "link", "del", host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)


# Sends `rate` bytes/s for `seconds` to whoever connects, in 64 kB chunks (paced, so it costs
# little CPU), then closes.
SENDER = """
import socket, sys, time
host, port, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
srv = socket.create_server((host, port))
print("listening", flush=True)
conn, _ = srv.accept()
chunk = b"x" * 65536
start = time.time()
sent = 0
while time.time() - start < seconds:
    conn.sendall(chunk)
    sent += len(chunk)
    ahead = sent / rate - (time.time() - start)
    if ahead > 0:
        time.sleep(ahead)
conn.close()
"""

RECEIVER = """
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
while s.recv(1 << 16):
    pass
"""


@dataclass
class Traffic:
    sender: subprocess.Popen[bytes]
    receiver: subprocess.Popen[bytes]

    def stop(self) -> None:
        for proc in (self.sender, self.receiver):
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def start_traffic(host: str, port: int, rate: float, seconds: float, sender_prefix: list[str]) -> Traffic:
    """Real TCP bytes from a sender (run under `sender_prefix`, e.g. `ip netns exec NS`) to us."""
    sender = subprocess.Popen(
        [*sender_prefix, PYTHON, "-c", SENDER, host, str(port), str(rate), str(seconds)],
        stdout=subprocess.PIPE,
    )
    assert sender.stdout is not None
    assert sender.stdout.readline().strip() == b"listening"
    receiver = subprocess.Popen([PYTHON, "-c", RECEIVER, host, str(port)])
    time.sleep(0.3)  # let the flow reach its paced rate before the window opens
    return Traffic(sender, receiver)


# In the hermetic tests the only CPU user is the burner, but on a loaded shared host (or under
# pytest-xdist) it may get well under half a core; they use a 10% limit so it is still caught.
