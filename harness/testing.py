"""Tiny real models for tests and checks: a seeded Llama built from a config, with a real tokenizer.

Not a mock: the same classes, chat template and code paths as the real model, only small enough to
train for a few steps in seconds on a CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def build_tiny_model(target: Path, tokenizer_dir: Path, *, seed: int = 0, **config: Any) -> Path:
    """Save a seeded tiny LlamaForCausalLM (plus `tokenizer_dir`'s tokenizer) into `target`: the preset
    `tiny-llama-random`'s shape, `config` changing fields of it."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    if (target / "config.json").is_file():
        return target
    from harness.models import preset_config

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    shape = preset_config("tiny-llama-random", tokenizer, **config)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(shape)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target
