"""Batched greedy decoding for evaluation: length-sorted, left-padded, one line per answer.

Prompts are sorted by length so each batch pads little; a sequence stops at its first newline or
end-of-turn token, and a batch ends when all its sequences have stopped. Greedy decoding is
deterministic, so the answers match one-question-at-a-time decoding except where padding changes
floating-point sums (measured, not assumed: see tests and benchmarks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Sequence
from typing import Any

import torch
from transformers import StoppingCriteria, StoppingCriteriaList


class StopAtTokens(StoppingCriteria):
    """Per-sequence stop: a generated token is in `stop_ids` (any token whose text holds a newline, EOS…)."""

    def __init__(self, stop_ids: set[int], prompt_length: int) -> None:
        self.stop_ids = torch.tensor(sorted(stop_ids))
        self.prompt_length = prompt_length

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        # The newest token only: generate keeps a stopped sequence stopped (it ANDs these flags into its
        # own). The ids move to the device once, not by a host-to-device copy every token.
        if self.stop_ids.device != input_ids.device:
            self.stop_ids = self.stop_ids.to(input_ids.device)
        if input_ids.shape[1] <= self.prompt_length:
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        return torch.isin(input_ids[:, -1], self.stop_ids)


def stop_token_ids(tokenizer: Any, end_of_turn: str | None) -> set[int]:
    ids: set[int] = set()
    for token, index in tokenizer.get_vocab().items():
        if "\n" in tokenizer.convert_tokens_to_string([token]):
            ids.add(index)
    for special in (tokenizer.eos_token, end_of_turn):
        if special:
            ids.update(tokenizer.convert_tokens_to_ids([special]) if special in tokenizer.get_vocab() else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


@contextlib.contextmanager
def adapter_merged(model: Any, enabled: bool) -> Generator[None]:
    """The LoRA weights folded into the base weights for the block, unfolded after.

    Unmerged, every adapted projection costs three extra small kernels per token; on a GPU, where a
    decode step of a 135M model is bound by kernel launches, folding them in is faster (H200, 300
    questions: 3.5 s against 4.5 s, medians of two).
    The sums differ in rounding only; how often that changes an answer is measured, not assumed
    (benchmarks/bench_eval.py). Unfolding leaves the base weights equal up to rounding only, so a run
    merges after it has saved the adapter and uses the model no further. Never for a quantized base:
    merging would re-quantize its weights."""
    if not enabled or not hasattr(model, "merge_adapter"):
        yield
        return
    model.merge_adapter()
    try:
        yield
    finally:
        model.unmerge_adapter()


@contextlib.contextmanager
def decoding_precision(model: Any, precision: str) -> Generator[None]:
    """`eval.precision = "fp32"`: every parameter and buffer lifted to fp32 for the block, each put back
    in its own dtype after (bf16 → fp32 → bf16 is exact; LoRA weights kept in fp32 stay fp32)."""
    if precision != "fp32":
        yield
        return
    tensors = [*model.parameters(), *model.buffers()]
    dtypes = [t.dtype for t in tensors]
    for tensor in tensors:
        if tensor.is_floating_point():
            tensor.data = tensor.data.float()
    try:
        yield
    finally:
        for tensor, dtype in zip(tensors, dtypes, strict=True):
            tensor.data = tensor.data.to(dtype)


def first_line(text: str) -> str:
    return text.strip().split("\n")[0].strip()


@torch.no_grad()
def generate_answers(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    batch_size: int,
    max_new_tokens: int,
    end_of_turn: str | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> list[str]:
    """Greedy answers (first line, stripped) in the order of `prompts`."""
    model.eval()
    device = next(model.parameters()).device
    tokenizer.padding_side = "left"
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    stops = stop_token_ids(tokenizer, end_of_turn)
    encoded = [tokenizer(p, add_special_tokens=False).input_ids for p in prompts]
    order = sorted(range(len(prompts)), key=lambda i: len(encoded[i]))
    answers: list[str] = [""] * len(prompts)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        width = max(len(encoded[i]) for i in idx)
        input_ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(idx), width), dtype=torch.long)
        for row, i in enumerate(idx):
            ids = encoded[i]
            input_ids[row, width - len(ids) :] = torch.tensor(ids)
            attention[row, width - len(ids) :] = 1
        output = model.generate(
            input_ids=input_ids.to(device),
            attention_mask=attention.to(device),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=pad_id,
            stopping_criteria=StoppingCriteriaList([StopAtTokens(stops, width)]),
        )
        for row, i in enumerate(idx):
            answers[i] = first_line(tokenizer.decode(output[row, width:], skip_special_tokens=True))
        if on_batch:
            on_batch(len(idx))
    return answers
