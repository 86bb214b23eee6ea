"""Where a run's seconds go: the record's phases cover its whole command, parent and trainer child."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.run.outcome import Outcome
from harness.run.parent import RunOptions, run_setup
from harness.run.timeline import (
    bracket_trainer,
    close_books,
    phase,
    prepend_phases,
    process_started,
    projected_wall_s,
)
from tests.run.test_parent import tiny_setup

PARENT = ("startup", "inputs", "provenance", "work_dir", "parent")
CHILD = ("spawn", "child_start", "data", "load", "baseline", "lora", "trainer", "preflight",
         "steps", "after_steps", "post_checks", "save_adapter", "eval", "score", "child_exit")  # fmt: skip


def test_process_start_is_this_process_s() -> None:
    # A fresh interpreter reports a start before the moment it was asked, and after the moment it was made.
    before = time.time()
    out = subprocess.run([sys.executable, "-c", "from harness.run.timeline import process_started as p; print(p())"],
                         capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})  # fmt: skip
    started = float(out.stdout)
    assert before - 0.05 <= started <= time.time()
    assert process_started() is not None and process_started() < before


def test_unaccounted_is_the_wall_clock_no_phase_covers() -> None:
    outcome = Outcome()
    with phase(outcome, "known"):
        time.sleep(0.05)
    time.sleep(0.1)  # a gap that no phase names
    close_books(outcome, None, fallback_start=time.time() - 0.15)
    assert outcome.timings.unaccounted_s is not None and outcome.timings.unaccounted_s >= 0.09
    assert outcome.timings.wall_s - outcome.timings.unaccounted_s == pytest.approx(
        outcome.timings.phases["known"], abs=0.02
    )


def test_trainer_that_never_reported_keeps_its_seconds_as_unreported() -> None:
    outcome = Outcome(status="killed")
    bracket_trainer(outcome, launched=100.0, returned=107.5)
    assert outcome.timings.phases == {"trainer_unreported": 7.5}
    reported = Outcome(started_at=101.0, finished_at=106.0)
    reported.add_timings(phases={"load": 5.0})
    bracket_trainer(reported, launched=100.0, returned=107.5)
    prepend_phases(reported, {"startup": 2.0})
    assert list(reported.timings.phases) == ["startup", "spawn", "load", "child_exit"]
    assert reported.timings.phases["child_exit"] == pytest.approx(1.5)


def test_isolated_run_names_every_phase_in_order(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    record, _ = run_setup(tiny_setup(tiny_model_dir, sql_rows_file), RunOptions(results_dir=tmp_path))
    assert record.status == "ok", record.reason
    timings = record.timings
    names = list(timings.phases)
    assert [n for n in names if n in PARENT + CHILD] == [n for n in PARENT + CHILD if n in names]
    assert set(PARENT[1:]) | set(CHILD) <= set(names), set(PARENT + CHILD) - set(names)
    # Independent measures: the wall clock from the process's start and the sum of the phases.
    assert (
        timings.wall_s and abs(timings.wall_s - sum(timings.phases.values()) - timings.unaccounted_s) < 0.05
    )
    assert timings.phases["preflight"] == timings.preflight_s


def test_projection_scales_steps_and_questions_and_pays_the_rest_per_run() -> None:
    phases = {"startup": 1.0, "child_start": 10.0, "baseline": 3.0, "baseline_score": 1.0, "preflight": 4.0,
              "graph_capture": 2.0, "steps": 20.0, "eval": 6.0, "score": 2.0}  # fmt: skip
    # 10 steps and 30 questions measured; 300 steps and 300 questions asked, three runs, baseline once.
    fixed = 1.0 + 10.0 + 4.0 + 2.0
    expected = 3 * (fixed + 2.0 * 300 + (8.0 / 30) * 300) + (4.0 / 30) * 300
    got = projected_wall_s(phases, steps_done=10, steps=300, questions_done=30, questions=300, runs=3)
    assert got == pytest.approx(expected)
    cached = projected_wall_s(phases, steps_done=10, steps=300, questions_done=30, questions=300, runs=3,
                              baseline_cached=True)  # fmt: skip
    assert got - cached == pytest.approx(40.0)
    with pytest.raises(ValueError, match="steps_done"):
        projected_wall_s(phases, steps_done=0, steps=300, questions_done=30, questions=300)
