"""The run's randomness, fixed once: `seed_run` at the top of the trainer's recipe, and nowhere else.

What the seed decides: a `model.random_weights` model's initial weights and the LoRA adapter's initial
A matrices (the Trainer, built later, seeds its own data order and dropout from the same
`recipe.seed`: transformers' own `set_seed`). Loading a model and scoring the baseline run inside
`rng_untouched`, so the adapter's init is the same draw from the seed whether the model came from a
hub, a folder or a config, and whether the baseline was scored or taken from its cache. Every process
of a DDP run seeds the same. `harness.testing` seeds its own tiny models; that is a test's model, not a
run's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator

from harness.results import Seeding

WHERE = "harness.run.recipe.run_phases, before the data and the model"


def seed_run(seed: int) -> Seeding:
    """Seed torch's generators (the CPU's and every GPU's) with the run's seed; what the record says of it."""
    import torch

    torch.manual_seed(seed)
    return Seeding(seed=seed, generators=["torch"], where=WHERE)


@contextlib.contextmanager
def rng_untouched(device: str) -> Generator[None]:
    """The block's draws (a random model's init) leave the run's generators where they were; on a GPU,
    this process's device's generator too."""
    import torch

    devices = [torch.cuda.current_device()] if device == "cuda" and torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        yield
