"""Quantizable fraction: every parameter counted once, by kind; the 4-bit saving bounded by the linear share."""

from __future__ import annotations

from checkslib import load_model

from harness.checks import quantizable_fraction
from harness.checks.quantizable import NF4_BYTES
from harness.testing import build_tiny_model


def test_tied_head_counts_once_as_embedding(tiny):
    model, _ = tiny
    verdict = quantizable_fraction(model)
    params = verdict.evidence["params"]
    assert verdict.verdict == "pass"
    assert verdict.evidence["base_params"] == sum(p.numel() for p in model.parameters())
    assert params["embedding"] == model.config.vocab_size * model.config.hidden_size
    assert params["head"] == 0
    saving = params["linear"] * (2 - NF4_BYTES)
    assert abs(verdict.evidence["max_saving_bytes"] - saving) <= 1


def test_untied_head_stays_16_bit(smollm2_dir, tmp_path):
    model, _ = load_model(build_tiny_model(tmp_path / "untied", smollm2_dir, tie_word_embeddings=False))
    params = quantizable_fraction(model).evidence["params"]
    assert params["head"] == params["embedding"] == model.config.vocab_size * model.config.hidden_size


def test_smollm2_is_a_fifth_embeddings(smollm2):
    model, _ = smollm2
    verdict = quantizable_fraction(model)
    fractions = verdict.evidence["fractions"]
    assert 0.20 < fractions["embedding"] < 0.22  # 49152 × 576 of 134.5M
    assert "embeddings 21%" in verdict.detail
