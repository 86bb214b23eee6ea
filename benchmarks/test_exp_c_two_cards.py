"""Exp C "two cards": DDP on two GPUs trains faster than one card, to the same accuracy and memory per card.

Speed is measured on a 4B Qwen3-shaped model with random weights, batches big enough that the cards' arithmetic
sets the step (benchmarks/setups/exp_c_speed_one_card.toml says why); accuracy and memory per card
on SmolLM2 with real weights, the batch split so the effective batch stays the story's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.suite.claims import assert_equivalent, assert_loads_staggered, assert_speedup, peak_vram
from harness.suite.plugin import RunFixture
from harness.suite.setups import BenchSetup

# The one-card reference is Exp A itself (bf16 on a GPU).
ONE_CARD = "setups/exp_a.toml"
TWO_CARDS = "setups/exp_c_two_cards.toml"
SPEED_ONE = "setups/exp_c_speed_one_card.toml"
SPEED_TWO = "setups/exp_c_speed_two_cards.toml"

pytestmark = [
    pytest.mark.multi_gpu(n=2),
    pytest.mark.timed,
    pytest.mark.slow,
]


def test_speedup_over_one_card(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
    record_property: Callable[[str, object], None],
) -> None:
    one = [lorabench_run(SPEED_ONE, seed) for seed in lorabench_seeds]
    two = [lorabench_run(SPEED_TWO, seed) for seed in lorabench_seeds]
    bench = lorabench_setup(SPEED_ONE)
    target = bench.claim("min_speedup")
    per = bench.claim("speedup_per", "run")
    whole_runs = sum(r.train.train_s for r in one) / sum(r.train.train_s for r in two)  # type: ignore[union-attr]
    record_property("speedup_whole_run", round(whole_runs, 2))
    record_property("speedup", assert_speedup(one, two, min_ratio=target, per=per))


def test_accuracy_equivalent_to_one_card(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
) -> None:
    one = [lorabench_run(ONE_CARD, seed) for seed in lorabench_seeds]
    two = [lorabench_run(TWO_CARDS, seed) for seed in lorabench_seeds]
    assert_equivalent(one, two, margin=lorabench_setup(TWO_CARDS).claim("equivalence_margin"))


def test_memory_per_card(
    lorabench_run: RunFixture, lorabench_setup: Callable[[str | Path], BenchSetup], lorabench_seed: int
) -> None:
    one = peak_vram(lorabench_run(ONE_CARD, lorabench_seed))
    two = peak_vram(lorabench_run(TWO_CARDS, lorabench_seed))  # the record's peak is per card (rank 0)
    bound = lorabench_setup(TWO_CARDS).claim("max_vram_per_card_ratio")
    assert two <= one * bound, f"peak VRAM per card {two / one:.2f}× one card's, bound {bound:g}×"


def test_staggered_model_loading(lorabench_run: RunFixture, lorabench_seed: int) -> None:
    # The story's fix for two ranks loading the model at once (host RAM spike): rank 1 waits for rank 0.
    assert_loads_staggered(lorabench_run(TWO_CARDS, lorabench_seed))
