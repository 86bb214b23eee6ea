"""Scoring beside training (harness/run/aside.py): a real second process, the same record as scoring in
the trainer, a worker that dies with its trainer, and the baseline's scores kept when training stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from harness.results import predictions_path
from harness.run.aside import scoring_aside
from harness.run.parent import RunOptions, run_setup
from tests.run.test_parent import tiny_setup


def test_a_worker_scores_in_another_process_and_none_scores_here() -> None:
    with scoring_aside("1") as aside:
        assert aside.in_worker
        assert aside.submit(os.getpid).result(timeout=60) != os.getpid()
    with scoring_aside("0") as aside:
        assert not aside.in_worker
        assert aside.submit(os.getpid).result() == os.getpid()


def test_auto_takes_a_worker_only_with_cores_to_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.run.aside.usable_cores", lambda: 2)
    with scoring_aside("auto") as aside:
        assert not aside.in_worker
    monkeypatch.setattr("harness.run.aside.usable_cores", lambda: 16)
    with scoring_aside("auto") as aside:
        assert aside.in_worker


def test_an_error_in_the_call_reaches_the_caller_either_way() -> None:
    for choice in ("0", "1"):
        with scoring_aside(choice) as aside, pytest.raises(ZeroDivisionError):
            aside.submit(divmod, 1, 0).result(timeout=60)


def test_the_worker_dies_with_a_sigkilled_trainer(tmp_path: Path) -> None:
    code = (
        "import os, sys, time\n"
        "from harness.run.aside import scoring_aside\n"
        "with scoring_aside('1') as aside:\n"
        "    print(aside.submit(os.getpid).result(timeout=60), flush=True)\n"
        "    time.sleep(120)\n"
    )
    trainer = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    try:
        worker = psutil.Process(int(trainer.stdout.readline()))  # type: ignore[union-attr]
        assert worker.is_running()
        trainer.send_signal(signal.SIGKILL)
        trainer.wait(10)
        worker.wait(timeout=10)  # raises TimeoutExpired if it outlives its trainer
    finally:
        trainer.kill()


def _record_numbers(record) -> dict:
    rows = (
        record.baseline.model_dump(exclude={"eval_s", "cached"}),
        record.trained.model_dump(exclude={"eval_s"}),
    )
    return json.loads(json.dumps(rows, sort_keys=True))


def test_scored_aside_or_here_the_record_says_the_same(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    numbers, predictions = {}, {}
    for choice, cpus in (("0", 2), ("1", 16)):  # the automatic rule: a worker where cores are spare
        monkeypatch.setattr("harness.run.aside.usable_cores", lambda cpus=cpus: cpus)
        record, path = run_setup(
            tiny_setup(tiny_model_dir, sql_rows_file, "recipe.steps=3"),
            RunOptions(results_dir=tmp_path / choice, isolate=False),
        )
        assert record.status == "ok", record.reason
        assert "baseline_score" in record.timings.phases
        numbers[choice] = _record_numbers(record)
        predictions[choice] = predictions_path(path).read_text()
    assert numbers["0"] == numbers["1"]
    assert predictions["0"] == predictions["1"]


def test_a_run_stopped_in_training_keeps_the_baselines_scores(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("harness.run.aside.usable_cores", lambda: 16)
    record, _ = run_setup(
        tiny_setup(tiny_model_dir, sql_rows_file, "recipe.lr=1e30"),
        RunOptions(results_dir=tmp_path, isolate=False),
    )
    assert record.status == "diverged"
    assert record.baseline is not None and record.baseline.n == 6
    assert record.trained is None


def test_the_sql_task_scores_the_baselines_answers_once(sql_rows_file: Path) -> None:
    from harness.config import DataConfig
    from harness.tasks.sql import task

    split = task.load_split(DataConfig(source=str(sql_rows_file), test_size=6))
    answers = [ex.answer for ex in split.test]
    base = ["SELECT 1"] * len(split.test)
    task._scored.cache_clear()
    task.score(base, split.test)
    task.score_with_rows(split.test, answers, base)
    info = task._scored.cache_info()
    assert (info.misses, info.hits) == (2, 1)  # base once, trained once; base again from memory
    assert task.score(answers, split.test)["exact_match"] == pytest.approx(100.0)
