"""Exp A's trainer as `lorabench run` builds it, for benchmark scripts that step it themselves: the setup
(with `$LORABENCH_DATA` and the script's own settings), the resolved runtime, the real model wrapped in LoRA,
and the SFT trainer with the script's callbacks. Step it inside `hf.training_spans(model, trainer, setup,
compile_mode(setup, runtime))` to time the run's path."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import settings
from harness.backends import hf
from harness.config import SetupConfig, load_setup
from harness.models import resolve_model
from harness.runtime import Runtime, resolve_setup_runtime
from harness.tasks.sql.data import load_split

SETUP = Path("benchmarks/setups/exp_a.toml")


def exp_a_trainer(
    sets: Sequence[str], callbacks: Sequence[Any] = ()
) -> tuple[SetupConfig, Runtime, Any, Any]:
    """(setup, runtime, LoRA-wrapped model, trainer) for Exp A with `sets` (FIELD=VALUE) applied."""
    setup = load_setup(SETUP, [*settings.data_source_sets(), *sets])
    runtime = resolve_setup_runtime(setup)
    model, tokenizer = hf.load(setup, resolve_model(setup.model).path, runtime)
    model = hf.wrap_lora(model, setup)
    trainer = hf.build_trainer(
        model, tokenizer, load_split(setup.data).train, setup, runtime, list(callbacks)
    )
    return setup, runtime, model, trainer
