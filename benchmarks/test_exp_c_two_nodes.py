"""Exp C as two nodes: each GPU on its own host (nodes = 2, gpus = 1), the same claims as two cards against
one card: speed per steady step on the 4B random-weight shape, SmolLM2 accuracy, memory per card.

Both nodes run the same setups: here the suite on the lead node (the host of $LORABENCH_RDZV_ENDPOINT),
and on the other node `lorabench run SETUP --seed N` for the same seeds in the same order (or this suite
too), with $LORABENCH_RDZV_ENDPOINT set alike. Without it the cases skip: a lone node would wait for its
partner until the rendezvous timed out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.suite.catalogue import assert_claim
from harness.suite.plugin import RunFixture
from harness.suite.setups import BenchSetup

ONE_CARD = "setups/exp_a.toml"
TWO_NODES = "setups/exp_c_two_nodes.toml"
SPEED_ONE = "setups/exp_c_speed_one_card.toml"
SPEED_NODES = "setups/exp_c_speed_two_nodes.toml"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.timed,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (os.environ.get("LORABENCH_RDZV_ENDPOINT") or os.environ.get("PET_RDZV_ENDPOINT")),
        reason="two nodes meet at $LORABENCH_RDZV_ENDPOINT (README: Across two hosts); not set",
    ),
]


def test_speedup_over_one_card(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
    record_property: Callable[[str, object], None],
) -> None:
    one = [lorabench_run(SPEED_ONE, seed) for seed in lorabench_seeds]
    two = [lorabench_run(SPEED_NODES, seed) for seed in lorabench_seeds]
    record_property("speedup", assert_claim("exp_c_nodes", "speedup over one card", {"one": one, "two": two}, lorabench_setup))


def test_accuracy_equivalent_to_one_card(
    lorabench_run: RunFixture,
    lorabench_setup: Callable[[str | Path], BenchSetup],
    lorabench_seeds: tuple[int, ...],
) -> None:
    one = [lorabench_run(ONE_CARD, seed) for seed in lorabench_seeds]
    two = [lorabench_run(TWO_NODES, seed) for seed in lorabench_seeds]
    assert_claim("exp_c_nodes", "accuracy equivalent to one card", {"one": one, "two": two}, lorabench_setup)


def test_memory_per_card(
    lorabench_run: RunFixture, lorabench_setup: Callable[[str | Path], BenchSetup], lorabench_seed: int
) -> None:
    one = lorabench_run(ONE_CARD, lorabench_seed)
    two = lorabench_run(TWO_NODES, lorabench_seed)  # the record's peak is the lead's card; every rank's is in ranks
    assert_claim("exp_c_nodes", "memory per card", {"one": [one], "two": [two]}, lorabench_setup)
