"""The one model of what 4-bit (NF4) saves, before anyone measures it: the quantizable fraction.

bitsandbytes NF4 quantizes linear layers' weights only; biases, embeddings, norms and the output head
stay 16-bit (the story: 44% of Gemma 3n E4B is embeddings, so 4-bit saved 3.4 GB, not ~6). The check is
always "pass": its figures are evidence for the measured saving (Exp B's memory claim reads
`max_saving_bytes`). Activations, optimizer state and the CUDA context are not counted.
"""

from __future__ import annotations

import math

from torch import nn

from harness.json_types import JsonObject
from harness.results import CheckVerdict

BF16_BYTES = 2.0
# NF4 with double quantization (as `backends.hf` loads it): 4 bits per weight, one 8-bit absmax per
# 64-weight block, one fp32 absmax per 256 blocks.
NF4_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)
# transformers' bitsandbytes integration never converts the output head.
KEPT_16BIT = ("lm_head",)


def _numel(param: nn.Parameter) -> int:
    # A bitsandbytes Params4bit stores packed bytes; its quant_state knows the original shape.
    state = getattr(param, "quant_state", None)
    return math.prod(state.shape) if state is not None and getattr(state, "shape", None) else param.numel()


def _kind(name: str, module: nn.Module, param_name: str) -> str:
    if "lora_" in name:
        return "adapter"
    if isinstance(module, nn.Embedding):
        return "embedding"
    if isinstance(module, nn.Linear):
        if param_name != "weight":
            return "other"  # a bias stays 16-bit
        return "head" if name.rsplit(".", 1)[-1] in KEPT_16BIT else "linear"
    if "norm" in type(module).__name__.lower():
        return "norm"
    return "other"


def parameter_kinds(model: nn.Module) -> dict[str, int]:
    """Parameter counts by kind, each tensor once (a head tied to the embedding counts as embedding)."""
    counts = {"linear": 0, "embedding": 0, "head": 0, "norm": 0, "adapter": 0, "other": 0}
    seen: set[int] = set()
    for name, module in model.named_modules():
        for param_name, param in module.named_parameters(recurse=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            counts[_kind(name, module, param_name)] += _numel(param)
    return counts


def quantizable_fraction(model: nn.Module) -> CheckVerdict:
    counts = parameter_kinds(model)
    base = sum(v for k, v in counts.items() if k != "adapter")
    linear = counts["linear"]
    bytes_bf16 = base * BF16_BYTES
    bytes_nf4 = bytes_bf16 - linear * (BF16_BYTES - NF4_BYTES)
    saving = bytes_bf16 - bytes_nf4
    evidence: JsonObject = {
        "params": counts,
        "base_params": base,
        "fractions": {k: round(v / base, 4) for k, v in counts.items() if k != "adapter"} if base else {},
        "bytes_bf16": int(bytes_bf16),
        "bytes_nf4_linear": int(bytes_nf4),
        "max_saving_bytes": int(saving),
        "nf4_bytes_per_param": round(NF4_BYTES, 4),
    }
    if not base:
        return CheckVerdict("pass", "no parameters", evidence)
    return CheckVerdict(
        "pass",
        f"linear layers hold {linear / base:.0%} of {base / 1e6:.1f}M params (embeddings {counts['embedding'] / base:.0%}); "
        f"4-bit can save at most {saving / 2**30:.2f} GiB of {bytes_bf16 / 2**30:.2f} GiB bf16 weights "
        f"({saving / bytes_bf16:.0%})",
        evidence,
    )
