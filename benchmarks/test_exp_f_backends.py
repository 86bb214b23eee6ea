"""Exp F "backends": Unsloth against transformers + PEFT + TRL — the same accuracy, faster."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.suite.catalogue import assert_claim
from harness.suite.plugin import RunFixture
from harness.suite.setups import BenchSetup

# The hf reference is Exp A itself (bf16 on a GPU): one set of runs serves A, B, C and F.
HF = "setups/exp_a.toml"
UNSLOTH = "setups/exp_f_unsloth.toml"

pytestmark = [pytest.mark.gpu, pytest.mark.timed, pytest.mark.slow]


def test_accuracy_equivalent(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
) -> None:
    # The runs this host may lack (and skip) first, before hours of the reference.
    unsloth = [lorabench_run(UNSLOTH, seed) for seed in lorabench_seeds]
    hf = [lorabench_run(HF, seed) for seed in lorabench_seeds]
    assert_claim("exp_f", "accuracy equivalent to hf", {"hf": hf, "unsloth": unsloth}, lorabench_setup)


def test_speedup(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
    record_property: Callable[[str, object], None],
) -> None:
    # The runs this host may lack (and skip) first, before hours of the reference.
    unsloth = [lorabench_run(UNSLOTH, seed) for seed in lorabench_seeds]
    hf = [lorabench_run(HF, seed) for seed in lorabench_seeds]
    speedup = assert_claim("exp_f", "speedup over hf", {"hf": hf, "unsloth": unsloth}, lorabench_setup)
    record_property("speedup", speedup)
