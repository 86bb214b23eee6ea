"""The runtime a run resolved: which device and precision (a setup may say `auto`), and the dtype."""

from __future__ import annotations

from dataclasses import dataclass

import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Runtime:
    """The resolved device and precision."""

    device: str
    precision: str

    @property
    def dtype(self) -> torch.dtype:
        # 4-bit keeps its compute (and the adapter) in bf16.
        return DTYPES.get(self.precision, torch.bfloat16)


def resolve_runtime(device: str, precision: str) -> Runtime:
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if precision == "auto":
        precision = "bf16" if device == "cuda" else "fp32"
    return Runtime(device, precision)


def runtime_of(model: torch.nn.Module) -> Runtime:
    """The runtime a loaded model is in, read from its first parameter."""
    param = next(model.parameters())
    precision = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(param.dtype, "fp32")
    return Runtime(param.device.type, precision)
