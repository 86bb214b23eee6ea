"""Eager attention without repeating the key/value heads: bit for bit transformers' eager where it applies,
the model's own eager function elsewhere, and used by a CPU's decoding."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import torch
from torch import nn

from harness.backends import grouped_attention, hf
from harness.backends.grouped_attention import grouped_eager, grouped_eager_attention
from harness.config import load_setup
from harness.run.evaluate import greedy_shrinking
from harness.runtime import Runtime


def _counted(monkeypatch) -> list[int]:
    calls: list[int] = []
    original = grouped_attention.grouped_eager_attention

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(grouped_attention, "grouped_eager_attention", counted)
    return calls


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_grouped_attention_gives_eagers_logits_and_tokens_bit_for_bit(
    tiny_model_dir: Path, precision: str, monkeypatch
) -> None:
    setup = load_setup(None, [f"model.source={tiny_model_dir}"])
    model, _ = hf.load(setup, tiny_model_dir, Runtime("cpu", precision, "eager"))
    model.eval()
    assert model.config.num_key_value_heads < model.config.num_attention_heads  # grouped-query attention
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 200, (3, 12), generator=generator)
    mask = torch.ones_like(ids)
    mask[0, :5] = 0  # left padding, as eval batches are
    mask[1, :2] = 0
    calls = _counted(monkeypatch)
    with torch.no_grad():
        eager = model(input_ids=ids, attention_mask=mask).logits
        eager_tokens = greedy_shrinking(model, ids, mask, 8, set())
        with grouped_eager():
            grouped = model(input_ids=ids, attention_mask=mask).logits
            grouped_tokens = greedy_shrinking(model, ids, mask, 8, set())
    assert calls  # the grouped function ran, in every layer
    assert torch.equal(grouped, eager)
    assert grouped_tokens == eager_tokens


class OtherAttention(nn.Module):
    """An attention class not in GROUPED_CLASSES: its module's own eager function must be used."""


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    return "this module's own", kwargs


def test_other_attention_classes_keep_their_own_eager_function() -> None:
    tensor = torch.zeros(1, 2, 3, 4)
    assert grouped_eager_attention(OtherAttention(), tensor, tensor, tensor, None, scaling=1.0, sliding_window=8) == (
        "this module's own", {"sliding_window": 8})  # fmt: skip


def test_the_span_puts_transformers_eager_back() -> None:
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    with grouped_eager():
        assert ALL_ATTENTION_FUNCTIONS.get_interface("eager", None) is grouped_eager_attention
    assert "eager" not in ALL_ATTENTION_FUNCTIONS._local_mapping
    with grouped_eager(enabled=False):
        assert ALL_ATTENTION_FUNCTIONS.get_interface("eager", None) is None


def test_a_cpus_eager_eval_decodes_through_it(tiny_model_dir: Path, monkeypatch) -> None:
    from test_hf import tiny_sql_examples

    from harness.run import evaluate

    entered: list[bool] = []
    original = evaluate.grouped_eager

    @contextlib.contextmanager
    def watched(enabled: bool = True):
        entered.append(enabled)
        with original(enabled):
            yield

    monkeypatch.setattr(evaluate, "grouped_eager", watched)
    for attention, expected in (("eager", True), ("sdpa", False)):
        sets = [f"model.source={tiny_model_dir}", "eval.max_new_tokens=4", f"model.attention={attention}"]
        setup = load_setup(None, sets)
        model, tokenizer = hf.load(setup, tiny_model_dir, Runtime("cpu", "fp32", attention))
        model.eval()
        evaluate.answer_questions(model, tokenizer, tiny_sql_examples(2), setup)
        assert entered[-1] is expected


def test_a_mask_per_head_keeps_transformers_eager(tiny_model_dir: Path) -> None:
    from transformers.models.llama import modeling_llama

    setup = load_setup(None, [f"model.source={tiny_model_dir}"])
    model, _ = hf.load(setup, tiny_model_dir, Runtime("cpu", "fp32", "eager"))
    module = model.model.layers[0].self_attn
    heads, kv_heads = model.config.num_attention_heads, model.config.num_key_value_heads
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(2, heads, 5, 16, generator=generator)
    key, value = (torch.randn(2, kv_heads, 5, 16, generator=generator) for _ in range(2))
    per_head = torch.randn(2, heads, 5, 5, generator=generator)  # no group can share it
    expected = modeling_llama.eager_attention_forward(module, query, key, value, per_head, scaling=0.25)
    got = grouped_eager_attention(module, query, key, value, per_head, scaling=0.25)
    assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))
