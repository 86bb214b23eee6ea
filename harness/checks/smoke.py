"""Smoke: the first steps' loss must start in a plausible band and fall, else stop before the long phase.

In the story a 10-step look caught four silent bugs: first loss 102 (wrong labels), loss stuck at 14,
gradients 8× too large, adapters that never learned. The band's default suits a pretrained model; a
random-init model starts near ln(vocab size) and needs its own band.

20 steps, not 10: under 10 warm-up steps healthy H200 runs' loss rose over steps 1–10 (0.96 → 1.01),
so a 10-step "falling" test stopped good runs. The means let one spike pass as a fall; spikes and NaN
at any step are the divergence check's (divergence.py). A NaN here still ends the smoke as `diverged`.
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
