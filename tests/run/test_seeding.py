"""The run seeded once (harness/run/seeding.py): the seed recorded, and loading a model or scoring the
baseline leaving the seed's stream where it was, so the adapter's init is the same draw either way."""

from __future__ import annotations

import torch

from harness.results import Seeding
from harness.run.seeding import WHERE, rng_untouched, seed_run


def test_the_seed_is_said_for_the_record() -> None:
    assert seed_run(42) == Seeding(seed=42, generators=["torch"], where=WHERE)


def test_a_block_that_draws_leaves_the_runs_stream_untouched() -> None:
    seed_run(3407)
    first_draw = torch.rand(4)
    seed_run(3407)
    with rng_untouched("cpu"):
        torch.nn.Linear(64, 64)  # a random model's init draws from the generator
    assert torch.equal(torch.rand(4), first_draw)
    # Without it the same init moves the stream: the adapter's init would depend on the model's source.
    seed_run(3407)
    torch.nn.Linear(64, 64)
    assert not torch.equal(torch.rand(4), first_draw)
