"""Exp A "it learns": LoRA on SmolLM2 gains ≥ 20 points of exact match on every seed, and the seeds agree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.suite.catalogue import assert_claim
from harness.suite.plugin import RunFixture
from harness.suite.setups import BenchSetup

SETUP = "setups/exp_a.toml"

pytestmark = [pytest.mark.cpu_ok, pytest.mark.slow]


def test_gain_on_every_seed(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seed: int,
    record_property: Callable[[str, object], None],
) -> None:
    record = lorabench_run(SETUP, lorabench_seed)
    gains = assert_claim("exp_a", "gain on every seed", {"lora": [record]}, lorabench_setup)
    record_property("gain", gains[0])


def test_seed_spread(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
    record_property: Callable[[str, object], None],
) -> None:
    records = [lorabench_run(SETUP, seed) for seed in lorabench_seeds]
    spread = assert_claim("exp_a", "seed spread", {"lora": records}, lorabench_setup)
    record_property("seed_spread", spread)
