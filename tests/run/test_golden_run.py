"""A tiny real run gives the same losses and byte-identical predictions as the committed golden run.

The golden files were recorded by the code of dd28fb4, before the run plan redesign (issue #37), one pair
per CPU the project's machines had (`golden/<host>/`, the host as the record names it: the 2-core Intel Xeon
with AMX trains in bf16, the 2-core AMD EPYC in fp32, and their losses differ in the second decimal); a
refactor that changes the math or the decoding shows up here. Losses are compared to 1e-6 (the same CPU,
the same torch), predictions byte for byte. On a CPU without its pair the test is skipped, saying how to
record one: `LORABENCH_UPDATE_GOLDEN=1` writes this host's pair; record it with dd28fb4's harness (this test
file beside it), then review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.config import load_setup
from harness.results import predictions_path
from harness.run.parent import RunOptions, run_setup

GOLDEN = Path(__file__).parent / "golden"
LOSSES = "smollm2-3-steps.losses.json"
PREDICTIONS = "smollm2-3-steps.predictions.jsonl"
SETUP = [
    "model.source=smollm2-135m",
    "recipe.steps=3",
    "recipe.batch_size=2",
    "recipe.warmup_steps=0",
    "checks.smoke.enabled=false",
    "checks.preflight=false",
    "eval.limit=4",
    "eval.baseline=false",
]


@pytest.mark.slow
def test_a_tiny_run_matches_the_golden_run(smollm2_dir: Path, shared_sample: Path, tmp_path: Path) -> None:
    setup = load_setup(None, [*SETUP, f"data.source={shared_sample}"])
    record, path = run_setup(setup, RunOptions(results_dir=tmp_path))
    assert record.status == "ok", record.reason
    predictions = predictions_path(path).read_bytes()
    golden = GOLDEN / record.host
    if os.environ.get("LORABENCH_UPDATE_GOLDEN"):
        golden.mkdir(exist_ok=True)
        (golden / LOSSES).write_text(json.dumps(record.train.loss, indent=1) + "\n")
        (golden / PREDICTIONS).write_bytes(predictions)
    if not golden.is_dir():
        pytest.skip(
            f"no golden run for this CPU ({record.host}): record one with LORABENCH_UPDATE_GOLDEN=1 (see the docstring)"
        )
    assert record.train.loss == pytest.approx(json.loads((golden / LOSSES).read_text()), rel=1e-6, abs=1e-7)
    assert predictions == (golden / PREDICTIONS).read_bytes()
