"""PEFT's LoRA linear forward without the elementwise passes that cannot change its result (issue 28).

For every adapted projection PEFT (0.21) computes `base(x) + lora_B(lora_A(dropout(x))) * scaling`, with `x`
first cast to the adapter's dtype. In a bf16 run the adapter weights are fp32 and the step runs under
autocast, so that cast (bf16 → fp32) is undone at once by autocast (fp32 → bf16) before `lora_A`'s product,
and backward runs both casts again the other way; with `alpha = rank` (Exp A's 16/16) `scaling` is 1.0,
a multiplication that launches a kernel forward and another backward. On the H200 elementwise kernels
took ~11 of the ~28 ms of GPU time a graphed Exp A step had (torch.profiler,
reports/benchmarks/h200/2026-12-02-profile-graphs.txt): 210 adapted projections, each with those passes.

Here, for the training span and for an eval that decodes unmerged (a CPU's): the multiplication is
skipped when `scaling` is exactly 1.0 (x * 1.0 is x, bit for bit, forward and backward), and the input
cast is skipped when autocast would cast the input to the very dtype it already has (the product sees the
same bf16 values; the gradient reaching `x` is the same bf16 values either way). Everything else — a merged
or disabled adapter, several active adapters, a LoRA variant (DoRA…), dropout, extra arguments — takes
PEFT's own forward unchanged.

Measured, each way alternated: on the H200 a graphed Exp A-shaped step (random weights) 35.4 / 35.6 ms with
PEFT's forward, 30.9 / 32.0 ms with this one (`dev/gpu/profile_step.py --mode lean-lora`,
reports/benchmarks/h200/2026-12-02-lean-lora-step.txt); on the 2-core EPYC 1.019× (median of 16 per-batch ratios,
`dev/bench_answer_loss.py --switch lean-lora`, reports/benchmarks/cpu/bench_lean_lora.txt), and its
unmerged eval 1.070× with the same answers (`dev/bench_eval_lean_lora.py`, 64 questions). A whole
Exp A seed with it on that CPU: the 300 losses (to the 5 decimals recorded) and the answers those of the
seed without it (reports/benchmarks/cpu/seed-2026-12-02-epyc-lean-lora/). No whole Exp A seed has run with it on the H200.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn


def _lean_forward(
    layer: Any, adapter: str, peft_forward: Callable[..., torch.Tensor]
) -> Callable[..., torch.Tensor]:
    lora_a, lora_b = layer.lora_A[adapter], layer.lora_B[adapter]
    scaling = layer.scaling[adapter]

    def forward(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if args or kwargs or layer.merged or layer.disable_adapters or layer.active_adapters != [adapter]:
            return peft_forward(x, *args, **kwargs)
        result = layer.base_layer(x)
        autocast_dtype = (
            torch.get_autocast_dtype(x.device.type) if torch.is_autocast_enabled(x.device.type) else None
        )
        if x.dtype != autocast_dtype:
            x = layer._cast_input_dtype(x, lora_a.weight.dtype)
        update = lora_b(lora_a(x))
        if scaling != 1.0:  # ruff: ignore[float-equality-comparison]  (exactly 1.0: only then is skipping exact)
            update = update * scaling
        return (result + update).to(result.dtype)

    return forward


def lean_layers(model: nn.Module) -> list[tuple[nn.Module, str]]:
    """The adapted linear layers whose forward the lean one computes exactly: vanilla LoRA, one active
    adapter, no dropout."""
    from peft.tuners.lora.layer import Linear

    found = []
    for module in model.modules():
        if type(module) is not Linear or len(module.active_adapters) != 1:
            continue
        adapter = module.active_adapters[0]
        if adapter in module.lora_variant or not isinstance(module.lora_dropout[adapter], nn.Identity):
            continue
        found.append((module, adapter))
    return found


@contextmanager
def lean_lora_forward(model: nn.Module, enabled: bool = True) -> Generator[int]:
    """For the span: the lean forward on every layer `lean_layers` finds (an instance attribute, removed
    on the way out). Yields how many layers took it. `enabled=False` keeps PEFT's forward (to measure one
    against the other)."""
    layers = lean_layers(model) if enabled else []
    for layer, adapter in layers:
        vars(layer)["forward"] = _lean_forward(layer, adapter, type(layer).forward.__get__(layer))
    try:
        yield len(layers)
    finally:
        for layer, _ in layers:
            vars(layer).pop("forward", None)
