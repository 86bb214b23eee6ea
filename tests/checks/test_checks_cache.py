"""Cache parity: cached and uncached logits agree on clean models; a layer reading K/V only from the cache fails."""

from __future__ import annotations

import checks_bugs
import pytest
import torch

from harness.checks import cache_parity

TEXT = 'SELECT name FROM table_1 WHERE year = "1990"'


def test_clean_tiny_agrees(tiny):
    model, tokenizer = tiny
    verdict = cache_parity(model, tokenizer, TEXT)
    assert verdict.verdict == "pass", verdict
    assert verdict.evidence["argmax_agreement_incremental"] > 0.999


def test_layer_reading_kv_only_from_cache_is_caught(tiny):
    model, tokenizer = tiny
    checks_bugs.break_cache_sharing(model, layer=1)
    verdict = cache_parity(model, tokenizer, TEXT)
    assert verdict.verdict == "fail"
    assert "layers read K/V only from the cache" in verdict.detail
    assert verdict.evidence["distances"]["full_cache_vs_no_cache"] > 0.5


def test_train_mode_that_changes_the_forward_is_caught(tiny):
    model, tokenizer = tiny

    class TrainOnlyShift(torch.nn.Module):
        # A norm that behaves differently in train mode, the way a stray BatchNorm would.
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, hidden: torch.Tensor) -> torch.Tensor:
            out = self.inner(hidden)
            return out * 3.0 if self.training else out

    model.model.norm = TrainOnlyShift(model.model.norm)
    verdict = cache_parity(model, tokenizer, TEXT)
    assert verdict.verdict == "fail"
    assert "train mode changes the forward" in verdict.detail
    assert "K/V" not in verdict.detail


def test_clean_smollm2_agrees(smollm2):
    model, tokenizer = smollm2
    ids = tokenizer(TEXT, add_special_tokens=False).input_ids[:8]
    verdict = cache_parity(model, tokenizer, ids)
    assert verdict.verdict == "pass", verdict
    assert not model.training


def test_tolerance_follows_the_compute_precision(tiny):
    from harness.checks.preflight import cache_tolerance

    model, _ = tiny
    assert cache_tolerance(model) == pytest.approx(0.05)
    # A 4-bit base keeps norms and embeddings in fp32 (PEFT's k-bit preparation) but computes in bf16:
    # on the H200 its clean cache distance was 0.196, so it gets the half-precision bound.
    model.is_loaded_in_4bit = True
    try:
        assert cache_tolerance(model) == pytest.approx(0.5)
    finally:
        del model.is_loaded_in_4bit
    assert cache_tolerance(model.to(torch.bfloat16)) == pytest.approx(0.5)


def test_a_long_sample_steps_through_its_last_positions_only_and_still_catches(tiny):
    from harness.checks.cache import MAX_INCREMENTAL_STEPS

    model, tokenizer = tiny
    long_text = " ".join([TEXT] * 8)
    n = len(tokenizer(long_text, add_special_tokens=False).input_ids)
    assert n > 2 * MAX_INCREMENTAL_STEPS
    clean = cache_parity(model, tokenizer, long_text)
    assert clean.verdict == "pass", clean
    assert clean.evidence["prefix"] == n - MAX_INCREMENTAL_STEPS
    checks_bugs.break_cache_sharing(model, layer=1)
    broken = cache_parity(model, tokenizer, long_text)
    assert broken.verdict == "fail" and broken.evidence["distances"]["incremental_cache_vs_no_cache"] > 0.5
