"""What 4-bit quantization should save, predicted from the model's shape alone (no weights loaded).

bitsandbytes quantizes the weights of `nn.Linear` layers except the output head; embeddings, norms and
the head stay in bf16. The quantizable fraction is the share of parameters it converts; each converted
parameter goes from 2 bytes (bf16) to about half a byte (4 bits; the per-block scales are ignored,
so the prediction is slightly optimistic).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

BF16_BYTES = 2.0
NF4_BYTES = 0.5
SKIPPED_MODULES = ("lm_head",)


@dataclass(frozen=True)
class QuantPrediction:
    total_params: int
    quantizable_params: int

    @property
    def fraction(self) -> float:
        return self.quantizable_params / self.total_params if self.total_params else 0.0

    @property
    def saved_bytes(self) -> float:
        return self.quantizable_params * (BF16_BYTES - NF4_BYTES)


def predict_4bit_saving(model_dir: Path) -> QuantPrediction:
    """Count parameters on the meta device: the model's shape from its config, no memory, no download."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(model_dir))
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    total = sum(p.numel() for p in model.parameters())  # tied weights are counted once
    quantizable = sum(
        module.weight.numel()
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and name.rsplit(".", 1)[-1] not in SKIPPED_MODULES
    )
    return QuantPrediction(total_params=total, quantizable_params=quantizable)
