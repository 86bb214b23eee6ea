"""Eager attention without copying the key/value heads (issue 28): for decoding on a CPU.

transformers' eager attention repeats each key/value head for its query heads (`repeat_kv` copies the
whole KV cache, every layer, every token). Here each key/value head is multiplied by its group of query
heads at once: the same dot products, nothing copied. CPU decode 1.077x, same answers
(reports/benchmarks/cpu/bench_grouped_attention.txt). Only for classes whose eager function is this
computation (`GROUPED_CLASSES`) and a mask shared by all heads. Not used in training: the key/value
gradient would be summed in another order than `repeat_kv`'s backward.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Generator
from typing import Any

import torch
from torch import nn

# Attention classes whose eager function is transformers' plain one: scores, additive mask, fp32 softmax,
# dropout, weighted sum (modeling_llama.eager_attention_forward in transformers 5.17).
GROUPED_CLASSES = frozenset({"LlamaAttention"})


def grouped_eager_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    shared_mask = attention_mask is None or attention_mask.shape[1] == 1  # (batch, 1, length, keys)
    if type(module).__name__ not in GROUPED_CLASSES or not shared_mask:
        return sys.modules[type(module).__module__].eager_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    batch, heads, length, dim = query.shape
    kv_heads = key.shape[1]
    groups = heads // kv_heads
    # Query head h = kv_head × groups + g (repeat_kv's order): the group's rows sit together.
    rows = query.reshape(batch, kv_heads, groups * length, dim)
    weights = (torch.matmul(rows, key.transpose(2, 3)) * scaling).view(batch, kv_heads, groups, length, -1)
    if attention_mask is not None:  # the same mask for every head of the group
        weights = weights + attention_mask.unsqueeze(2)
    weights = nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = nn.functional.dropout(weights, p=dropout, training=module.training)
    output = torch.matmul(weights.view(batch, kv_heads, groups * length, -1), value)
    output = output.view(batch, heads, length, dim).transpose(1, 2).contiguous()
    return output, weights.view(batch, heads, length, -1)


@contextlib.contextmanager
def grouped_eager(enabled: bool = True) -> Generator[None]:
    """For the span: models that attend with "eager" use `grouped_eager_attention` (transformers looks the
    function up by name at every forward; this instance's own entry, removed on the way out)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    if not enabled or "eager" in ALL_ATTENTION_FUNCTIONS._local_mapping:
        yield
        return
    ALL_ATTENTION_FUNCTIONS["eager"] = grouped_eager_attention
    try:
        yield
    finally:
        del ALL_ATTENTION_FUNCTIONS["eager"]
