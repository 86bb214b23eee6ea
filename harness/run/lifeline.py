"""The trainer dies with its parent: every trainer process watches the parent that started the run.

Why a watch and not `PR_SET_PDEATHSIG`: that signal fires when the *thread* that forked dies (a suite
may start runs from any thread), it reaches only the direct child (under DDP the direct child is
torchrun, whose ranks would live on), and with a memory cap the direct child may be `systemd-run`.
Instead the parent hands its identity down in the environment, which systemd-run --scope and torchrun
pass on to every rank; each trainer process checks twice a second that this very process still lives
and, when it does not, kills itself (and its process group when it leads one). A SIGKILLed parent
therefore leaves no trainer running unwatched to the end.

An identity is `boot/pid-namespace/pid/start`: a pid reused by another process, or a new boot, is not
mistaken for the parent. The start is the kernel's count of clock ticks from boot to the process's start
(/proc/PID/stat), never a wall-clock time: psutil's create_time adds the boot time of /proc/stat, which
moves whenever the clock is stepped (NTP, a VM restored from a snapshot), and a parent that seemed to have
"restarted" a second later once made a trainer kill itself mid-run. The same identities prove a stale
work folder dead (`harness.run.workdir`).
Not covered: a parent in another pid namespace (a second container) cannot be judged; it counts as alive.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import psutil

from harness import settings

PARENT_ENV = settings.PARENT.name
POLL_S = 0.5


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown-boot"


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "unknown-ns"


def _start_ticks(pid: int) -> str:
    """When `pid` started, in clock ticks since boot: field 22 of /proc/PID/stat, after the command name
    (which may hold spaces and parentheses, hence the last ')')."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        raise psutil.NoSuchProcess(pid) from None
    return "t" + stat.rsplit(")", 1)[1].split()[19]


def identity(pid: int | None = None) -> str:
    """This process (or `pid`) as `boot/pid-namespace/pid/start`."""
    pid = os.getpid() if pid is None else pid
    return f"{_boot_id()}/{_pid_namespace()}/{pid}/{_start_ticks(pid)}"


def is_alive(who: str) -> bool:
    """False only when `who` is provably gone: another boot, or its pid is free or someone else's now.
    An identity this host cannot judge (another pid namespace, a malformed one) counts as alive."""
    try:
        boot, namespace, pid_text, started = who.split("/")
        pid = int(pid_text)
    except ValueError:
        return True
    if boot != _boot_id():
        return boot == "unknown-boot"  # a process of an earlier boot is dead
    if namespace != _pid_namespace():
        return True
    try:
        process = psutil.Process(pid)
        if started.startswith("t"):
            same_start = _start_ticks(pid) == started
        else:  # written by a version that used wall-clock start times: a clock step may move them a second
            same_start = abs(process.create_time() - float(started)) < 2.0
        return same_start and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except (psutil.Error, OSError, ValueError):
        return True


def lifeline_env() -> dict[str, str]:
    """What the parent adds to the trainer's environment so the trainer can watch it."""
    return {PARENT_ENV: identity()}


def watch_parent() -> threading.Thread | None:
    """In a trainer process: a daemon thread that ends this process when the run's parent is gone."""
    parent = settings.PARENT.get()
    if not parent:
        return None
    watcher = threading.Thread(target=_watch, args=(parent,), name="lorabench-lifeline", daemon=True)
    watcher.start()
    return watcher


def _watch(parent: str) -> None:
    stop = threading.Event()
    while is_alive(parent):
        stop.wait(POLL_S)
    # Its own process group when it leads one (run_capped starts the trainer in a new session), so
    # helpers it started go too; never the group of a shell that ran this module by hand.
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
