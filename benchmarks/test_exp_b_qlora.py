"""Exp B "QLoRA": 4-bit base, bf16 adapter — no NaN, the accuracy of bf16 LoRA, and the memory it promised."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.results import RunRecord
from harness.suite.catalogue import assert_claim
from harness.suite.claims import predicted_4bit_saving
from harness.suite.plugin import RunFixture
from harness.suite.setups import BenchSetup

# The bf16 reference is Exp A itself (precision auto = bf16 on a GPU): one set of runs serves both.
BF16 = "setups/exp_a.toml"
QLORA = "setups/exp_b_4bit.toml"
QLORA_ON_BF16 = "setups/exp_b_4bit_adapter_on_bf16.toml"
NO_NAN = {BF16: "no NaN (bf16 reference)", QLORA: "no NaN (4-bit)"}

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


@pytest.mark.parametrize("setup_file", [BF16, QLORA])
def test_no_nan_in_training_or_generation(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    setup_file: str,
    lorabench_seed: int,
) -> None:
    assert_claim("exp_b", NO_NAN[setup_file], {"runs": [lorabench_run(setup_file, lorabench_seed)]}, lorabench_setup)


def test_accuracy_equivalent_to_bf16(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
    record_property: Callable[[str, object], None],
) -> None:
    # The runs this host may lack (and skip) first, before hours of the reference.
    qlora = [lorabench_run(QLORA, seed) for seed in lorabench_seeds]
    bf16 = [lorabench_run(BF16, seed) for seed in lorabench_seeds]
    diff = assert_claim("exp_b", "accuracy equivalent to bf16", {"bf16": bf16, "4bit": qlora}, lorabench_setup)
    record_property("exact_match_difference", diff)


def test_memory_saved_as_predicted(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
    record_property: Callable[[str, object], None],
) -> None:
    # The runs this host may lack (and skip) first, before hours of the reference.
    qlora = [lorabench_run(QLORA, seed) for seed in lorabench_seeds]
    bf16 = [lorabench_run(BF16, seed) for seed in lorabench_seeds]
    # The prediction is the bf16 run's quantizable_fraction check, so a report can judge it from the record too.
    record_property("predicted_saving_bytes", predicted_4bit_saving(bf16[0]))
    share = assert_claim("exp_b", "memory saved as predicted", {"bf16": bf16, "4bit": qlora}, lorabench_setup)
    record_property("saving_share_of_prediction", share)


def test_adapter_scored_on_the_other_base_precision(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
    lorabench_record_file: Callable[[RunRecord], Path],
    record_property: Callable[[str, object], None],
) -> None:
    # The story: the 4-bit-trained adapter lost 2.8 points on the bf16 base. Each seed's Exp B adapter is
    # scored again on a bf16 base (nothing trains) and judged against its own 4-bit score.
    qlora = [lorabench_run(QLORA, seed) for seed in lorabench_seeds]
    moved = [
        lorabench_run(QLORA_ON_BF16, record.seed, {"eval.adapter": str(lorabench_record_file(record))})
        for record in qlora
    ]
    diff = assert_claim("exp_b", "adapter scored on a bf16 base", {"4bit": qlora, "on_bf16": moved}, lorabench_setup)
    record_property("exact_match_difference_on_bf16", diff)
