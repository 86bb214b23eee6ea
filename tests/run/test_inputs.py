"""Checks that need the tokenizer run as soon as it exists: before the baseline and before training."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import load_setup
from harness.errors import UserError
from harness.run.parent import RunOptions, run_setup


def test_a_test_question_longer_than_max_length_stops_the_run_before_the_baseline(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    # 40 tokens fit no chat-templated SQL question of the fixture (each is ~60): certainly too long in
    # tokens, yet short in characters, so only the trainer's tokenizer can tell.
    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", f"data.source={sql_rows_file}", "data.test_size=6", "recipe.steps=2",
        "recipe.max_length=40", "checks.smoke.enabled=false",
    ])  # fmt: skip
    # Issue 29: an input error like any other (exit 2 from the CLI), before any weight loads: no record.
    with pytest.raises(UserError, match=r"tokens, over recipe\.max_length = 40"):
        run_setup(setup, RunOptions(results_dir=tmp_path, isolate=False))
    assert not list(tmp_path.rglob("seed-*.json")) and not (tmp_path / ".work").exists()
