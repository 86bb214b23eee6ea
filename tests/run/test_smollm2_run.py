"""The real model, a few real steps: the loss falls and a valid record with predictions is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import load_setup
from harness.results import load_record, predictions_path
from harness.run.parent import RunOptions, run_setup


@pytest.mark.slow
def test_smollm2_learns_in_a_few_steps(smollm2_dir: Path, shared_sample: Path, tmp_path: Path) -> None:
    setup = load_setup(None, [
        "model.source=smollm2-135m", f"data.source={shared_sample}", "recipe.steps=12", "recipe.batch_size=4",
        "recipe.warmup_steps=0", "checks.smoke.steps=12", "checks.preflight=false", "eval.limit=8",
        "eval.baseline=false",
    ])  # fmt: skip
    record, path = run_setup(setup, RunOptions(results_dir=tmp_path))
    assert record.status == "ok", record.reason
    assert load_record(path) == record
    losses = record.train.loss
    assert len(losses) == 12
    assert 0.3 < losses[0] < 5, "a pretrained model starts in the smoke band"
    assert sum(losses[-3:]) < sum(losses[:3]), f"loss did not fall: {losses}"
    assert record.checks["smoke"].verdict == "pass"
    assert record.trained.n == 8
    assert len(predictions_path(path).read_text().splitlines()) == 8
