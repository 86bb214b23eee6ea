"""Backend `unsloth`: Unsloth's FastLanguageModel and its patched TRL trainer. Same signatures as `hf`.

Unsloth patches transformers, PEFT and TRL when imported, so the trainer child imports it before
anything else when a setup asks for this backend (`harness.run.child`). Models load by their exact name
(`use_exact_model_name=True`): otherwise Unsloth swaps a hub id for its own pre-quantized copy, and
the run would measure a different model than the setup names.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.backends.common import Model, StepObserver, Tokenizer, TrainOutcome
from harness.backends.hf import attach_adapter, run_sft
from harness.config import SetupConfig
from harness.errors import UserError
from harness.runtime import Runtime
from harness.tasks.registry import Example


def _fast_language_model() -> Any:
    try:
        from unsloth import FastLanguageModel
    except ImportError as exc:
        raise UserError(
            f"backend: 'unsloth' needs the unsloth package ({exc}); install a stack that has it "
            "(lockfiles/stacks.toml: rocm7.2-hf5.5, rocm7.2-hf5.17, cuda13) or use backend = 'hf'"
        ) from None
    return FastLanguageModel


def preload(setup: SetupConfig, runtime: Runtime) -> None:
    """Nothing ahead of the first phase: the trainer child imports unsloth before anything else already
    (it patches transformers, PEFT and TRL), and its first phase starts the GPU."""


def load(setup: SetupConfig, model_path: Path | str, runtime: Runtime) -> tuple[Model, Tokenizer]:
    if runtime.device != "cuda":
        raise UserError("backend: 'unsloth' runs on GPUs only (CUDA or ROCm); use backend = 'hf' on CPU")
    if setup.model.random_weights:
        raise UserError(
            "model.random_weights: the unsloth backend loads pretrained weights only; use backend = 'hf'"
        )
    fast = _fast_language_model()
    model, tokenizer = fast.from_pretrained(
        model_name=str(model_path),
        max_seq_length=setup.recipe.max_length,
        dtype=None if runtime.precision == "4bit" else runtime.dtype,
        load_in_4bit=runtime.precision == "4bit",
        use_exact_model_name=True,
        revision=setup.model.revision,
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    fast.for_inference(model)  # the baseline is scored before training
    return model, tokenizer


def train(
    model: Model,
    tokenizer: Tokenizer,
    examples: Sequence[Example],
    setup: SetupConfig,
    runtime: Runtime,
    observers: Sequence[StepObserver] = (),
    *,
    checkpoints: Path | None = None,
) -> TrainOutcome:
    fast = _fast_language_model()
    model = fast.get_peft_model(
        model,
        r=setup.lora.rank,
        lora_alpha=setup.lora.alpha,
        lora_dropout=setup.lora.dropout,
        target_modules=setup.lora.targets,
        bias="none",
        use_gradient_checkpointing="unsloth" if setup.recipe.gradient_checkpointing else False,
        # Unsloth asks for a seed of its own for the adapter's init: the run's one seed.
        random_state=setup.recipe.seed,
    )
    fast.for_training(model)
    outcome = run_sft(model, tokenizer, examples, setup, runtime, observers, checkpoints)
    fast.for_inference(outcome.model)
    return outcome


__all__ = [
    "attach_adapter",
    "load",
    "preload",
    "train",
]  # attach_adapter: hf's (eval.adapter scores with hf only)
