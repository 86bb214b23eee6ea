"""Run the trainer in a child process under a memory cap, with a watchdog that kills the child (its whole
process group), never the host, when the machine's available memory falls below a floor.

Why both: a cap bounds the trainer itself; the floor protects the host from everything together (two
trainers, a leaking eval, another user's job). A unified-memory APU (Strix Halo) shares RAM with the GPU,
so a runaway allocation there freezes the desktop before the kernel OOM killer acts.

Cap methods, best first:
- "systemd-run": a transient cgroup v2 scope with MemoryMax (and no swap), where systemd is PID 1.
- "rlimit": RLIMIT_DATA in the child. Counts private writable mappings, not RSS; a GPU runtime that
  maps large writable regions may need a larger cap. In containers the compose memory limit is the cap.
- "none": no cap asked for, or none possible.
Not covered: GPU memory (VRAM) limits; the watchdog reads host RAM only.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psutil

from harness.run.warm import ServerGone, WarmChild, close_server, warm_child

CapMethod = Literal["systemd-run", "rlimit", "none"]
MIB = 2**20


@dataclass(frozen=True)
class ChildOutcome:
    """How the child ended. `reading` holds what the watchdog saw when it killed (bytes)."""

    returncode: int
    killed_by_watchdog: bool
    reason: str | None
    reading: dict[str, int] = field(default_factory=dict)
    peak_rss_bytes: int = 0
    cap_method: CapMethod = "none"


def is_systemd_running() -> bool:
    """sd_booted(3): systemd is the init system when this directory exists."""
    return Path("/run/systemd/system").is_dir() and shutil.which("systemd-run") is not None


def choose_cap_method(cap_bytes: int | None) -> CapMethod:
    if cap_bytes is None:
        return "none"
    return "systemd-run" if is_systemd_running() else "rlimit"


def _systemd_prefix(cap_bytes: int) -> list[str]:
    # --scope runs the command in this process tree (stdout stays ours); --user when not root, since only
    # root may create system scopes.
    user = [] if os.geteuid() == 0 else ["--user"]
    return [
        "systemd-run",
        *user,
        "--scope",
        "--quiet",
        "--collect",
        "-p",
        f"MemoryMax={cap_bytes}",
        "-p",
        "MemorySwapMax=0",
        "--",
    ]


def _rlimit_setter(cap_bytes: int) -> Callable[[], None]:
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (cap_bytes, cap_bytes))

    return set_limit


def _tree_rss(pid: int) -> int:
    """RSS of the child and its descendants; processes that vanish mid-read count as 0."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total


def kill_tree(pid: int) -> None:
    """SIGKILL the child's process group and every descendant: torchrun starts each rank in a session of its
    own, out of the group's reach, and an orphaned rank would keep its GPU and its peers waiting."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    for proc in descendants:
        with contextlib.suppress(psutil.Error):
            proc.kill()


class _Watchdog(threading.Thread):
    """Polls available memory and the child's RSS; kills the child's process group below the floor."""

    def __init__(self, pid: int, floor_bytes: int | None, poll_s: float) -> None:
        super().__init__(name=f"memory-watchdog-{pid}", daemon=True)
        self.pid = pid
        self.floor_bytes = floor_bytes
        self.poll_s = poll_s
        self.stop = threading.Event()
        # Held while killing; the parent takes it before reaping, so a reused pid is never signalled.
        self.lock = threading.Lock()
        self.peak_rss = 0
        self.reading: dict[str, int] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            rss = _tree_rss(self.pid)
            self.peak_rss = max(self.peak_rss, rss)
            available = psutil.virtual_memory().available
            if self.floor_bytes is not None and available < self.floor_bytes:
                with self.lock:
                    if self.stop.is_set():
                        return
                    self.reading = {
                        "available_bytes": available,
                        "floor_bytes": self.floor_bytes,
                        "child_rss_bytes": rss,
                    }
                    kill_tree(self.pid)
                return
            self.stop.wait(self.poll_s)


class SpawnedChild:
    """A trainer started as a new process (`subprocess.Popen`), waited for as `run_capped` does."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid

    def wait_exit(self) -> None:
        # Without reaping, so the pid cannot be reused while the watchdog may still signal it.
        os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)

    def reap(self) -> tuple[int, int]:
        """The exit code (as Popen gives it) and the peak RSS in KiB."""
        _, status, usage = os.wait4(self.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting on a reaped pid
        return self.proc.returncode, usage.ru_maxrss


def run_capped(
    cmd: list[str],
    *,
    env: dict[str, str] | None,
    cwd: Path | None,
    cap_bytes: int | None,
    floor_bytes: int | None,
    poll_s: float = 0.5,
    warm_job: str | None = None,
) -> ChildOutcome:
    """Run `cmd` to completion in its own session (process group); stdout/stderr are inherited.

    The watchdog kills the group when available memory < `floor_bytes`; the outcome then says so with
    the reading. A cap hit shows as the child's own failure (MemoryError under rlimit, SIGKILL from the
    cgroup OOM killer under systemd-run). `warm_job`: `cmd` is the one-process trainer for this job file,
    which this process's fork server (harness.run.warm) may fork instead of spawning it when no cap is set.
    """
    method = choose_cap_method(cap_bytes)
    forked = None
    if warm_job is not None and cap_bytes is None:  # a cap measures a fresh trainer (harness.run.warm)
        forked = warm_child(warm_job, dict(os.environ if env is None else env), str(cwd or os.getcwd()))
    if forked is not None:
        return _watched(forked, floor_bytes, poll_s, method, cap_bytes)
    argv = list(cmd)
    preexec: Callable[[], None] | None = None
    if method == "systemd-run" and cap_bytes is not None:
        argv = _systemd_prefix(cap_bytes) + argv
    elif method == "rlimit" and cap_bytes is not None:
        preexec = _rlimit_setter(cap_bytes)
    # start_new_session: the child leads its own process group, so killpg reaches its workers (dataloader,
    # DDP ranks) and never this process.
    proc = subprocess.Popen(argv, env=env, cwd=cwd, start_new_session=True, preexec_fn=preexec)
    return _watched(SpawnedChild(proc), floor_bytes, poll_s, method, cap_bytes)


def _watched(
    child: SpawnedChild | WarmChild,
    floor_bytes: int | None,
    poll_s: float,
    method: CapMethod,
    cap_bytes: int | None,
) -> ChildOutcome:
    watchdog = _Watchdog(child.pid, floor_bytes, poll_s)
    watchdog.start()
    try:
        child.wait_exit()
    except ServerGone:
        # The fork server died under its child: the trainer is nobody's to wait for now; it goes too.
        kill_tree(child.pid)
        close_server()
        return ChildOutcome(
            -signal.SIGKILL, False, "lost: the warm trainer's fork server ended", {}, 0, method
        )
    except BaseException:
        kill_tree(child.pid)
        if isinstance(child, WarmChild):
            close_server()
        raise
    finally:
        with watchdog.lock:
            watchdog.stop.set()
    returncode, maxrss_kib = child.reap()
    watchdog.join()
    peak = max(watchdog.peak_rss, maxrss_kib * 1024)  # ru_maxrss is KiB on Linux
    return _outcome(returncode, watchdog.reading, peak, method, cap_bytes)


def _outcome(
    returncode: int, reading: dict[str, int], peak: int, method: CapMethod, cap_bytes: int | None
) -> ChildOutcome:
    if reading:
        reason = (
            f"killed by watchdog: available memory {reading['available_bytes'] // MIB} MiB fell below the "
            f"floor of {reading['floor_bytes'] // MIB} MiB; trainer RSS {reading['child_rss_bytes'] // MIB} MiB"
        )
        return ChildOutcome(returncode, True, reason, reading, peak, method)
    if returncode == 0:
        return ChildOutcome(returncode, False, None, {}, peak, method)
    if returncode < 0:
        name = signal.Signals(-returncode).name
        cap_note = (
            f"; the memory cap $LORABENCH_MEM_CAP = {cap_bytes // MIB} MiB ({method}) may have been reached: "
            "raise it or unset it"
            if cap_bytes is not None and returncode == -signal.SIGKILL
            else ""
        )
        return ChildOutcome(returncode, False, f"killed by {name}{cap_note}", {}, peak, method)
    return ChildOutcome(returncode, False, f"exited with status {returncode}", {}, peak, method)
