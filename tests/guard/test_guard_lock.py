"""The host-wide timed lock, between real processes."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from guardlib import child_env

from harness.guard import timed_lock
from harness.locks import LockBusy, exclusive_lock

# Holds the lock for argv[2] seconds and appends its [start, end] interval to argv[3].
HOLDER = """
import sys, time
from pathlib import Path
from harness.guard import timed_lock
with timed_lock(Path(sys.argv[1])):
    start = time.time()
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    end = time.time()
with open(sys.argv[3], "a") as f:
    f.write(f"{start} {end}\\n")
"""


def holder(lock: Path, seconds: float, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), str(seconds), str(log)],
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


def test_busy_lock_names_its_holder(tmp_path: Path) -> None:
    lock = tmp_path / "timed.lock"
    first = holder(lock, 2.0, tmp_path / "log")
    assert first.stdout is not None and first.stdout.readline().strip() == "held"
    with pytest.raises(LockBusy) as caught, timed_lock(lock, timeout_s=0.2):
        pass
    assert f"held by pid {first.pid} since" in str(caught.value)
    assert "waited 0.2 s" in str(caught.value)
    first.kill()
    first.wait()
    with timed_lock(lock, timeout_s=1.0):  # the kernel released it with the dead holder
        assert f"pid {os.getpid()} since" in lock.read_text()
    assert lock.read_text() == ""


def test_two_processes_never_overlap(tmp_path: Path) -> None:
    lock, log = tmp_path / "timed.lock", tmp_path / "intervals"
    procs = [holder(lock, 0.6, log) for _ in range(3)]
    for proc in procs:
        proc.wait(timeout=30)
    intervals = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert len(intervals) == 3
    for (_, end), (start, _) in itertools.pairwise(intervals):
        assert start >= end, f"timed phases overlapped: {intervals}"


def test_lock_dir_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORABENCH_LOCK_DIR", str(tmp_path))
    with timed_lock() as path:
        assert path == tmp_path / "lorabench-timed.lock"
        assert path.exists()


def test_reentry_in_one_thread_does_not_wait_and_another_thread_does(tmp_path: Path) -> None:
    """The suite takes the timed lock, then the run takes it again in the same thread: a non-re-entrant lock
    would wait on itself (timeout_s=1 turns that deadlock into LockBusy). Another thread is another holder."""
    lock, other = tmp_path / "timed.lock", []

    def from_another_thread() -> None:
        try:
            with exclusive_lock(lock, timeout_s=0.2, what="timed lock"):
                other.append("got it")
        except LockBusy as exc:
            other.append(str(exc))

    with exclusive_lock(lock, what="timed lock"), exclusive_lock(lock, timeout_s=1.0, what="timed lock"):
        thread = threading.Thread(target=from_another_thread)
        thread.start()
        thread.join()
        assert lock.read_text().startswith(f"pid {os.getpid()} since")
    assert other and other[0].startswith(f"timed lock {lock} is held by pid {os.getpid()} since")
    assert lock.read_text() == ""  # emptied while still held: nobody reads a stale name
    with exclusive_lock(lock, timeout_s=0):  # and released for real
        pass


# Holds the lock, forks a child that outlives it (a DataLoader worker, a spawned helper), then waits.
FORKING_HOLDER = """
import os, sys, time
from pathlib import Path
from harness.locks import exclusive_lock
with exclusive_lock(Path(sys.argv[1])):
    if os.fork() == 0:
        time.sleep(3)
        os._exit(0)
    print("held", flush=True)
    time.sleep(30)
"""


def test_a_sigkilled_holders_forked_child_does_not_keep_the_lock(tmp_path: Path) -> None:
    """Before filelock: the child's copy of the descriptor kept the flock until the child exited."""
    lock = tmp_path / "timed.lock"
    holder = subprocess.Popen([sys.executable, "-c", FORKING_HOLDER, str(lock)], stdout=subprocess.PIPE, text=True,
                              env=child_env())  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    with exclusive_lock(lock, timeout_s=0.5):  # the child sleeps on for 3 s
        pass
