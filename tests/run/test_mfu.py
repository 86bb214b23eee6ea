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


def test_steady_rate_reads_only_the_window() -> None:
    # Two slow warm-up steps (a graph capture) then steady 1 s steps of 100 tokens: the whole run's mean
    # would say 60 tokens/s; the steady steps say 100.
    seconds = [5.0, 5.0, *[1.0] * 18]
    window = mfu.steady_window(len(seconds))
    assert window == (3, 20)  # the first tenth (2 of 20 steps) left out, as TrainStats.step_s is taken
    rate = mfu.steady_rate(seconds, [100] * 20, window)
    assert rate.step_s == pytest.approx(1.0) and rate.tokens_per_s == pytest.approx(100.0)
    whole = sum(100 for _ in seconds) / sum(seconds)
    assert whole == pytest.approx(71.43, abs=0.01)


def test_steady_rate_from_a_records_summary() -> None:
    # A record keeps the median steady step and the total tokens: tokens per step over the same steps.
    rate = mfu.steady_rate([1.1158], [320343 / 20], mfu.steady_window(20))
    assert rate.tokens_per_s == pytest.approx(14354.9, abs=0.1)


def test_steady_window_leaves_out_at_least_one_step() -> None:
    assert mfu.steady_window(300) == (31, 300)
    assert mfu.steady_window(5) == (2, 5)
    assert mfu.steady_window(1) == (1, 1)
    with pytest.raises(ValueError):
        mfu.steady_window(0)


def test_attention_term_adds_to_the_model_flops() -> None:
    attention = mfu.attention_flops_per_token(n_layers=30, width=576, seq_len=200)
    assert attention == 12 * 30 * 576 * 200
    assert mfu.training_flops(100, 10, 5, False, attention) == 5 * (4 * 100 + 2 * 10 + attention)
