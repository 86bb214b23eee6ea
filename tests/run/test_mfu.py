"""MFU: the FLOP count's known cases (6N for full fine-tuning, 4N + 2N_t for LoRA) and peak look-up."""

from __future__ import annotations

import pytest

from harness.run import mfu


def test_full_finetune_is_six_n_per_token() -> None:
    assert mfu.training_flops(1_000, 1_000, 10, gradient_checkpointing=False) == 60_000


def test_lora_counts_weight_grads_of_trainables_only() -> None:
    # SmolLM2-135M with a ~4.9M-parameter adapter on 1,000 tokens.
    n, t = 134_515_008, 4_884_480
    assert mfu.training_flops(n, t, 1_000, gradient_checkpointing=False) == 1_000 * (4 * n + 2 * t)


def test_checkpointing_is_hardware_work_not_model_work() -> None:
    model = mfu.training_flops(100, 10, 5, gradient_checkpointing=True)
    assert model == mfu.training_flops(100, 10, 5, gradient_checkpointing=False)
    assert mfu.hardware_flops(100, 10, 5, gradient_checkpointing=True) == model + 2 * 100 * 5


def test_mfu_against_peak() -> None:
    assert mfu.mfu(98.9e12, "NVIDIA H200", 1) == pytest.approx(0.1)
    assert mfu.mfu(2 * 98.9e12, "NVIDIA H200", 2) == pytest.approx(0.1)
    assert mfu.mfu(12.28e12, "AMD Radeon RX 7900 XTX", 1) == pytest.approx(0.1)
    assert mfu.mfu(1e12, "Some Unknown GPU", 1) is None


def test_every_peak_has_a_source() -> None:
    for peak in mfu.PEAKS:
        assert peak.source.startswith("https://")
        assert peak.verified or peak.note.startswith("unverified")


def test_bad_counts_raise() -> None:
    with pytest.raises(ValueError, match="trainable"):
        mfu.training_flops(10, 20, 1, gradient_checkpointing=False)
