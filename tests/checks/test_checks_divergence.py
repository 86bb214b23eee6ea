"""Divergence: each detector over a real (tiny) training run with the bug injected, and its clean case;
the spike bound against the loss curves of the committed healthy records."""

from __future__ import annotations

import json
import math
from pathlib import Path

import checks_bugs
import pytest
import torch
from checkslib import small_setup

from harness.backends import hf
from harness.checks import DivergenceObserver, SmokeObserver, check_adapter_weights, check_answers
from harness.checks.adapters import lora_parameters
from harness.config import DivergenceConfig, SmokeConfig, load_setup
from harness.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
DEFAULT = DivergenceConfig()
# The spike of issue #18 (SmolLM2, lr = 1e4): 1.03 → 34.5 → 10.8, flat after.
LR_1E4_CURVE = [1.03, 34.5, *[10.8] * 18]


def healthy_curves() -> dict[str, list[float]]:
    """The training losses of the committed records that finished ok (no copy: read where they are)."""
    curves = {}
    for path in sorted((REPO / "reports" / "results").rglob("seed-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        losses = (record.get("train") or {}).get("loss")
        if record["status"] == "ok" and losses and ".prev-" not in path.name:
            curves[str(path.relative_to(REPO))] = losses
    return curves


def observe(
    losses: list[float], grad_norms: list[float | None] | None = None
) -> tuple[DivergenceObserver, str | None]:
    observer = DivergenceObserver(DEFAULT)
    for step, loss in enumerate(losses, start=1):
        reason = observer.on_step(step, loss, grad_norms[step - 1] if grad_norms else None)
        if reason:
            return observer, reason
    return observer, None


def test_healthy_committed_runs_stay_well_under_the_default_bound():
    curves = healthy_curves()
    assert len(curves) >= 10, "the committed healthy records are the evidence for the default"
    for name, losses in curves.items():
        observer, reason = observe(losses)
        assert reason is None, f"{name}: {reason}"
        verdict = observer.final_verdict()
        assert verdict.verdict == "pass" and verdict.evidence["steps"] == len(losses)
        # Half the bound: a margin for noisier batches than the committed runs had.
        assert verdict.evidence["max_ratio"] < DEFAULT.spike_ratio / 2, (name, verdict.evidence)


def test_the_issue_spike_is_caught_at_its_step():
    observer, reason = observe(LR_1E4_CURVE)
    assert reason is not None and reason.startswith("divergence: loss spiked to 34.5 at step 2, 33.5×")
    assert observer.verdict.evidence | {"recent_losses": None} == observer.verdict.evidence | {
        "step": 2, "loss": 34.5, "running_min": 1.03, "ratio": 33.5, "spike_ratio": 10.0, "recent_losses": None,
    }  # fmt: skip
    assert observer.verdict.evidence["recent_losses"] == [1.03]


def test_one_easy_batch_does_not_set_the_scale():
    # Late in a healthy run one batch is easy (0.05) and the next hard (0.6): 12× the single step before
    # it, but not of the smoothed minimum.
    losses = [1.2, 0.9, 0.6, 0.4, 0.3, 0.25, 0.2, 0.2, 0.22, 0.2, 0.05, 0.6, 0.2]
    assert observe(losses)[1] is None
    assert observe([0.0, 0.0, 0.5])[1] is None, "a zero minimum gives no scale (and no division by zero)"


@pytest.mark.parametrize(
    ("loss", "grad_norm", "detail"),
    [
        (float("nan"), float("nan"), "loss is nan at step 3"),
        (float("inf"), 1.0, "loss is inf at step 3"),
        (1.1, float("nan"), "gradient norm is nan at step 3 (loss 1.1)"),
        (1.1, float("inf"), "gradient norm is inf at step 3 (loss 1.1)"),
    ],
)
def test_non_finite_numbers_are_caught_at_any_step(loss, grad_norm, detail):
    observer, reason = observe([1.2, 1.15, loss, 1.0], [0.5, 0.5, grad_norm, 0.5])
    assert reason == f"divergence: {detail}"
    assert observer.verdict.evidence["step"] == 3
    # JSON has no NaN: the evidence holds the text.
    assert str(loss) in (observer.verdict.evidence["loss"], str(observer.verdict.evidence["loss"]))


def test_a_late_nan_is_caught_after_the_smoke_has_passed():
    curve = [1.2 - 0.01 * i for i in range(100)] + [float("nan")]
    smoke = SmokeObserver(SmokeConfig())
    _, reason = observe(curve)
    for step, loss in enumerate(curve[:20], start=1):
        smoke.on_step(step, loss)
    assert smoke.final_verdict().verdict == "pass"
    assert reason == "divergence: loss is nan at step 101"


def test_the_spike_the_smoke_averages_away_is_caught():
    # The smoke compares means of thirds: the spike lifts the first third's mean (13.1 against 10.8).
    smoke = SmokeObserver(SmokeConfig())
    for step, loss in enumerate(LR_1E4_CURVE, start=1):
        smoke.on_step(step, loss)
    assert smoke.final_verdict().verdict == "pass"
    assert observe(LR_1E4_CURVE)[0].verdict.evidence["step"] == 2


def test_spike_bound_is_validated():
    with pytest.raises(ConfigError, match=r"checks\.divergence\.spike_ratio: input should be greater than 1"):
        load_setup(None, ["checks.divergence.spike_ratio=1"])
    with pytest.raises(
        ConfigError, match=r"checks\.divergence\.spike_window: input should be greater than or equal to 1"
    ):
        load_setup(None, ["checks.divergence.spike_window=0"])
    assert load_setup(None, ["checks.divergence.spike_ratio=4"]).checks.divergence.spike_ratio == 4


# Real training of the tiny model (random init, loss near ln 49152 ≈ 10.8).


def test_huge_learning_rate_gives_a_raw_nan_loss_at_step_two(tiny, examples, runtime):
    model, tokenizer = tiny
    divergence = DivergenceObserver(DEFAULT)
    smoke = SmokeObserver(SmokeConfig(first_loss_min=9.0, first_loss_max=12.5, steps=5))
    outcome = hf.train(
        model, tokenizer, examples, small_setup(steps=6, lr=1e30), runtime, [divergence, smoke]
    )
    assert outcome.stopped_reason == "divergence: loss is nan at step 2"
    # The step belongs to the check that stopped the run: one failure, one failed verdict.
    assert smoke.final_verdict().verdict == "skipped"
    # The raw loss: transformers' NaN filter would have logged 0.0 here.
    assert len(outcome.losses) == 2 and math.isnan(outcome.losses[1])
    assert divergence.verdict.evidence["grad_norm"] == "nan"
    weights = check_adapter_weights(outcome.model)
    assert weights.verdict == "fail" and weights.evidence["n_non_finite"] == weights.evidence["n_weights"]


def test_an_injected_spike_stops_training_at_its_step(tiny, examples, runtime):
    model, tokenizer = tiny
    spike = checks_bugs.LossSpike(model, factor=3000.0, after=3)
    divergence = DivergenceObserver(DEFAULT)
    outcome = hf.train(
        model, tokenizer, examples, small_setup(steps=8, lr=2e-2), runtime, [spike, divergence]
    )
    assert outcome.stopped_reason is not None and outcome.stopped_reason.startswith(
        "divergence: loss spiked to "
    )
    assert divergence.verdict.evidence["step"] == 4 and len(outcome.losses) == 4
    assert divergence.verdict.evidence["ratio"] > DEFAULT.spike_ratio
    assert all(9 < x < 12 for x in outcome.losses[:3]), outcome.losses


def test_a_nan_gradient_under_a_finite_loss_is_caught(tiny, examples, runtime):
    model, tokenizer = tiny
    setup = small_setup(steps=6, lr=2e-2)
    wrapped = hf.wrap_lora(model, setup)
    poison = checks_bugs.NanGradient(wrapped, after=2)
    divergence = DivergenceObserver(DEFAULT)
    outcome = hf.run_sft(wrapped, tokenizer, examples, setup, runtime, [poison, divergence])
    assert outcome.stopped_reason is not None
    assert outcome.stopped_reason.startswith("divergence: gradient norm is nan at step 3 (loss 10.")
    assert math.isfinite(outcome.losses[2])
    # Clipping spread the NaN over every gradient, the update over every weight.
    assert check_adapter_weights(outcome.model).verdict == "fail"


def test_clean_training_passes_every_divergence_check(tiny, examples, runtime):
    model, tokenizer = tiny
    divergence = DivergenceObserver(DEFAULT)
    outcome = hf.train(model, tokenizer, examples, small_setup(steps=8, lr=2e-2), runtime, [divergence])
    assert outcome.stopped_reason is None and len(outcome.losses) == 8
    verdict = divergence.final_verdict()
    assert verdict.verdict == "pass" and verdict.evidence["max_ratio"] < 1.5, verdict
    assert verdict.evidence["max_grad_norm"] > 0
    weights = check_adapter_weights(outcome.model)
    assert weights.verdict == "pass" and weights.evidence["n_weights"] == 2 * len(
        lora_parameters(outcome.model)
    )


def test_one_nan_adapter_weight_is_named(tiny, examples, runtime):
    model, tokenizer = tiny
    outcome = hf.train(model, tokenizer, examples, small_setup(steps=2), runtime)
    name, (_, lora_b) = list(lora_parameters(outcome.model).items())[5]
    with torch.no_grad():
        lora_b[1, 2] = float("inf")
    verdict = check_adapter_weights(outcome.model)
    assert verdict.verdict == "fail"
    assert verdict.evidence["non_finite"] == [f"{name}.lora_B"]
    assert verdict.detail.startswith("1 of ")


def test_all_empty_answers_fail_unless_the_untrained_model_was_mute_too():
    assert check_answers(["", " ", "\t"]).verdict == "fail", "no baseline: all empty is enough"
    spoke = check_answers(["", "", ""], ["SELECT 1", "", "SELECT 2"])
    assert (
        spoke.verdict == "fail"
        and spoke.detail == "every one of the 3 answers is empty (the untrained model answered 2)"
    )
    mute = check_answers(["", "", ""], ["", "", ""])
    assert mute.verdict == "skipped" and mute.evidence == {"n": 3, "n_empty": 3, "n_empty_before_training": 3}
    assert check_answers(["", "SELECT 1", ""]).evidence == {"n": 3, "n_empty": 2}
    assert check_answers(["", "SELECT 1", ""], ["", "", ""]).verdict == "pass"
    assert check_answers([]).verdict == "skipped"


def test_smoke_alone_still_calls_a_nan_diverged():
    # With checks.divergence off the smoke is the only look at the first steps.
    smoke = SmokeObserver(SmokeConfig())
    assert smoke.on_step(1, 1.1) is None
    assert smoke.on_step(2, float("nan")) == "smoke: loss is nan at step 2"
    assert smoke.status == "diverged"
