"""Tiny real models for tests and checks: a seeded Llama built from a config, with a real tokenizer.

Not a mock: the same classes, chat template and code paths as the real model, only small enough to
train for a few steps in seconds on a CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def build_tiny_model(target: Path, tokenizer_dir: Path, *, seed: int = 0, **config: Any) -> Path:
    """Save a seeded tiny LlamaForCausalLM (plus `tokenizer_dir`'s tokenizer) into `target`."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    if (target / "config.json").is_file():
        return target
    from harness.models import ARCH_PRESETS

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    shape = {
        k: v for k, v in ARCH_PRESETS["tiny-llama-random"].items() if k not in ("model_type", "architectures")
    }
    settings = {
        "vocab_size": len(tokenizer),
        **shape,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        **config,
    }
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**settings))
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target
