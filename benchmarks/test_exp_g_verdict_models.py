"""Exp G "verdict models": two base models fine-tuned into the same QC gate (task `verdict`, same
corpus, recipe and eval), compared on the output contract, the gate's judgment, time and size.

The claim each model must meet is the contract (a gate whose answers cannot be parsed blocks everything);
the head-to-head figures — false blocks, catches, tag match, abstentions, train time, parameters — go
to the report through `record_property`, with no winner asserted: 16 held-out situations decide little.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.results import RunRecord
from harness.suite.catalogue import assert_claim
from harness.suite.claims import label, mean, train_seconds
from harness.suite.plugin import RunFixture
from harness.suite.setups import BenchSetup

MODELS = {"a": "setups/verdict_smollm2_135m.toml", "b": "setups/verdict_smollm2_1.7b.toml"}
GATE_FIGURES = ("contract", "false_blocks", "catches", "tag_match", "abstentions", "judgment")

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def gate(record: RunRecord) -> dict[str, float | int | None]:
    if record.trained is None or record.trained.gate is None:
        raise AssertionError(f"{label(record)}: no verdict metrics in the record (status {record.status})")
    return record.trained.gate


def figures(records: list[RunRecord]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name in GATE_FIGURES:
        values = [v for v in (gate(r)[name] for r in records) if v is not None]
        out[name] = round(mean(values), 1) if values else None
    out["train_s"] = round(mean([train_seconds(r) for r in records]), 1)
    out["total_params"] = records[0].train.total_params if records[0].train else None
    return out


@pytest.mark.parametrize("model", sorted(MODELS))
def test_keeps_the_output_contract(
    model: str,
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seed: int,
) -> None:
    record = lorabench_run(MODELS[model], lorabench_seed)
    assert_claim("exp_g", f"output contract (model {model})", {"model": [record]}, lorabench_setup)


def test_head_to_head(
    lorabench_run: RunFixture,
    lorabench_seeds: tuple[int, ...],
    record_property: Callable[[str, object], None],
) -> None:
    runs = {model: [lorabench_run(path, seed) for seed in lorabench_seeds] for model, path in MODELS.items()}
    for model, records in runs.items():
        for name, value in figures(records).items():
            record_property(f"{model}_{name}", value)
    assert all(r.status == "ok" for records in runs.values() for r in records)
