"""Greedy decoding on an NVIDIA GPU with the decode step replayed from one CUDA graph (issue 40).

`generate`'s decode step on a GPU is bound by the host and by copies: the dynamic KV cache grows by a
concatenation every layer, every token, and SDPA's memory-efficient kernel spends ~0.47 ms a layer on one
query row. Here the KV cache is static (sized for the prompt and max_new_tokens), the prompt is prefilled
eagerly under an additive 4-D mask, and one decode step (the last token's forward with grouped eager
attention, its argmax written to the output, the next step's inputs advanced on the device) is captured once
and replayed; the host reads the output every CHECK_EVERY steps to stop once every row has produced a stop
token. SmolLM2-135M's shape, fp32, 300 rows, 64 new tokens, on an H100 (dev/gpu/profile_decode.py
--mode attention): a step 9.6-9.8 ms against 36-52 ms in a plain loop under any attention transformers
offers, 300 of 300 rows' tokens equal to `generate`'s. In Exp A's real runs on an H100 a seed's trained eval took
1.5-2.2 s against 3.9-5.0 s with `generate`, every answer of its 15 runs equal to the published records'
(reports/benchmarks/h100/2026-12-05-graphed-eval.txt).

Where: the eval's decode on CUDA where every attention module is one `grouped_eager_attention` serves
(transformers' plain eager attention: LlamaAttention) and the static cache fits in half the free memory;
elsewhere `generate` as before. A row's tokens are its output up to its first stop token, as `generate`'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from typing import Any

import torch

from harness.backends.grouped_attention import GROUPED_CLASSES, grouped_eager

# Steps between the host's reads of the output (each read waits for the GPU): a row stopped up to this
# many steps late costs as many ~10 ms steps, no answer changes (tokens past a stop are cut).
CHECK_EVERY = 8
# Eager steps before the capture: kernels chosen and loaded, the cache's lazy allocations made.
WARM_STEPS = 2


def applies(model: Any, device_type: str) -> bool:
    """Whether this model's decode on this device goes through `greedy_graphed`."""
    if device_type != "cuda":
        return False
    attention = [m for m in model.modules() if type(m).__name__.endswith("Attention")]
    return bool(attention) and all(type(m).__name__ in GROUPED_CLASSES for m in attention)


def cache_fits(model: Any, rows: int, length: int, dtype: torch.dtype) -> bool:
    """Whether a static KV cache of `rows` × `length` tokens takes at most half the GPU's free memory."""
    config = model.config
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    need = 2 * config.num_hidden_layers * rows * heads * dim * length * dtype.itemsize
    free, _ = torch.cuda.mem_get_info()
    return need <= free // 2


@contextlib.contextmanager
def eager_attention(model: Any) -> Generator[None]:
    """For the span: the model attends with transformers' "eager" function, which `grouped_eager` answers
    (no copy of the key/value heads); its own attention back after."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    before = base.config._attn_implementation
    base.set_attn_implementation("eager")
    try:
        with grouped_eager():
            yield
    finally:
        base.set_attn_implementation(before)


def stop_id_tensor(model: Any, stops: set[int], device: torch.device) -> torch.Tensor:
    """`stops` and the model's own end-of-sequence ids (its generation config), where generate also stops:
    for this decode and greedy_shrinking alike."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    configured = [configured] if isinstance(configured, int) else list(configured or [])
    return torch.tensor(sorted(set(stops) | set(configured)), device=device)


def left_padded_positions(attention: torch.Tensor) -> torch.Tensor:
    """Each token's position as generate derives it from a left-padded mask (padding's are masked anyway)."""
    return (attention.long().cumsum(-1) - 1).clamp_min(0)


@torch.no_grad()
def greedy_graphed(
    model: Any,
    input_ids: torch.Tensor,
    attention: torch.Tensor,
    max_new_tokens: int,
    stops: set[int],
    *,
    capture: bool = True,
) -> list[list[int]]:
    """Greedy answers of a left-padded batch: each row's new tokens up to its first stop token (included),
    as `generate(do_sample=False)` gives them. `capture`: replay the step from a CUDA graph (False: the
    same steps eagerly, for a CPU's tests)."""
    from transformers import StaticCache

    stop_ids = stop_id_tensor(model, stops, input_ids.device)
    width = input_ids.shape[1]
    dtype = next(p.dtype for p in model.parameters() if p.is_floating_point())
    cache = StaticCache(config=model.config, max_cache_len=width + max_new_tokens)
    # Which keys each row may attend, additive: 0, or finfo.min (not -inf: a row of padding attends to
    # nothing and stays finite) for its padding and the positions not yet decoded.
    rows = input_ids.shape[0]
    keys = torch.full(
        (rows, width + max_new_tokens), torch.finfo(dtype).min, dtype=dtype, device=input_ids.device
    )
    keys[:, :width].masked_fill_(attention.bool(), 0.0)
    logits, positions = _prefilled(model, input_ids, attention, cache, keys)
    step, out = _decode_step(model, cache, keys, logits, positions, max_new_tokens)
    produced = 1
    run = step
    if capture and max_new_tokens > 1 + WARM_STEPS:
        run = _captured(step)
        produced += WARM_STEPS
    while produced < max_new_tokens:
        if produced % CHECK_EVERY == 0 and bool(torch.isin(out[:, :produced], stop_ids).any(1).all()):
            break
        run()
        produced += 1
    return [_through_first_stop(row, stop_ids.tolist()) for row in out[:, :produced].tolist()]


def _prefilled(
    model: Any,
    input_ids: torch.Tensor,
    attention: torch.Tensor,
    cache: Any,
    keys: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The prompt through the model into the static cache, eagerly: the last position's logits and each
    row's positions."""
    rows, width = input_ids.shape
    device = input_ids.device
    causal = torch.ones(width, keys.shape[1], dtype=torch.bool, device=device).tril()
    mask = keys[:, None, None, :].expand(rows, 1, width, keys.shape[1]).clone()
    mask.masked_fill_(~causal, torch.finfo(keys.dtype).min)
    positions = left_padded_positions(attention)
    logits = model(
        input_ids=input_ids,
        attention_mask=mask,
        position_ids=positions,
        past_key_values=cache,
        cache_position=torch.arange(width, device=device),
        use_cache=True,
        logits_to_keep=1,
    ).logits[:, -1]
    return logits, positions


def _decode_step(
    model: Any,
    cache: Any,
    keys: torch.Tensor,
    logits: torch.Tensor,
    positions: torch.Tensor,
    max_new_tokens: int,
) -> tuple[Any, torch.Tensor]:
    """The decode step, which advances its own inputs (held at fixed addresses, as a graph replays them),
    and the output it writes each step's token into (the first, from the prefill's logits, written here)."""
    rows, width = positions.shape
    device = positions.device
    out = torch.zeros(rows, max_new_tokens, dtype=torch.long, device=device)
    token = logits.argmax(-1, keepdim=True)
    out[:, :1] = token
    position = positions[:, -1:] + 1
    where = torch.full((1,), width, dtype=torch.long, device=device)
    index = torch.ones(1, dtype=torch.long, device=device)
    mask = keys[:, None, None, :].clone()

    def step() -> None:
        mask.index_fill_(3, where, 0.0)  # this step's own position is attended from now on
        logits = model(
            input_ids=token,
            attention_mask=mask,
            position_ids=position,
            past_key_values=cache,
            cache_position=where,
            use_cache=True,
        ).logits[:, -1]
        chosen = logits.argmax(-1, keepdim=True)
        out.index_copy_(1, index, chosen)
        token.copy_(chosen)
        position.add_(1)
        where.add_(1)
        index.add_(1)

    return step, out


def _captured(step: Any) -> Any:
    """Runs WARM_STEPS real steps on a side stream (as torch.cuda.graph's warm-up asks), then captures the
    step (nothing runs while capturing); returns the graph's replay."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(WARM_STEPS):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def _through_first_stop(tokens: list[int], stops: list[int]) -> list[int]:
    for at, token in enumerate(tokens):
        if token in stops:
            return tokens[: at + 1]
    return tokens
