"""Exp E "stacks": the same setup on two software stacks — same accuracy, comparable time, and what differs.

One pytest session runs one stack (its image); the other stack's records must already be in the
results folder for this host (`--lorabench-other-stack NAME`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.results import RunRecord
from harness.suite.catalogue import assert_claim
from harness.suite.plugin import RecordFixture, RunFixture
from harness.suite.runner import SuiteSettings
from harness.suite.setups import BenchSetup

SETUP = "setups/exp_e.toml"

pytestmark = [pytest.mark.gpu, pytest.mark.timed, pytest.mark.slow]


@pytest.fixture
def both_stacks(
    lorabench_run: RunFixture,
    lorabench_record: RecordFixture,
    lorabench_settings: SuiteSettings,
    lorabench_seeds: tuple[int, ...],
) -> tuple[list[RunRecord], list[RunRecord]]:
    other = lorabench_settings.other_stack
    if not other:
        pytest.skip("Exp E compares two stacks: give --lorabench-other-stack NAME (its records on this host)")
    this = [lorabench_run(SETUP, seed) for seed in lorabench_seeds]
    return [lorabench_record(SETUP, seed, stack=other) for seed in lorabench_seeds], this


def test_accuracy_equivalent(
    both_stacks: tuple[list[RunRecord], list[RunRecord]], lorabench_setup: Callable[[str | Path], BenchSetup]
) -> None:
    other, this = both_stacks
    assert_claim("exp_e", "accuracy equivalent across stacks", {"other": other, "this": this}, lorabench_setup)


def test_time_ratio(
    both_stacks: tuple[list[RunRecord], list[RunRecord]],
    lorabench_setup: Callable[[str | Path], BenchSetup],
    record_property: Callable[[str, object], None],
) -> None:
    other, this = both_stacks
    runs = {"other": other, "this": this}
    record_property("time_ratio", assert_claim("exp_e", "time ratio across stacks", runs, lorabench_setup))


def test_package_diff(
    both_stacks: tuple[list[RunRecord], list[RunRecord]],
    lorabench_setup: Callable[[str | Path], BenchSetup],
    record_property: Callable[[str, object], None],
) -> None:
    other, this = both_stacks
    diff = assert_claim("exp_e", "the stacks differ", {"other": other, "this": this}, lorabench_setup)
    record_property("package_diff", diff)
