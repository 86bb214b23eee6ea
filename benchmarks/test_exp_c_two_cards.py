"""Exp C "two cards": DDP on two GPUs trains faster than one card, to the same accuracy and memory per card.

Speed is measured on a 4B Qwen3-shaped model with random weights, batches big enough that the cards' arithmetic
sets the step (benchmarks/setups/exp_c_speed_one_card.toml says why); accuracy and memory per card
on SmolLM2 with real weights, the batch split so the effective batch stays the story's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.suite.catalogue import assert_claim
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
    whole_runs = sum(r.train.train_s for r in one) / sum(r.train.train_s for r in two)  # type: ignore[union-attr]
    record_property("speedup_whole_run", round(whole_runs, 2))
    record_property("speedup", assert_claim("exp_c", "speedup over one card", {"one": one, "two": two}, lorabench_setup))


def test_accuracy_equivalent_to_one_card(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
) -> None:
    one = [lorabench_run(ONE_CARD, seed) for seed in lorabench_seeds]
    two = [lorabench_run(TWO_CARDS, seed) for seed in lorabench_seeds]
    assert_claim("exp_c", "accuracy equivalent to one card", {"one": one, "two": two}, lorabench_setup)


def test_memory_per_card(
    lorabench_run: RunFixture, lorabench_setup: Callable[[str | Path], BenchSetup], lorabench_seed: int
) -> None:
    one = lorabench_run(ONE_CARD, lorabench_seed)
    two = lorabench_run(TWO_CARDS, lorabench_seed)  # the record's peak is per card (rank 0)
    assert_claim("exp_c", "memory per card", {"one": [one], "two": [two]}, lorabench_setup)


def test_staggered_model_loading(
    lorabench_run: RunFixture, lorabench_setup: Callable[[str | Path], BenchSetup], lorabench_seed: int
) -> None:
    # The story's fix for two ranks loading the model at once (host RAM spike): rank 1 waits for rank 0.
    two = lorabench_run(TWO_CARDS, lorabench_seed)
    assert_claim("exp_c", "ranks load one after another", {"two": [two]}, lorabench_setup)
