"""`lorabench run` resumes like `lorabench bench` (issue #39 item 2): its checkpoints are saved under the
results folder, and the same command after a real SIGKILL continues from the last one and says so."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.config import load_setup
from harness.errors import UserError
from harness.results import load_record
from harness.run.supervisor import RunOptions, refuse_unused_checkpoints
from tests.run.faultlib import cli_args, cli_env, find_trainers, started_run

STEPS = 8


def _saved_steps(results: Path) -> list[int]:
    return sorted(
        int(p.parent.name.removeprefix("checkpoint-")) for p in results.glob(".checkpoints/**/lorabench.json")
    )


@pytest.mark.slow
def test_the_same_command_after_sigkill_resumes_from_the_last_checkpoint(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    args = [
        *cli_args(tiny_model_dir, sql_rows_file, results, steps=STEPS),
        "--set",
        "recipe.checkpoint_every=2",
    ]
    with started_run(tmp_path, args) as parent:
        deadline = time.monotonic() + 600
        while not _saved_steps(results) and parent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _saved_steps(results), (
            parent.communicate()[1][-2000:] if parent.poll() is not None else "no checkpoint"
        )
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=60)
    deadline = time.monotonic() + 120
    while find_trainers(tmp_path) and time.monotonic() < deadline:  # the trainer ends with its parent
        time.sleep(0.2)
    saved = max(_saved_steps(results))
    again = subprocess.run(
        args, cwd=tmp_path, env=cli_env(tmp_path), capture_output=True, text=True, timeout=900
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"lorabench: resuming from step {saved} of {STEPS}" in again.stderr
    record = load_record(next(results.rglob("seed-3407.json")))
    assert record.status == "ok", record.reason
    assert record.checks["resumed"].evidence["from_step"] == saved
    assert record.train is not None and len(record.train.loss) == STEPS
    assert not (results / ".checkpoints").exists()  # an ok record: the checkpoints are of no further use


def test_a_checkpoint_every_that_cannot_take_effect_is_refused() -> None:
    setup = load_setup(None, ["recipe.checkpoint_every=2"])
    with pytest.raises(UserError, match=r"recipe\.checkpoint_every = 2 cannot take effect: a timed run"):
        refuse_unused_checkpoints(setup, RunOptions(timed=True))
    refuse_unused_checkpoints(setup, RunOptions())  # untimed, one process: it takes effect
    refuse_unused_checkpoints(load_setup(None), RunOptions(timed=True))  # the default, not asked for: no word
