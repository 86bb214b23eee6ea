"""Divergence: training that blew up, caught at the step it happened and named with its evidence.

Four detectors, each a way a run with lr = 1e30 was once recorded `ok` (all-NaN adapter, empty answers):
- a NaN/inf loss or gradient norm at any step. The loss must be the raw one: transformers'
  `logging_nan_inf_filter` logs a NaN step as the mean of the steps since the last log (0.0 when every
  step is logged), so the backend turns the filter off;
- a loss spike: a step's loss above `spike_ratio` × the lowest mean of `spike_window` consecutive steps
  so far. Averaged because single batches differ a lot late in training: in healthy committed records one
  step reached 10.9× the lowest single step but at most 4.53× the lowest 10-step mean; a run at lr = 1e4
  went 1.03 → 34.5 (33×) at step 2, which the smoke's averaged "falling" test had passed;
- NaN/inf in any LoRA weight after training (the last update can break the weights after its loss);
- a trained model that answers nothing (every prediction empty) where the untrained one did (or no baseline).

The step detector reads only what the backend already logs every step: it adds no device sync.
Non-finite numbers go into the evidence as text ("nan", "inf"): JSON has no NaN, pydantic would write null.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from statistics import fmean

import torch
from torch import nn

from harness.checks.adapters import MAX_NAMED, lora_parameters
from harness.config import DivergenceConfig
from harness.json_types import JsonObject
from harness.results import CheckVerdict

RECENT_STEPS = 10  # losses shown in the evidence before the step that diverged


def as_evidence(value: float | None) -> float | str | None:
    """A number as the record can hold it: finite floats rounded, NaN/inf as text."""
    if value is None:
        return None
    return round(value, 6) if math.isfinite(value) else str(value)


class DivergenceObserver:
    """A StepObserver over every step of training: returns a stop reason at the first step that diverged."""

    status = "diverged"
    REASON_PREFIX = "divergence: "

    def __init__(self, config: DivergenceConfig) -> None:
        self.config = config
        self.steps = 0
        self.recent: deque[float] = deque(maxlen=RECENT_STEPS)
        self.window: deque[float] = deque(maxlen=config.spike_window)
        self.running_min = math.inf  # lowest mean of `spike_window` consecutive steps before this one
        self.max_ratio: tuple[float, int] | None = None  # (highest loss / running minimum, its step)
        self.max_grad_norm: float | None = None
        self.verdict: CheckVerdict | None = None

    def on_step(self, step: int, loss: float, grad_norm: float | None = None) -> str | None:
        if self.verdict is not None:
            return None
        self.steps += 1
        evidence: JsonObject = {
            "step": step,
            "loss": as_evidence(loss),
            "grad_norm": as_evidence(grad_norm),
            "recent_losses": [as_evidence(x) for x in self.recent],
        }
        if not math.isfinite(loss):
            return self._fail(f"loss is {loss} at step {step}", evidence)
        if grad_norm is not None and not math.isfinite(grad_norm):
            return self._fail(f"gradient norm is {grad_norm} at step {step} (loss {loss:.4g})", evidence)
        if grad_norm is not None:
            self.max_grad_norm = max(grad_norm, self.max_grad_norm or 0.0)
        # A running minimum of zero (a memorised batch) gives no scale to judge a spike against.
        if 0 < self.running_min < math.inf:
            ratio = loss / self.running_min
            if self.max_ratio is None or ratio > self.max_ratio[0]:
                self.max_ratio = (ratio, step)
            if ratio > self.config.spike_ratio:
                evidence |= {
                    "running_min": as_evidence(self.running_min),
                    "ratio": round(ratio, 2),
                    "spike_ratio": self.config.spike_ratio,
                    "spike_window": self.config.spike_window,
                }
                return self._fail(
                    f"loss spiked to {loss:.4g} at step {step}, {ratio:.1f}× the running minimum "
                    f"{self.running_min:.4g} (bound checks.divergence.spike_ratio = {self.config.spike_ratio:g})",
                    evidence,
                )
        self.recent.append(loss)
        self.window.append(loss)
        self.running_min = min(self.running_min, fmean(self.window))
        return None

    def _fail(self, detail: str, evidence: JsonObject) -> str:
        self.verdict = CheckVerdict("fail", detail, evidence)
        return self.REASON_PREFIX + detail

    def final_verdict(self) -> CheckVerdict:
        if self.verdict is not None:
            return self.verdict
        if self.steps == 0:
            return CheckVerdict("skipped", "no training step was logged")
        evidence: JsonObject = {
            "steps": self.steps,
            "spike_ratio": self.config.spike_ratio,
            "spike_window": self.config.spike_window,
            "max_ratio": round(self.max_ratio[0], 3) if self.max_ratio else None,
            "max_ratio_step": self.max_ratio[1] if self.max_ratio else None,
            "max_grad_norm": as_evidence(self.max_grad_norm),
        }
        highest = (
            f"; highest loss {self.max_ratio[0]:.2f}× the running minimum (step {self.max_ratio[1]})"
            if self.max_ratio
            else ""
        )
        return CheckVerdict(
            "pass",
            f"loss and gradient norm finite over {self.steps} steps{highest}, bound {self.config.spike_ratio:g}×",
            evidence,
        )


def check_adapter_weights(model: nn.Module) -> CheckVerdict:
    """Every LoRA weight finite after training. One host sync, once, after the last step."""
    params = lora_parameters(model)
    if not params:
        return CheckVerdict("skipped", "no LoRA modules found in the model")
    names = [f"{name}.lora_{part}" for name in params for part in ("A", "B")]
    tensors = [t.detach() for pair in params.values() for t in pair]
    finite = torch.stack([t.isfinite().all().to(tensors[0].device) for t in tensors]).tolist()
    bad = [name for name, ok in zip(names, finite, strict=True) if not ok]
    evidence: JsonObject = {
        "n_weights": len(names),
        "n_non_finite": len(bad),
        "non_finite": bad[:MAX_NAMED],
    }
    if not bad:
        return CheckVerdict("pass", f"all {len(names)} LoRA weight matrices finite", evidence)
    shown = ", ".join(bad[:3]) + (f" … (+{len(bad) - 3})" if len(bad) > 3 else "")
    return CheckVerdict(
        "fail",
        f"{len(bad)} of {len(names)} LoRA weight matrices hold NaN/inf after training ({shown})",
        evidence,
    )


def check_answers(answers: Sequence[str], base_answers: Sequence[str] | None = None) -> CheckVerdict:
    """A trained model that gives no answer at all has broken, whatever the task — unless the untrained
    model (this run's baseline, when it has one) answered nothing either: then training broke nothing
    (a random-init test model says nothing from the start)."""
    empty = sum(1 for a in answers if not a.strip())
    evidence: JsonObject = {"n": len(answers), "n_empty": empty}
    if base_answers is not None:
        evidence["n_empty_before_training"] = sum(1 for a in base_answers if not a.strip())
    if not answers:
        return CheckVerdict("skipped", "no questions were answered", evidence)
    if empty < len(answers):
        return CheckVerdict("pass", f"{len(answers) - empty} of {len(answers)} answers non-empty", evidence)
    if base_answers and evidence["n_empty_before_training"] == len(base_answers):
        return CheckVerdict(
            "skipped",
            f"every one of the {len(answers)} answers is empty, as was every answer of the untrained "
            "model: not a sign that training diverged",
            evidence,
        )
    before = (
        ""
        if base_answers is None
        else f" (the untrained model answered {len(base_answers) - evidence['n_empty_before_training']})"
    )
    return CheckVerdict("fail", f"every one of the {len(answers)} answers is empty{before}", evidence)
