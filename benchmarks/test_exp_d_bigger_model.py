"""Exp D "bigger model": a ~13× larger model fits the VRAM budget, scores higher, at a bounded time cost."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.suite.catalogue import assert_claim
from harness.suite.claims import mean, peak_vram
from harness.suite.plugin import RunFixture
from harness.suite.runner import SuiteSettings
from harness.suite.setups import BenchSetup

SMALL = "setups/exp_d_small.toml"
BIG = "setups/exp_d_big.toml"

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _two_models(lorabench_settings: SuiteSettings) -> None:
    if lorabench_settings.model:
        pytest.skip("Exp D compares two models; --lorabench-model would make them the same model")


def test_fits_the_vram_budget(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seed: int,
    record_property: Callable[[str, object], None],
) -> None:
    big = [lorabench_run(BIG, lorabench_seed)]
    record_property("peak_vram_bytes", assert_claim("exp_d", "fits the VRAM budget", {"big": big}, lorabench_setup))


def test_against_the_small_model(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
    record_property: Callable[[str, object], None],
) -> None:
    small = [lorabench_run(SMALL, seed) for seed in lorabench_seeds]
    big = [lorabench_run(BIG, seed) for seed in lorabench_seeds]
    runs = {"small": small, "big": big}
    record_property(
        "memory_ratio", round(mean([peak_vram(r) for r in big]) / mean([peak_vram(r) for r in small]), 2)
    )
    record_property("time_ratio", assert_claim("exp_d", "time against the small model", runs, lorabench_setup))
    gain = assert_claim("exp_d", "exact match against the small model", runs, lorabench_setup)
    record_property("exact_match_gain_over_small", gain)
