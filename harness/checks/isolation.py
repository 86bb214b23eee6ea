"""Let a check touch the model without changing the run: no dropout, the RNG and the grads as they were.

Preflight checks run on the very model that trains next; a check that drew from the RNG or left
gradients behind would make a seed mean something different with checks on than off.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn


def model_device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


@contextmanager
def no_dropout(model: nn.Module) -> Generator[None, None, None]:
    """Dropout p=0 everywhere (nn.Dropout and the functional `attention_dropout` of HF attention), then restored.

    Parity checks compare two forwards that must be deterministic; train mode would otherwise differ by noise."""
    saved: list[tuple[Any, str, float]] = []
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            saved.append((module, "p", module.p))
            module.p = 0.0
        value = getattr(module, "attention_dropout", None)
        if isinstance(value, float) and not isinstance(module, nn.Dropout):
            saved.append((module, "attention_dropout", value))
            module.attention_dropout = 0.0
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


@contextmanager
def untouched(model: nn.Module) -> Generator[None, None, None]:
    """Fork the RNG, restore train/eval mode, drop any gradient the check made."""
    device = model_device(model)
    was_training = model.training
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        try:
            yield
        finally:
            model.train(was_training)
            for param in model.parameters():
                param.grad = None
