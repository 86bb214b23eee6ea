"""Which module runs a setup's `backend = "hf" | "unsloth"`, and what every backend module offers: the
four functions of `Backend` (a shared signature, no class tree). Each is imported only when asked for, in
the trainer child: backends import torch, which the parent never loads (`tests/run/test_parent.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness.backends.common import Model, StepObserver, Tokenizer, TrainOutcome
    from harness.config import SetupConfig
    from harness.runtime import Runtime
    from harness.tasks.registry import Example


class Backend(Protocol):
    """What the recipe (`harness.run.recipe`) asks of a backend, in the order it asks."""

    def preload(self, setup: SetupConfig, runtime: Runtime) -> None:
        """The heavy imports and the GPU runtime's start, before the first phase (the child's start-up)."""

    def load(self, setup: SetupConfig, model_path: Path | str, runtime: Runtime) -> tuple[Model, Tokenizer]:
        """The base model, in the runtime's precision on its device, and its tokenizer (a pad token set)."""

    def train(
        self,
        model: Model,
        tokenizer: Tokenizer,
        examples: Sequence[Example],
        setup: SetupConfig,
        runtime: Runtime,
        observers: Sequence[StepObserver] = (),
        *,
        checkpoints: Path | None = None,
    ) -> TrainOutcome:
        """LoRA onto `model`, then the recipe's steps, each reported to `observers` (a reason stops it);
        resumable checkpoints saved in and resumed from `checkpoints` (None: none)."""

    def attach_adapter(self, model: Model, adapter_dir: Path) -> Model:
        """A trained adapter put onto this base, for scoring only (`eval.adapter`)."""


def _hf() -> Backend:
    from harness.backends import hf

    return hf


def _unsloth() -> Backend:
    from harness.backends import unsloth

    return unsloth


BACKENDS: dict[str, Callable[[], Backend]] = {"hf": _hf, "unsloth": _unsloth}


def backend_for(name: str) -> Backend:
    """The backend module for `backend = name` (the setup's Literal has already refused any other)."""
    return BACKENDS[name]()
