"""Preflight: the checks that run once, after LoRA wraps the model and before the first optimizer step.

Each check is isolated: an exception in one becomes that check's "error" verdict and the others
still run. None of them changes the weights, the RNG or the gradients the training starts from.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from harness.checks.accumulation import accumulation_parity
from harness.checks.cache import cache_parity
from harness.checks.mask import audit_mask
from harness.checks.quantizable import quantizable_fraction
from harness.config import SetupConfig
from harness.results import CheckVerdict
from harness.tasks.encoding import training_text
from harness.tasks.registry import Example

# Parity needs two micro-batches of different token counts, not the run's batch size: the bug it
# looks for (a forward ignoring num_items_in_batch) scales the loss by G whatever B is.
PARITY_BATCH = 2


def parity_shape(setup: SetupConfig) -> tuple[int, int]:
    """(batch, accumulation): the run's G when it accumulates, else G=2 — the check is cheap and a later
    `--set recipe.grad_accum=8` must not be the first time the loss path is exercised."""
    return min(setup.recipe.batch_size, PARITY_BATCH), max(setup.recipe.grad_accum, 2)


def _guarded(check: Callable[[], CheckVerdict]) -> CheckVerdict:
    started = time.perf_counter()
    try:
        verdict = check()
    except Exception as exc:
        tail = traceback.format_exc().strip().splitlines()[-6:]
        verdict = CheckVerdict("error", f"{type(exc).__name__}: {exc}", {"traceback_tail": tail})
    return verdict.model_copy(update={"seconds": round(time.perf_counter() - started, 2)})


def cache_tolerance(model: Any) -> float:
    """fp32 logits agree to ~1e-5; half precision does not: clean SmolLM2 in bf16 on an H200 measured
    0.206 (incremental decoding vs one full forward), which the fp32 bound of 0.05 called a bug. A layer
    blind to K/V moves the logits by far more than their spread, so 0.5 still catches it.
    A quantized base computes in half precision although PEFT keeps its norms and embeddings in fp32
    (prepare_model_for_kbit_training): 4-bit SmolLM2 measured 0.196 on the H200, so it is half too."""
    import torch

    quantized = any(
        getattr(model, flag, False) for flag in ("is_loaded_in_4bit", "is_loaded_in_8bit", "is_quantized")
    )
    half = any(p.dtype in (torch.bfloat16, torch.float16) for p in model.parameters())
    return 0.5 if quantized or half else 0.05


def run_preflight(
    model: Any, tokenizer: Any, examples: Sequence[Example], setup: SetupConfig, trainer: Any
) -> dict[str, CheckVerdict]:
    """Every preflight check on the run's own LoRA-wrapped model and trainer, before its first step."""
    batch, accum = parity_shape(setup)
    text = training_text(tokenizer, examples[0]) if examples else ""
    return {
        "mask_audit": _guarded(lambda: audit_mask(trainer, tokenizer, examples)),
        "accumulation_parity": _guarded(lambda: accumulation_parity(trainer, batch=batch, accum=accum)),
        "cache_parity": _guarded(lambda: cache_parity(model, tokenizer, text, tol=cache_tolerance(model))),
        "quantizable_fraction": _guarded(lambda: quantizable_fraction(model)),
    }
