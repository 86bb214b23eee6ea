"""Smoke: the first steps' loss must start in a plausible band and fall, else stop before the long phase.

In the story a 10-step look caught four silent bugs: first loss 102 (wrong labels), loss stuck at 14,
gradients 8× too large, adapters that never learned. The band's default suits a pretrained model; a
random-init model starts near ln(vocab size) and needs its own band.

The look spans 20 steps by default, not 10: with the story's 10 warm-up steps and batch 8, the loss of
healthy runs rose over the first 10 steps on an H200 (seeds 3407 and 42: mean of steps 1–3 0.96, of
steps 8–10 1.01), so a 10-step "falling" test stopped good runs. By step 20 the rate is full and a
learning run has clearly fallen (CPU, seed 3407: 1.2 → 0.3 by step 26).

The means let one spike pass as a fall (lr = 1e4: 1.03 → 34.5 → 10.8, flat after: 13.1 against 10.8);
spikes and NaN at any step are the divergence check's (harness/checks/divergence.py), which stops such a
run at the spike. A NaN here still ends the smoke as `diverged` (when that check is off).
"""

from __future__ import annotations

import math
from statistics import fmean

from harness.config import SmokeConfig
from harness.results import CheckVerdict


class SmokeObserver:
    """A StepObserver: returns a stop reason at the first step that proves the run broken."""

    def __init__(self, config: SmokeConfig) -> None:
        self.config = config
        self.losses: list[float] = []
        self.verdict: CheckVerdict | None = None
        self.status = "failed"

    def _fail(self, detail: str, status: str = "failed") -> str:
        self.status = status
        self.verdict = CheckVerdict("fail", detail, {"losses": self.losses[: self.config.steps]})
        return f"smoke: {detail}"

    def on_step(self, step: int, loss: float, grad_norm: float | None = None) -> str | None:
        if self.verdict is not None:
            return None
        self.losses.append(loss)
        cfg = self.config
        if not math.isfinite(loss):
            return self._fail(f"loss is {loss} at step {step}", status="diverged")
        if len(self.losses) == 1 and not cfg.first_loss_min <= loss <= cfg.first_loss_max:
            return self._fail(
                f"first loss {loss:.3g} is outside [{cfg.first_loss_min}, {cfg.first_loss_max}] "
                "(labels or mask wrong? set checks.smoke.first_loss_min/max for random-init models)"
            )
        if len(self.losses) == cfg.steps:
            k = max(1, cfg.steps // 3)
            head, tail = fmean(self.losses[:k]), fmean(self.losses[-k:])
            if tail >= head:
                return self._fail(
                    f"loss did not fall over the first {cfg.steps} steps (mean of first {k} {head:.3g}, "
                    f"of last {k} {tail:.3g})"
                )
            self.verdict = CheckVerdict(
                "pass",
                f"first loss {self.losses[0]:.3g}, falling ({head:.3g} → {tail:.3g})",
                {"losses": self.losses},
            )
        return None

    def final_verdict(self) -> CheckVerdict:
        if self.verdict is not None:
            return self.verdict
        return CheckVerdict(
            "skipped",
            f"training stopped after {len(self.losses)} of {self.config.steps} smoke steps",
            {"losses": self.losses},
        )
