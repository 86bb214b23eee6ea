"""What the fault tests share: the real CLI on the tiny model in a real process, its environment, ways to
watch it (the steps its trainer journaled, its trainer processes), and a small real disk to fill under it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Generator
from pathlib import Path

import psutil
import pytest

# FAULT_CODE_ROOT points the runs at another checkout (how "before" was measured: the old CLI, these tests).
REPO = Path(os.environ.get("FAULT_CODE_ROOT") or Path(__file__).resolve().parents[2])


def cli_args(model: Path, data: Path, results: Path, steps: int) -> list[str]:
    return [
        sys.executable, "-m", "harness.cli", "run", "--model", str(model), "--data", str(data),
        "--steps", str(steps), "--results", str(results), "--quiet",
        "--set", "data.test_size=6", "--set", "eval.limit=2", "--set", "eval.max_new_tokens=4",
        "--set", "checks.smoke.enabled=false", "--set", "recipe.batch_size=2",
    ]  # fmt: skip


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LORABENCH_DATA"}
    return {
        **env,
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
        "LORABENCH_CACHE": str(tmp_path / "cache"),
        **extra,
    }


@contextlib.contextmanager
def started_run(tmp_path: Path, args: list[str], **env: str) -> Generator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        args,
        cwd=tmp_path,
        env=cli_env(tmp_path, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        for proc in [process, *find_trainers(tmp_path)]:
            with contextlib.suppress(ProcessLookupError, psutil.Error):
                proc.kill()
        process.wait(timeout=60)


def journal(results: Path) -> list[str]:
    return [
        line for events in results.glob(".work/*/events.jsonl") for line in events.read_text().splitlines()
    ]


def journaled_steps(results: Path) -> int:
    return sum('"event": "step"' in line for line in journal(results))


def wait_for_steps(results: Path, n: int, process: subprocess.Popen[str], timeout_s: float = 300) -> None:
    """Until the trainer has journaled `n` steps. A journal that never gets a step (the code before issue 17
    journaled none) gets 120 s from the start of its train phase instead; once one step is journaled the
    wait is for all `n` (preflight inside the train phase took over 30 s on a loaded 2-core machine, and a
    shorter give-up killed runs at step 2)."""
    deadline = time.monotonic() + timeout_s
    train_started: float | None = None
    while (steps := journaled_steps(results)) < n:
        if train_started is None and any(
            '"phase": "train", "event": "start"' in line for line in journal(results)
        ):
            train_started = time.monotonic()
        if steps == 0 and train_started is not None and time.monotonic() - train_started > 120:
            return
        if process.poll() is not None:
            pytest.fail(
                f"the run ended before step {n}: {process.stderr.read()[-2000:] if process.stderr else ''}"
            )
        if time.monotonic() > deadline:
            pytest.fail(f"no step {n} within {timeout_s} s")
        time.sleep(0.2)


def find_trainers(where: Path) -> list[psutil.Process]:
    """Trainer children working under `where` (by their job file), wherever they are in the process tree."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "harness.run.child" in cmdline and str(where) in cmdline:
            found.append(proc)
    return found


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Generator[Path]:
    """A real tmpfs of `size` ("8m") mounted at `where` for the block (skips where this host cannot mount one)."""
    where.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    ).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@contextlib.contextmanager
def filling_disk(
    results: Path, filler: Path, *, leave_bytes: int = 0, keep_full: bool = False
) -> Generator[None]:
    """For the block: from the first step a run journals in `results`, write `filler` until its disk has
    `leave_bytes` free. `keep_full`: then keep taking every block freed (what another job writing there does)."""
    stop = threading.Event()

    def fill() -> None:
        while not stop.is_set() and journaled_steps(results) < 1:
            time.sleep(0.05)
        with filler.open("wb", buffering=0) as handle:  # unbuffered: a refused write leaves nothing pending
            while not stop.is_set():
                room = os.statvfs(filler.parent).f_bavail * os.statvfs(filler.parent).f_frsize - leave_bytes
                try:
                    if room <= 0:
                        raise OSError("full")
                    handle.write(b"\0" * min(64 << 10, room))
                except OSError:
                    if not keep_full:
                        return
                    time.sleep(0.02)

    thread = threading.Thread(target=fill)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
