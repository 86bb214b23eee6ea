"""Accumulation parity through the trainer's own loss path: clean passes, a forward ignoring num_items_in_batch fails ×G."""

from __future__ import annotations

from typing import Any

import checks_bugs
from checkslib import load_model, make_examples, small_setup

from harness.backends.hf import build_trainer
from harness.checks import accumulation_parity
from harness.runtime import Runtime


def run_trainer(
    model: Any, tokenizer: Any, examples: list, runtime: Runtime, *, batch: int, accum: int
) -> Any:
    """The trainer a run builds (backends.hf), for `batch` × `accum` micro-steps: what preflight hands the check."""
    return build_trainer(model, tokenizer, examples[: batch * accum],
                         small_setup(batch_size=batch, grad_accum=accum, steps=1), runtime, [])  # fmt: skip


def test_clean_tiny_agrees(tiny, examples, runtime):
    model, tokenizer = tiny
    verdict = accumulation_parity(
        run_trainer(model, tokenizer, examples, runtime, batch=2, accum=2), batch=2, accum=2
    )
    assert verdict.verdict == "pass", verdict
    assert abs(verdict.evidence["grad_norm_ratio"] - 1) < 1e-4
    assert all(p.grad is None for p in model.parameters())


def test_clean_tiny_agrees_on_the_model_loss_path(tiny, examples):
    model, tokenizer = tiny
    trainer = checks_bugs.nll_trainer(model, tokenizer, examples, batch=1, accum=4)
    verdict = accumulation_parity(trainer, batch=1, accum=4)
    assert verdict.verdict == "pass", verdict
    assert verdict.evidence["loss_type"] == "nll"


def test_forward_ignoring_num_items_is_caught_as_times_g(tiny_model_dir, examples):
    model, tokenizer = load_model(tiny_model_dir, checks_bugs.IgnoresNumItems)
    trainer = checks_bugs.nll_trainer(model, tokenizer, examples, batch=1, accum=4)
    verdict = accumulation_parity(trainer, batch=1, accum=4)
    assert verdict.verdict == "fail"
    assert "loss not divided over accumulation (×4" in verdict.detail
    assert 3.5 < verdict.evidence["loss_ratio"] < 4.5
    assert not trainer._metrics["train"]  # the run's trainer logs nothing of the check


def test_trl_chunked_loss_does_not_run_the_model_loss(tiny_model_dir, examples, runtime):
    # Audit finding: TRL 1.14's default loss_type="chunked_nll" replaces the model's forward when labels are
    # given, so the same buggy model trains correctly through backends.hf.build_trainer.
    model, tokenizer = load_model(tiny_model_dir, checks_bugs.IgnoresNumItems)
    verdict = accumulation_parity(
        run_trainer(model, tokenizer, examples, runtime, batch=1, accum=4), batch=1, accum=4
    )
    assert verdict.verdict == "pass", verdict
    assert verdict.evidence["loss_type"] == "chunked_nll"


def test_too_few_examples_is_skipped(tiny, runtime):
    model, tokenizer = tiny
    trainer = build_trainer(model, tokenizer, make_examples(3), small_setup(), runtime, [])
    verdict = accumulation_parity(trainer, batch=2, accum=2)
    assert verdict.verdict == "skipped"
    assert "the trainer has 3" in verdict.detail


def test_clean_smollm2_agrees(smollm2, runtime):
    # Two short rows, batch 1 × G 2: three forward/backward passes of SmolLM2 in all, with gradients only
    # for the last decoder layer so backward stops there (the loss path is the same; CPU time is not).
    model, tokenizer = smollm2
    trainable = set(model.model.layers[-1].parameters())
    saved = {p: p.requires_grad for p in model.parameters()}
    try:
        for param in model.parameters():
            param.requires_grad_(param in trainable)
        trainer = run_trainer(model, tokenizer, make_examples(2), runtime, batch=1, accum=2)
        verdict = accumulation_parity(trainer, batch=1, accum=2)
    finally:
        for param, flag in saved.items():
            param.requires_grad_(flag)
    assert verdict.verdict == "pass", verdict
    assert all(p.grad is None for p in model.parameters())
