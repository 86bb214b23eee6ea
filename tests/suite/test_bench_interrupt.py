"""Ctrl-C in `lorabench bench` (what `make bench` runs), for real: SIGINT to the whole foreground process
group, as a terminal sends it. The run in progress is recorded as killed with its progress and its last
checkpoint is kept; the next plain `lorabench bench` resumes that seed from the checkpoint, and the record
it ends with equals, loss for loss and byte for byte in the adapter, that of a run never stopped.
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
        '"event": "step"' in line
        for events in results.glob(".work/*/events.jsonl")
        for line in events.read_text().splitlines()
    )


def adapter_bytes(record_file: Path) -> bytes:
    return (record_file.with_name("seed-3407.adapter") / "adapter_model.safetensors").read_bytes()


def test_ctrl_c_records_the_run_as_killed_and_the_next_bench_resumes_it(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    steps, every = 24, 4
    bench_dir(steps=steps, min_gain=-100.0)
    suite_args = [a for a in bench_args if not a.startswith("--lorabench-results")]
    suite_args += [f"--lorabench-set=recipe.checkpoint_every={every}", "--lorabench-progress=lines"]
    command = [sys.executable, "-m", "harness.cli", "bench", "--no-report", "test_claims.py", *suite_args]
    results = pytester.path / "results"

    bench = subprocess.Popen(command, cwd=pytester.path, start_new_session=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)  # fmt: skip
    deadline = time.monotonic() + 300
    while steps_journaled(results) < 2 * every + 2 and bench.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(bench.pid, signal.SIGINT)  # the terminal's Ctrl-C: bench and pytest, not the trainer's session
    output, _ = bench.communicate(timeout=180)
    assert bench.returncode == 130, output[-3000:]
    assert "lorabench bench: interrupted" in output
    record_file = next(results.rglob("exp_t/tiny/seed-3407.json"))
    killed = load_record(record_file)
    assert killed.status == "killed" and "SIGINT" in (killed.reason or "")
    assert killed.train is not None and 2 * every <= killed.train.steps_done < steps
    (kept,) = results.glob(".checkpoints/*/*/exp_t/tiny/s3407-*/checkpoint-*/lorabench.json")
    saved_at = int(kept.parent.name.removeprefix("checkpoint-"))
    assert saved_at >= 2 * every and saved_at % every == 0

    again = subprocess.run(command, cwd=pytester.path, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "re-ran  exp_t/tiny seed 3407: ok" in again.stdout
    said = again.stdout + again.stderr
    assert (
        f"its record is killed, running it again: training; resuming from step {saved_at} (results/" in said
    )
    resumed = load_record(record_file)
    assert resumed.status == "ok" and resumed.train is not None and resumed.train.steps_done == steps
    assert resumed.checks["resumed"].evidence == {"from_step": saved_at}
    assert [load_record(p).run_id for p in record_file.parent.glob("seed-3407.prev-*.json")] == [
        killed.run_id
    ]
    assert not (results / ".checkpoints").exists()  # the seed ended ok: its checkpoints are gone

    # The control: the same seed never stopped. Same losses, same adapter bytes, same answers.
    straight = subprocess.run([*command[:4], "--results", "straight", *command[4:]], cwd=pytester.path,
                              capture_output=True, text=True, timeout=900)  # fmt: skip
    assert straight.returncode == 0, straight.stdout[-3000:]
    straight_file = next((pytester.path / "straight").rglob("exp_t/tiny/seed-3407.json"))
    unstopped = load_record(straight_file)
    assert "resumed" not in unstopped.checks
    assert resumed.train.loss == unstopped.train.loss
    assert killed.train.loss == unstopped.train.loss[: killed.train.steps_done]
    assert adapter_bytes(record_file) == adapter_bytes(straight_file)
    assert resumed.trained == unstopped.trained.model_copy(update={"eval_s": resumed.trained.eval_s})
    assert resumed.train.tokens == unstopped.train.tokens
