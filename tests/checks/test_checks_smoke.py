"""Smoke over real training steps of the tiny model with a band for a random-init model (ln 49152 ≈ 10.8)."""

from __future__ import annotations

import checks_bugs
from checkslib import small_setup

from harness.backends import hf
from harness.checks import SmokeObserver
from harness.config import SmokeConfig

RANDOM_INIT_BAND = SmokeConfig(first_loss_min=9.0, first_loss_max=12.5, steps=10)


def test_clean_tiny_run_passes_with_a_configured_band(tiny, examples, runtime):
    model, tokenizer = tiny
    smoke = SmokeObserver(RANDOM_INIT_BAND)
    outcome = hf.train(model, tokenizer, examples, small_setup(steps=10, lr=2e-2), runtime, [smoke])
    verdict = smoke.final_verdict()
    assert verdict.verdict == "pass", verdict
    assert outcome.stopped_reason is None and len(outcome.losses) == 10


def test_first_loss_near_100_stops_at_the_first_step(tiny, examples, runtime):
    # Final-norm weights scaled by a conversion bug: logits ×85, first loss ~100 instead of ~10.8.
    model, tokenizer = tiny
    checks_bugs.scale_final_norm(model, 85.0)
    smoke = SmokeObserver(RANDOM_INIT_BAND)
    outcome = hf.train(model, tokenizer, examples, small_setup(steps=10), runtime, [smoke])
    assert len(outcome.losses) == 1 and 70 < outcome.losses[0] < 130
    assert smoke.final_verdict().verdict == "fail"
    assert outcome.stopped_reason is not None and "outside [9.0, 12.5]" in outcome.stopped_reason
    assert smoke.status == "failed"


def test_loss_that_does_not_fall_fails(tiny, examples, runtime):
    model, tokenizer = tiny
    smoke = SmokeObserver(RANDOM_INIT_BAND)
    hf.train(model, tokenizer, examples, small_setup(steps=10, lr=1e-9), runtime, [smoke])
    verdict = smoke.final_verdict()
    assert verdict.verdict == "fail" and "did not fall" in verdict.detail
