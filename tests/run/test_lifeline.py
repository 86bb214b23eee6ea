"""Identities that prove a process dead (or not), and the progress a killed trainer's journal keeps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from harness.results import RecordHeader
from harness.run.lifeline import identity, is_alive
from harness.run.outcome import Events, train_progress
from harness.run.workdir import RUN_FILE, create_work_dir, sweep_stale_runs


def test_this_process_is_alive_a_finished_one_is_not() -> None:
    assert is_alive(identity())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    who = identity(child.pid)
    child.wait()
    assert not is_alive(who)


def test_a_reused_pid_or_an_earlier_boot_is_not_the_same_process() -> None:
    boot, namespace, pid, started = identity().split("/")
    assert not is_alive(f"{boot}/{namespace}/{pid}/t{int(started[1:]) - 100}")  # same pid, another start
    assert not is_alive(f"another-boot/{namespace}/{pid}/{started}")
    assert is_alive(f"{boot}/another-namespace/{pid}/{started}")  # cannot be judged: alive


def test_a_stepped_wall_clock_does_not_make_a_living_parent_look_restarted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The boot time psutil reads from /proc/stat moves when the clock is stepped (NTP, a VM restored from a
    snapshot): a CI machine's trainer once killed itself mid-smoke-run because its parent's wall-clock start
    had moved a second. Identities count ticks from boot, which no clock step moves."""
    before, wall_start = identity(), psutil.Process().create_time()
    booted = psutil.boot_time()
    monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: booted + 1.0)
    assert psutil.Process().create_time() == pytest.approx(wall_start + 1.0)  # the step psutil sees
    assert identity() == before and is_alive(before)


def test_an_identity_with_a_wall_clock_start_is_still_judged() -> None:
    """Work folders left by versions that wrote wall-clock starts: within two seconds is the same process."""
    boot, namespace, pid, _ = identity().split("/")
    started = psutil.Process().create_time()
    assert is_alive(f"{boot}/{namespace}/{pid}/{started + 1.0:.2f}")
    assert not is_alive(f"{boot}/{namespace}/{pid}/{started - 100:.2f}")


def test_the_journal_keeps_each_steps_loss(tmp_path: Path) -> None:
    events = Events(tmp_path / "events.jsonl")
    events.mark("train", "start")
    for step, loss in enumerate([2.5, 2.25, 2.0], start=1):
        assert events.on_step(step, loss) is None
    with (tmp_path / "events.jsonl").open("a") as handle:
        handle.write('{"t": 1, "phase": "train", "event": "st')  # cut short by a kill
    progress = train_progress(tmp_path)
    assert progress is not None and progress.steps_done == 3 and progress.loss == [2.5, 2.25, 2.0]
    assert progress.first_loss == progress.loss[0] and progress.final_loss is None


def test_a_sweep_leaves_the_folders_of_living_runs_and_of_other_programs(tmp_path: Path) -> None:
    header = RecordHeader(run_id="alive-run", created="2026-12-01T00:00:00+00:00", experiment="adhoc", setup_name="adhoc",
                          seed=1, stack="cpu", host="h", fingerprint="f", setup={}, provenance={})  # fmt: skip
    alive = create_work_dir(tmp_path, header)
    foreign = tmp_path / ".work" / "not-a-run"
    foreign.mkdir()
    assert sweep_stale_runs(tmp_path) == []
    assert alive.is_dir() and foreign.is_dir()
    assert json.loads((alive / RUN_FILE).read_text())["owner"].split("/")[2] == str(os.getpid())
