"""Dead adapters over real training steps: LoRA on a module that never runs is named, with the fix."""

from __future__ import annotations

import re

import checks_bugs
from checkslib import small_setup

from harness.backends.hf import build_trainer, wrap_lora
from harness.checks import DeadAdapterTracker
from harness.checks.adapters import suggest_targets


def _train(model, tokenizer, examples, runtime, targets: list[str]):
    setup = small_setup(steps=3, lr=1e-2)
    setup = setup.model_copy(update={"lora": setup.lora.model_copy(update={"targets": targets})})
    model = wrap_lora(model, setup)
    tracker = DeadAdapterTracker(model)
    build_trainer(model, tokenizer, examples, setup, runtime, [tracker.callback()]).train()
    return tracker.verdict(model)


def test_all_adapters_learn_on_clean_tiny(tiny, examples, runtime):
    model, tokenizer = tiny
    verdict = _train(model, tokenizer, examples, runtime, ["q_proj", "v_proj", "down_proj"])
    assert verdict.verdict == "pass", verdict
    assert verdict.evidence == {**verdict.evidence, "n_modules": 6, "n_dead": 0, "steps_observed": 3}


def test_lora_on_a_module_that_never_runs_is_named(tiny, examples, runtime):
    model, tokenizer = tiny
    checks_bugs.add_unused_linear(model)
    verdict = _train(model, tokenizer, examples, runtime, ["q_proj", "v_proj", "unused"])
    assert verdict.verdict == "fail"
    assert verdict.evidence["dead"] == ["model.layers.0.unused", "model.layers.1.unused"]
    assert verdict.evidence["never_got_grad"] == verdict.evidence["dead"]
    assert verdict.evidence["suggested_targets"] == ["q_proj", "v_proj"]
    assert "2 of 6 LoRA modules never learned" in verdict.detail


def test_without_grad_observation_movement_decides(tiny, runtime):
    # A tracker whose callback was never installed still tells, from B not moving.
    model, _ = tiny
    model = wrap_lora(model, small_setup())
    verdict = DeadAdapterTracker(model).verdict(model)
    assert verdict.verdict == "fail"
    assert verdict.evidence["steps_observed"] == 0 and verdict.evidence["n_dead"] == 14


def test_partly_dead_suffix_gets_a_regex_that_keeps_the_live_ones():
    dead = ["model.layers.3.mlp.up_proj"]
    alive = ["model.layers.0.mlp.up_proj", "model.layers.3.self_attn.q_proj"]
    pattern = suggest_targets(dead, alive)
    assert isinstance(pattern, str)
    assert all(re.fullmatch(pattern, name) for name in alive)
    assert not any(re.fullmatch(pattern, name) for name in dead)
    assert not re.fullmatch(pattern, "model.layers.0.mlp.gate_proj")


def test_a_zero_gradient_among_present_ones_is_not_counted(tiny):
    # Every B has a gradient tensor (the fused path), one of them all zeros: that module got none.
    import torch

    model, _ = tiny
    model = wrap_lora(model, small_setup())
    tracker = DeadAdapterTracker(model)
    for name, (_, b) in tracker.params.items():
        b.grad = torch.zeros_like(b) if name == tracker.names[3] else torch.ones_like(b)
    tracker.observe_grads()
    assert tracker.got_grad.tolist() == [i != 3 for i in range(len(tracker.names))]
    tracker.params[tracker.names[3]][1].grad = None  # the per-module path, once any gradient is missing
    tracker.params[tracker.names[5]][1].grad.zero_()
    tracker.observe_grads()
    assert tracker.got_grad.tolist() == [i != 3 for i in range(len(tracker.names))]
    assert tracker.observations == 2
