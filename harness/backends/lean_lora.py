"""PEFT's LoRA linear forward without the elementwise passes that cannot change its result (issue 28).

PEFT computes `base(x) + lora_B(lora_A(dropout(x))) * scaling` with `x` cast to the adapter's dtype.
Under bf16 autocast that cast is undone at once, and with `alpha = rank` `scaling` is 1.0: kernels that
change nothing. Here, for training and an unmerged eval, the multiplication is skipped when `scaling` is
exactly 1.0 and the cast when autocast would give the input the dtype it already has (same values,
forward and backward). Anything else (merged or disabled adapter, several adapters, DoRA, dropout, extra
arguments) takes PEFT's own forward. H200 graphed step 30.9/32.0 against 35.4/35.6 ms
(reports/benchmarks/h200/2026-12-02-lean-lora-step.txt); CPU 1.019x, same losses and answers
(reports/benchmarks/cpu/bench_lean_lora.txt).
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
