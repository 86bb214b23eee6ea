"""Accumulation parity: batch B·G in one step and batch B over G accumulated micro-steps must agree.

Runs the trainer's own loss path (`get_batch_samples` counts the supervised tokens of all G micro-batches
as `num_items_in_batch`, `training_step` runs forward and backward) but stops before the optimizer: the
weights do not change, gradients are dropped. The story's bug: a forward that ignores
`num_items_in_batch` while the Trainer believes it honours it: loss and gradients G× too large.
TRL 1.14's SFTTrainer (`loss_type="chunked_nll"`) replaces the model's forward by its own loss that
honours it; with `loss_type="nll"` the model's loss runs and the bug can bite. The check tests whichever
path the trainer it is given really uses.
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict
from typing import Any

import torch

from harness.checks.isolation import model_device, no_dropout, untouched
from harness.results import CheckVerdict


def _grad_norm(model: Any) -> float:
    norms = [p.grad.detach().float().norm() for p in model.parameters() if p.grad is not None]
    return float(torch.stack(norms).norm()) if norms else 0.0


# Any values: model inputs as transformers' collators make them: tensors and flags by name.
def _accumulated(trainer: Any, batches: list[dict[str, Any]]) -> tuple[float, float]:
    """Loss (as the Trainer logs it: the sum of micro-step losses) and gradient norm after len(batches) micro-steps."""
    model = trainer.model
    for param in model.parameters():
        param.grad = None
    trainer.current_gradient_accumulation_steps = len(batches)
    samples, num_items = trainer.get_batch_samples(iter(batches), len(batches), model_device(model))
    loss = sum(float(trainer.training_step(model, batch, num_items)) for batch in samples)
    return loss, _grad_norm(model)


def _probe(trainer: Any) -> Any:
    """A shallow copy whose metric buffers are its own: the run's first logged token accuracy and token
    count must not include the check's forwards."""
    probe = copy.copy(trainer)
    if isinstance(getattr(trainer, "_metrics", None), dict):
        probe._metrics = {mode: defaultdict(list) for mode in trainer._metrics}
    return probe


def _factor_name(ratio: float, accum: int) -> str:
    if abs(ratio - accum) / accum < 0.1:
        return f"loss not divided over accumulation (×{accum}, G={accum})"
    if abs(ratio - 1 / accum) * accum < 0.1:
        return f"loss divided by accumulation twice (×1/{accum}, G={accum})"
    return f"accumulated gradient is ×{ratio:.3g} the single-batch one"


def accumulation_parity(trainer: Any, *, batch: int, accum: int, tol: float = 0.02) -> CheckVerdict:
    """`trainer` is the run's own: its loss path and the first rows of its prepared dataset are used.
    `tol` is relative: fp32 agrees to ~1e-6, bf16 to ~1e-2; a ×G bug is off by ≥ 100%."""
    if accum < 2:
        return CheckVerdict("skipped", f"accumulation {accum}: nothing to compare")
    needed = batch * accum
    dataset = trainer.train_dataset
    if len(dataset) < needed:
        return CheckVerdict(
            "skipped",
            f"needs {needed} examples (batch {batch} × accumulation {accum}), the trainer has {len(dataset)}",
        )
    model = trainer.model
    with untouched(model), no_dropout(model):
        trainer = _probe(trainer)
        rows = [dataset[i] for i in range(needed)]
        collate = trainer.data_collator
        single_loss, single_norm = _accumulated(trainer, [collate(rows)])
        micro = [collate(rows[i : i + batch]) for i in range(0, needed, batch)]
        accum_loss, accum_norm = _accumulated(trainer, micro)
    evidence = {
        "batch": batch,
        "accum": accum,
        "tol": tol,
        "loss_single": round(single_loss, 6),
        "loss_accumulated": round(accum_loss, 6),
        "grad_norm_single": round(single_norm, 6),
        "grad_norm_accumulated": round(accum_norm, 6),
        "model_accepts_loss_kwargs": bool(getattr(trainer, "model_accepts_loss_kwargs", False)),
        "loss_type": getattr(trainer.args, "loss_type", None),
    }
    if not (math.isfinite(single_loss) and math.isfinite(accum_loss)) or single_norm == 0:
        return CheckVerdict(
            "fail", f"loss or gradient not usable (loss {single_loss}, grad norm {single_norm})", evidence
        )
    loss_ratio, norm_ratio = accum_loss / single_loss, accum_norm / single_norm
    evidence |= {"loss_ratio": round(loss_ratio, 6), "grad_norm_ratio": round(norm_ratio, 6)}
    if abs(norm_ratio - 1) > tol or abs(loss_ratio - 1) > tol:
        return CheckVerdict(
            "fail",
            f"{_factor_name(norm_ratio, accum)}: grad norm {accum_norm:.4g} vs {single_norm:.4g}, "
            f"loss {accum_loss:.4g} vs {single_loss:.4g}",
            evidence,
        )
    return CheckVerdict(
        "pass",
        f"batch {needed}×1 and {batch}×{accum}: loss and grad norm agree "
        f"(ratios {loss_ratio:.4f}, {norm_ratio:.4f})",
        evidence,
    )
