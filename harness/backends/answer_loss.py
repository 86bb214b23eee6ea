"""The training loss over the answer tokens, computed once, in place of TRL's chunked cross-entropy (issue 28).

TRL's default `chunked_nll` loss rounds the answer tokens up to chunks of 256, recomputes each chunk's
logits in backward and also computes accuracy and entropy, which lorabench never reads. Where the answer
tokens' fp32 logits fit in `LOGITS_BUDGET_BYTES` they are computed once for exactly those tokens: the same
sum over the same tokens divided by the same count (log-softmax then NLL in fp32, as TRL's `_chunk`);
larger counts go to TRL's path unchanged. A batch with no answer token keeps one masked row so a DDP
rank still syncs its gradients. CPU step 1.055x / 1.079x faster (reports/benchmarks/cpu/bench_answer_loss.txt).

`install()` puts it in TRL's module, where TRL's patched forward looks it up at each call. It is the only
path (issue #37).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.nn.functional as F

LOGITS_BUDGET_BYTES = 256 * 2**20


def _rows(hidden_states: torch.Tensor, labels: torch.Tensor | None, shift_labels: torch.Tensor | None):
    # TRL's own preparation: shifted labels as given, else drop the last position and the first label.
    if labels is None and shift_labels is None:
        raise ValueError("At least one of `labels` or `shift_labels` must be provided.")
    if shift_labels is not None:
        return hidden_states.reshape(-1, hidden_states.size(-1)), shift_labels.reshape(-1)
    return hidden_states[..., :-1, :].reshape(-1, hidden_states.size(-1)), labels[..., 1:].reshape(-1)


def answer_tokens_loss(
    original: Any,
    hidden_states: torch.Tensor,
    lm_head_weight: torch.Tensor,
    chunk_size: int,
    labels: torch.Tensor | None = None,
    shift_labels: torch.Tensor | None = None,
    num_items_in_batch: torch.Tensor | int | None = None,
    logit_scale: float = 1.0,
    final_logit_softcapping: float | None = None,
    lm_head_bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """TRL's `_chunked_cross_entropy_loss` contract (loss, correct, entropy sum, valid count); correct and
    entropy are zeros here. `original`: TRL's function, for what does not fit the budget."""
    args = (hidden_states, lm_head_weight, chunk_size)
    kwargs = {
        "labels": labels,
        "shift_labels": shift_labels,
        "num_items_in_batch": num_items_in_batch,
        "logit_scale": logit_scale,
        "final_logit_softcapping": final_logit_softcapping,
        "lm_head_bias": lm_head_bias,
    }
    hidden, flat = _rows(hidden_states, labels, shift_labels)
    valid = flat != -100
    n_valid = valid.sum()
    index = valid.nonzero().squeeze(1)  # its size is the one host read a step (TRL reads its trip count)
    if index.numel() * lm_head_weight.shape[0] * 4 > LOGITS_BUDGET_BYTES:
        return original(*args, **kwargs)
    if not index.numel():  # one masked row: the loss is 0 and still reaches every trainable parameter
        index = torch.zeros(1, dtype=torch.long, device=flat.device)
    logits = (hidden.index_select(0, index) @ lm_head_weight.to(hidden.dtype).t()).float()
    if lm_head_bias is not None:
        logits = logits + lm_head_bias.float()
    if logit_scale != 1.0:  # ruff: ignore[float-equality-comparison] (TRL: exactly 1 means none)
        logits = logits * logit_scale
    if final_logit_softcapping is not None:
        logits = final_logit_softcapping * torch.tanh(logits / final_logit_softcapping)
    loss = F.nll_loss(
        F.log_softmax(logits, dim=-1), flat.index_select(0, index), ignore_index=-100, reduction="sum"
    )
    if num_items_in_batch is None:
        loss = loss / n_valid.clamp(min=1)
    else:
        if isinstance(num_items_in_batch, torch.Tensor):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    zero = hidden.new_zeros((), dtype=torch.float32)
    return loss, zero, zero.clone(), n_valid


def install() -> bool:
    """TRL's chunked loss answered by `answer_tokens_loss` in this process (once). False where this TRL has
    no such function (another version: its own path stays)."""
    from trl.trainer import sft_trainer

    current = getattr(sft_trainer, "_chunked_cross_entropy_loss", None)
    if current is None:
        return False
    if getattr(current, "lorabench_answer_loss", False):
        return True
    replacement = functools.partial(answer_tokens_loss, current)
    replacement.lorabench_answer_loss = True  # type: ignore[attr-defined]
    sft_trainer._chunked_cross_entropy_loss = replacement
    return True
