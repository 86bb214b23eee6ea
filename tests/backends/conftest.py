"""These tests call a backend directly, without the recipe: each starts seeded as the recipe's top
seeds a run (harness/run/seeding.py), so its adapter init is the seed's whatever test ran before it."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _seeded_run() -> None:
    from harness.run.seeding import seed_run

    seed_run(3407)
