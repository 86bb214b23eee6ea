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
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    settings = {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 1024,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "tie_word_embeddings": True,
        **config,
    }
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**settings))
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target
