"""Ctrl-C in `lorabench bench` (what `make bench` runs), for real: SIGINT to the whole foreground process
group, as a terminal sends it. The run in progress is recorded as killed with its progress; the next
plain `lorabench bench` runs that seed again (before: it reused the killed record and failed the claim).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.results import load_record

REPO = Path(__file__).resolve().parents[2]


def steps_journaled(results: Path) -> int:
    return sum(
        '"event": "step"' in line for events in results.glob(".work/*/events.jsonl") for line in events.read_text().splitlines()
    )


def test_ctrl_c_records_the_run_as_killed_and_the_next_bench_resumes_it(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    bench_dir(steps=60, min_gain=-100.0)
    suite_args = [a for a in bench_args if not a.startswith("--lorabench-results")]
    command = [sys.executable, "-m", "harness.cli", "bench", "--results", "results", "--no-report", "test_claims.py", *suite_args]
    results = pytester.path / "results"

    bench = subprocess.Popen(command, cwd=pytester.path, start_new_session=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)  # fmt: skip
    deadline = time.monotonic() + 300
    while steps_journaled(results) < 3 and bench.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(bench.pid, signal.SIGINT)  # the terminal's Ctrl-C: bench and pytest, not the trainer's session
    output, _ = bench.communicate(timeout=180)
    assert bench.returncode == 130, output[-3000:]
    assert "lorabench bench: interrupted" in output
    record_file = next(results.rglob("exp_t/tiny/seed-3407.json"))
    killed = load_record(record_file)
    assert killed.status == "killed" and "SIGINT" in (killed.reason or "")
    assert killed.train is not None and 3 <= killed.train.steps_done < 60

    again = subprocess.run(command, cwd=pytester.path, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "re-ran  exp_t/tiny seed 3407: ok" in again.stdout
    assert "its record is killed, running it again: training" in again.stdout + again.stderr  # said while it runs
    resumed = load_record(record_file)
    assert resumed.status == "ok" and resumed.train is not None and resumed.train.steps_done == 60
    assert [load_record(p).run_id for p in record_file.parent.glob("seed-3407.prev-*.json")] == [killed.run_id]
