"""Quantizable fraction: every parameter counted once, by kind; the 4-bit saving bounded by the linear share."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_model

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


def test_4bit_saving_predicted_from_the_linear_layers(tiny_model_dir: Path) -> None:
    from harness.checks.quantizable import NF4_BYTES, predict_4bit_saving

    prediction = predict_4bit_saving(tiny_model_dir)
    # Tiny Llama: hidden 64, kv 2 of 4 heads (32), MLP 128, 2 layers; the tied head is not quantized.
    per_layer = 64 * 64 * 2 + 64 * 32 * 2 + 64 * 128 * 3
    assert prediction.quantizable_params == 2 * per_layer
    assert 0 < prediction.fraction < 1
    assert prediction.saved_bytes == pytest.approx(2 * per_layer * (2 - NF4_BYTES))


def test_prediction_and_preflight_check_count_alike(tiny_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    from harness.checks.quantizable import predict_4bit_saving

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    check = quantizable_fraction(model)
    prediction = predict_4bit_saving(tiny_model_dir)
    assert check.evidence["max_saving_bytes"] == int(prediction.saved_bytes)
    assert check.evidence["base_params"] == prediction.total_params
