"""Issue 39: no path loses a run, also when the sweep that recovers a stale run is itself stopped.

A sweeper in a real process is held still (SIGSTOP, sent to itself by a spy wrapped around one step of
the sweep) and then stopped for real (SIGKILL, or SIGINT as Ctrl-C); the next sweep must record the stale
run exactly once. Work folders an older harness left, or malformed ones, are recorded where their fields
allow, else set aside and named; a `.work` that is a file does not block the results folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Generator
from pathlib import Path

import psutil
import pytest
from faultlib import REPO

from harness.guard import GuardRecord
from harness.results import RecordHeader, load_record
from harness.run.lifeline import identity
from harness.run.outcome import Outcome
from harness.run.workdir import RUN_FILE, create_work_dir, keep_ended, sweep_stale_runs

DEAD_OWNER = "an-earlier-boot/ns/999999/1.00"  # of an earlier boot: provably dead
RUN_ID = "20261201T000000.000000Z-feedface-s1-abcdef"
OLD = time.time() - 3600  # untouched for an hour: past the grace a folder without a readable owner gets


def header_fields(run_id: str = RUN_ID) -> dict[str, object]:
    return {
        "run_id": run_id, "created": "2026-12-01T00:00:00+00:00", "experiment": "adhoc", "setup_name": "adhoc",
        "seed": 1, "stack": "cpu", "host": "h", "fingerprint": "f", "setup": {}, "provenance": {},
    }  # fmt: skip


def stale_run(results: Path, run: object, name: str = RUN_ID) -> Path:
    """A work folder as a dead run left it, `run` as its run.json (None: no run.json at all)."""
    work = results / ".work" / name
    work.mkdir(parents=True)
    if run is not None:
        text = run if isinstance(run, (str, bytes)) else json.dumps(run)
        (work / RUN_FILE).write_bytes(text if isinstance(text, bytes) else text.encode())
    os.utime(work, (OLD, OLD))
    for entry in work.iterdir():
        os.utime(entry, (OLD, OLD))
    return work


def records(results: Path) -> list[Path]:
    return sorted(p for p in results.rglob("seed-*.json") if ".work" not in p.parts)


# A sweeper that stops itself (SIGSTOP) when it reaches `step`: the test then stops it for real.
SPY = """
import os, signal, sys
from pathlib import Path
import harness.run.landing as landing, harness.run.workdir as workdir
module, name = {"claimed": (workdir, "recover_record"), "record written": (landing, "beside"),
                "landed": (workdir, "remove_work_dir")}[sys.argv[2]]
real = getattr(module, name)
def spy(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGSTOP)
    return real(*args, **kwargs)
setattr(module, name, spy)
workdir.sweep_stale_runs(Path(sys.argv[1]))
"""


def wait_stopped(process: subprocess.Popen[str]) -> None:
    watched = psutil.Process(process.pid)
    while watched.status() != psutil.STATUS_STOPPED:
        assert process.poll() is None, process.communicate()[1][-2000:]
        time.sleep(0.05)


@pytest.mark.parametrize("stop", ["SIGKILL", "SIGINT"])
@pytest.mark.parametrize("step", ["claimed", "record written", "landed"])
def test_a_sweeper_stopped_at_any_step_leaves_the_run_to_the_next_sweep(
    tmp_path: Path, stop: str, step: str
) -> None:
    results = tmp_path / "results"
    stale_run(results, {"owner": DEAD_OWNER, "base": header_fields()})
    (results / ".work" / RUN_ID / "predictions.jsonl").write_text('{"q": 1}\n')
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    sweeper = subprocess.Popen(
        [sys.executable, "-c", SPY, str(results), step], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_stopped(sweeper)
        os.kill(sweeper.pid, getattr(signal, stop))
        os.kill(sweeper.pid, signal.SIGCONT)  # a pending SIGINT lands as Ctrl-C once it runs again
        sweeper.wait(timeout=60)
    finally:
        sweeper.kill()
    assert sweeper.returncode != 0  # it died in the middle: before issue 39 its claim was skipped forever
    claims = [p.name for p in (results / ".work").iterdir()] if (results / ".work").exists() else []
    if step != "landed":
        assert claims and ".swept-" in claims[0], claims

    swept = sweep_stale_runs(results)
    assert not (results / ".work").exists(), list((results / ".work").iterdir())
    (path,) = records(results)  # recorded once, whichever step the first sweeper died at
    record = load_record(path)
    assert record.run_id == RUN_ID and record.status == "killed"
    assert record.predictions_file and (path.parent / record.predictions_file).is_file()
    if step == "claimed":
        assert "recorded it as killed" in str(swept[0])


def test_the_claim_of_a_live_sweeper_is_left_alone(tmp_path: Path) -> None:
    work = stale_run(tmp_path, {"owner": DEAD_OWNER, "base": header_fields()})
    claim = work.with_name(f".{RUN_ID}.swept-{identity().replace('/', '+')}")
    work.rename(claim)
    assert sweep_stale_runs(tmp_path) == []
    assert claim.is_dir() and records(tmp_path) == []


def test_the_bare_pid_claim_of_an_earlier_version_is_taken_over_once_its_pid_is_gone(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(gone.stdout)
    assert not psutil.pid_exists(pid)
    work = stale_run(tmp_path, {"owner": DEAD_OWNER, "base": header_fields()})
    work.rename(work.with_name(f".{RUN_ID}.swept-{pid}"))
    (swept,) = sweep_stale_runs(tmp_path)
    assert swept.record is not None and load_record(swept.record).run_id == RUN_ID
    assert not (tmp_path / ".work").exists()


def test_an_owner_that_is_not_a_string_is_recorded_from_its_fields(tmp_path: Path) -> None:
    stale_run(
        tmp_path, {"owner": 12345, "base": header_fields()}
    )  # before: AttributeError, every later run exit 1
    (swept,) = sweep_stale_runs(tmp_path)
    assert swept.record is not None
    record = load_record(swept.record)
    assert record.status == "killed" and "pid ?" in (record.reason or "")


@pytest.mark.parametrize(
    ("kind", "run", "why"),
    [
        ("an older harness's (no run.json)", None, "has no run.json"),
        ("run.json a list", [1, 2], "a JSON list"),
        ("run.json cut short", '{"owner": "x", "ba', "not JSON"),
        ("owner not a string, base a list", {"owner": 5, "base": []}, "'base' is a JSON list"),
        ("run.json not UTF-8", b"\xff\xfe{", "not UTF-8"),
    ],
)
def test_a_work_folder_that_cannot_be_read_is_set_aside_and_named(
    tmp_path: Path, kind: str, run: object, why: str
) -> None:
    work = stale_run(tmp_path, run)
    (swept,) = sweep_stale_runs(tmp_path)  # before: skipped by every later run, never named
    assert swept.record is None and why in str(swept), (kind, str(swept))
    assert f".unrecorded-{RUN_ID}" in str(swept)
    assert not work.exists() and (tmp_path / ".work" / f".unrecorded-{RUN_ID}").is_dir()
    assert sweep_stale_runs(tmp_path) == []  # said once


def test_an_unreadable_folder_still_being_written_is_left_alone(tmp_path: Path) -> None:
    work = tmp_path / ".work" / RUN_ID
    work.mkdir(parents=True)  # a run between creating its folder and writing run.json
    assert sweep_stale_runs(tmp_path) == []
    assert work.is_dir()


def test_a_second_folder_set_aside_under_a_taken_name_gets_its_own(tmp_path: Path) -> None:
    (tmp_path / ".work" / f".unrecorded-{RUN_ID}").mkdir(parents=True)
    stale_run(tmp_path, [1])
    (swept,) = sweep_stale_runs(tmp_path)
    assert f".unrecorded-{RUN_ID}-1" in str(swept)


@pytest.mark.parametrize("blocker", ["a file", "a dangling link"])
def test_a_work_entry_that_is_not_a_folder_is_moved_aside_and_runs_go_on(
    tmp_path: Path, blocker: str
) -> None:
    work = tmp_path / ".work"
    if blocker == "a file":
        work.write_text("x")
    else:
        work.symlink_to(tmp_path / "nowhere")
    (swept,) = sweep_stale_runs(tmp_path)  # before: every run here failed creating its work folder
    assert "was not a folder" in str(swept) and ".work.unrecorded-" in str(swept)
    header = RecordHeader.model_validate(header_fields("a-new-run"))
    assert create_work_dir(tmp_path, header).is_dir()


@pytest.mark.parametrize("cause_kept", [True, False])
def test_a_record_recovered_after_a_read_only_results_folder_states_that_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cause_kept: bool
) -> None:
    monkeypatch.setenv("LORABENCH_LOCK_DIR", str(tmp_path / "locks"))
    results = tmp_path / "results"
    work = stale_run(results, {"owner": DEAD_OWNER, "base": header_fields()})
    with read_only(results):
        with pytest.raises(OSError):
            (work / "probe").write_text("x")
        if (
            cause_kept
        ):  # what the parent does when its record cannot be written (harness.run.parent.land_record)
            keep_ended(work, Outcome(status="ok"), GuardRecord(), "results: [Errno 30] Read-only file system")
    (swept,) = sweep_stale_runs(results)
    record = load_record(swept.record)
    if (
        cause_kept
    ):  # before issue 39: `killed`, "the run's parent process (pid ?) died without writing its record"
        assert record.status == "ok" and "could not be written then: results: [Errno 30] Read-only" in (
            record.reason or ""
        )
        assert not (tmp_path / "locks" / "lorabench-ended" / RUN_ID).exists()
    else:
        assert record.status == "killed" and "died without writing its record" in (record.reason or "")


@contextlib.contextmanager
def read_only(folder: Path) -> Generator[None]:
    """`folder` as a real read-only bind mount for the block (root ignores permission bits)."""
    if subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True).returncode:
        pytest.skip("cannot bind-mount here (needs root with CAP_SYS_ADMIN)")
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True).returncode:
            pytest.skip("cannot remount read-only here")
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
