"""One home per concept on the run side: one function writes every run's record (under its lock,
atomically), one hashes a fingerprint payload, one seeds the run; the record's header is typed and the
guard's verdict is returned. The AST scans are each shown a source with the bug, so they can fail."""

from __future__ import annotations

import ast
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.guard import GuardRecord
from harness.locks import LockBusy, exclusive_lock
from harness.results import RECORD_READ_LIMIT, RecordHeader, RunRecord, Timings, load_record, record_lock_path
from harness.run.landing import land

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def header(run_id: str = "r1", created: str = "2026-12-01T10:00:00+00:00") -> RecordHeader:
    return RecordHeader(
        run_id=run_id, created=created, experiment="adhoc", setup_name="adhoc", seed=3407, stack="cpu", host="h1",
        fingerprint="f" * 16, setup={}, provenance={},
    )  # fmt: skip


def modules() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(HARNESS.parent)): ast.parse(p.read_text(encoding="utf-8"))
        for p in HARNESS.rglob("*.py")
    }


def functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def called_names(node: ast.AST) -> set[str]:
    """Names of what `node` calls: `f(…)` and `x.f(…)` both as `f`."""
    out = set()
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        func = call.func
        out.add(
            func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        )
    return out


def callers_of(name: str, trees: dict[str, ast.Module]) -> set[str]:
    """`file::function` of every innermost function that calls `name`; `file::<module>` for a module-level call."""
    found = set()
    for path, tree in trees.items():
        inner = [f for f in functions(tree) if name in called_names(f)]
        # The innermost: a function none of whose nested functions is the caller instead.
        for f in inner:
            nested = [g for g in functions(f) if g is not f and name in called_names(g)]
            if not nested:
                found.add(f"{path}::{f.name}")
        top = [
            n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ]
        if any(name in called_names(n) for n in top):
            found.add(f"{path}::<module>")
    return found


def hashing_a_fingerprint_payload(trees: dict[str, ast.Module]) -> set[str]:
    """Functions that call hashlib and touch a fingerprint payload: exactly what may compute a fingerprint."""
    found = set()
    for path, tree in trees.items():
        for f in functions(tree):
            uses_hashlib = any(
                isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "hashlib"
                for n in ast.walk(f)
            )
            if uses_hashlib and called_names(f) & {"fingerprint_payload", "setup_digest"}:
                found.add(f"{path}::{f.name}")
    return found


def test_one_function_writes_every_record() -> None:
    trees = modules()
    assert callers_of("write_record", trees) == {"harness/run/landing.py::land"}
    # Nodes' records (refused, lead lost, the lead's: the supervisor's land_record) go through it too.
    nodes = trees["harness/run/nodes.py"]
    assert {"land", "land_record"} <= called_names(nodes)
    assert not {"write_record", "write_text", "write_json"} & called_names(nodes)
    # The scan catches a second writer (the bug the issue names: nodes writing records their own way).
    trees["harness/run/nodes.py"] = ast.parse("def lead_record(d, r):\n    return write_record(d, r)\n")
    assert callers_of("write_record", trees) == {
        "harness/run/landing.py::land",
        "harness/run/nodes.py::lead_record",
    }


def test_one_function_hashes_a_fingerprint_payload() -> None:
    trees = modules()
    assert hashing_a_fingerprint_payload(trees) == {"harness/results.py::setup_digest"}
    # The setup's payload is read through results.fingerprint_payload (data by content), nowhere else.
    readers = {f"{path}::{f.name}" for path, tree in trees.items() for f in functions(tree) for n in ast.walk(f)
               if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "fingerprint_payload"}  # fmt: skip
    assert readers == {"harness/results.py::fingerprint_payload"}
    # The bug the issue names: a hash of its own over the payload (run/nodes.py had one).
    trees["harness/run/nodes.py"] = ast.parse(
        "import hashlib\ndef hello(setup):\n    return hashlib.sha256(fingerprint_payload(setup).encode()).hexdigest()\n"
    )
    assert "harness/run/nodes.py::hello" in hashing_a_fingerprint_payload(trees)


def test_the_run_is_seeded_in_one_place() -> None:
    trees = modules()
    # harness/testing.py builds the tests' tiny models: a test's model, not a run's.
    assert callers_of("manual_seed", trees) - {"harness/testing.py::build_tiny_model"} == {
        "harness/run/seeding.py::seed_run"
    }


def test_every_function_of_the_run_side_is_short() -> None:
    mine = [p for p in modules() if p.startswith(("harness/run/", "harness/backends/")) or p in (
        "harness/results.py", "harness/guard/verdict.py")]  # fmt: skip
    trees = modules()
    long = [f"{p}::{f.name} {f.end_lineno - f.lineno + 1}" for p in mine for f in functions(trees[p])
            if (f.end_lineno or 0) - f.lineno + 1 > 60]  # fmt: skip
    assert long == []


def test_a_record_is_written_under_its_lock(tmp_path: Path) -> None:
    target = header().record_path(tmp_path)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with exclusive_lock(record_lock_path(target)):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(30)
    try:
        with pytest.raises(LockBusy):
            land(tmp_path, header(), lambda _path: RunRecord.from_header(header(), status="ok"), timeout_s=0)
        assert not target.exists()
    finally:
        release.set()
        holder.join()
    record, path = land(
        tmp_path, header(), lambda _path: RunRecord.from_header(header(), status="ok"), timeout_s=0
    ) or (None, None)
    assert path == target and record is not None and record.run_id == "r1"


def test_a_late_record_of_a_landed_run_is_not_written_again(tmp_path: Path) -> None:
    compose = lambda _path: RunRecord.from_header(header(), status="ok")  # ruff: ignore[lambda-assignment]
    assert land(tmp_path, header(), compose) is not None
    assert land(tmp_path, header(), compose, late=True) is None
    # A newer run holds the name: the late one is kept beside it as a previous record.
    newer = header("r2", "2026-12-01T11:00:00+00:00")
    land(tmp_path, newer, lambda _path: RunRecord.from_header(newer, status="ok"))
    old = header("r0", "2026-12-01T09:00:00+00:00")
    landed = land(
        tmp_path, old, lambda path: RunRecord.from_header(old, status="killed", reason=path.name), late=True
    )
    assert landed is not None and ".prev-" in landed[1].name and landed[0].reason == landed[1].name


@pytest.mark.parametrize(
    ("guard", "written"),
    [
        (GuardRecord(timed=False), {"timed": False}),
        (GuardRecord(), {}),  # recovered by a sweep: what the guard said is not known
        (GuardRecord(timed=True, precheck=None, nodes=[]), {"timed": True, "precheck": None, "nodes": []}),
    ],
)
def test_the_guard_verdict_keeps_the_record_shape(guard: GuardRecord, written: dict[str, object]) -> None:
    assert guard.to_record() == written
    assert GuardRecord.model_validate(written).to_record() == written  # ended.json round trip


def test_a_record_landed_while_this_run_ran_keeps_its_name_and_this_one_goes_beside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 39: two runs of one setup and seed at once. The first to land has printed its path; the
    # second must not move that record away (before, both printed seed-3407.json, holding the second's).
    now = datetime.now(UTC).replace(microsecond=0)
    first, second = header("r1", now.isoformat()), header("r2", now.isoformat())
    ran = Timings(total_s=5.0)  # the first ended after the second started
    landed_first = land(tmp_path, first, lambda _path: RunRecord.from_header(first, status="ok", timings=ran))
    landed_second = land(
        tmp_path, second, lambda _path: RunRecord.from_header(second, status="ok", timings=ran)
    )
    assert landed_first is not None and landed_second is not None
    assert load_record(landed_first[1]).run_id == "r1" and landed_first[1] == first.record_path(tmp_path)
    assert load_record(landed_second[1]).run_id == "r2" and ".prev-" in landed_second[1].name
    assert f"(run r1) wrote {landed_first[1]} while this one ran" in capsys.readouterr().err


def test_a_rerun_begun_in_the_second_the_run_before_it_ended_takes_the_name(tmp_path: Path) -> None:
    # The suite's `--lorabench-rerun` right after a run (seen in tests/suite/test_suite_runs.py under load):
    # the first ran 31.07 → 35.13 s, the re-run began at 35.32 s. By `created`, cut to the second (31 + 4.06
    # ≥ 35), the two had overlapped and the re-run's record went beside the old one.
    first = header("20261203T205031.065916Z-b077b88d-s3407-689ba6", "2026-12-03T20:50:31+00:00")
    ran = Timings(total_s=4.06)
    assert land(tmp_path, first, lambda _path: RunRecord.from_header(first, status="ok", timings=ran))
    rerun = header("20261203T205035.320758Z-b077b88d-s3407-1f2e3d", "2026-12-03T20:50:35+00:00")
    landed = land(tmp_path, rerun, lambda _path: RunRecord.from_header(rerun, status="ok", timings=ran))
    assert landed is not None and landed[1] == rerun.record_path(tmp_path)
    assert [load_record(p).run_id for p in tmp_path.rglob("seed-3407.prev-*.json")] == [first.run_id]


def test_a_record_of_a_run_that_did_not_finish_gives_the_name_to_this_run(tmp_path: Path) -> None:
    # `lorabench run` after a SIGKILL: its own sweep records the dead run as killed while it runs, then it
    # resumes that run's checkpoint and finishes; its record, not the killed one, must hold the name.
    now = datetime.now(UTC).replace(microsecond=0)
    dead, resumed = header("r1", now.isoformat()), header("r2", now.isoformat())
    assert land(tmp_path, dead, lambda _path: RunRecord.from_header(dead, status="killed"), late=True)
    landed = land(tmp_path, resumed, lambda _path: RunRecord.from_header(resumed, status="ok"))
    assert landed is not None and landed[1] == resumed.record_path(tmp_path)
    assert load_record(landed[1]).run_id == "r2"
    kept = [load_record(p).run_id for p in tmp_path.rglob("seed-3407.prev-*.json")]
    assert kept == ["r1"]


@pytest.mark.parametrize("other", ["another setup", "ended before this run started"])
def test_a_record_of_no_identical_run_beside_this_one_gives_the_name_up(tmp_path: Path, other: str) -> None:
    # A changed setup re-run at once (the suite), or the late record of a finished run whose record could not
    # be written, which this run's own sweep lands while it runs: this run's record takes the name.
    first = header("r1", "2026-12-01T10:00:00+00:00")
    if other == "another setup":
        first = first.model_copy(update={"fingerprint": "e" * 16})
    ran = Timings(total_s=3600.0 if other == "another setup" else 60.0)
    assert land(tmp_path, first, lambda _path: RunRecord.from_header(first, status="ok", timings=ran))
    this = header("r2", "2026-12-01T10:30:00+00:00")
    landed = land(tmp_path, this, lambda _path: RunRecord.from_header(this, status="ok"))
    assert landed is not None and landed[1] == this.record_path(tmp_path)
    assert [load_record(p).run_id for p in tmp_path.rglob("seed-3407.prev-*.json")] == ["r1"]


def test_a_record_landed_before_this_run_started_is_kept_as_previous(tmp_path: Path) -> None:
    earlier = header("r1", "2026-12-01T10:00:00+00:00")
    landed_earlier = land(tmp_path, earlier, lambda _path: RunRecord.from_header(earlier, status="ok"))
    assert landed_earlier is not None
    landed_at = datetime(2026, 12, 1, 10, 5, tzinfo=UTC).timestamp()
    os.utime(landed_earlier[1], (landed_at, landed_at))
    rerun = header("r2", "2026-12-01T11:00:00+00:00")
    landed_rerun = land(tmp_path, rerun, lambda _path: RunRecord.from_header(rerun, status="ok"))
    assert landed_rerun is not None and landed_rerun[1] == rerun.record_path(tmp_path)
    kept = [p for p in tmp_path.rglob("seed-3407.prev-*.json")]
    assert [load_record(p).run_id for p in kept] == ["r1"]


def _hold_the_name(target: Path, kind: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "folder":
        (target / "inside").mkdir(parents=True)
    elif kind == "fifo":
        os.mkfifo(target)  # before issue 39 reading it to compare blocked the landing for good
    elif kind == "dangling link":
        target.symlink_to(target.parent / "nowhere.json")
    else:  # a file far larger than any record: moved aside unread
        with target.open("wb") as handle:
            handle.truncate(RECORD_READ_LIMIT + 1)


@pytest.mark.parametrize("kind", ["folder", "fifo", "dangling link", "huge file"])
def test_a_record_name_held_by_what_is_not_a_record_is_kept_aside_and_the_record_lands(
    tmp_path: Path, kind: str
) -> None:
    # Issue 39, "nothing in a results folder can block every later run": a folder at seed-3407.json made
    # every landing of that setup and seed fail, and the sweep of each such run failed the same way.
    target = header().record_path(tmp_path)
    _hold_the_name(target, kind)
    landed = land(tmp_path, header(), lambda _path: RunRecord.from_header(header(), status="ok"), timeout_s=0)
    assert landed is not None and landed[1] == target and load_record(target).run_id == "r1"
    kept = sorted(p.name for p in target.parent.iterdir() if ".prev-" in p.name)
    expected = "unreadable" if kind == "huge file" else "not-a-record-file"
    assert kept == [f"seed-3407.prev-{expected}.json"]
