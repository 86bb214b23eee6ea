"""The hf backend's loading options, on the tiny seeded model."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends import hf
from harness.config import load_setup
from harness.training import Runtime


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_attention_implementation_is_the_setups(tiny_model_dir: Path, attention: str) -> None:
    setup = load_setup(None, [f"model.source={tiny_model_dir}", f"model.attention={attention}"])
    model, _ = hf.load(setup, tiny_model_dir, Runtime("cpu", "fp32"))
    assert model.config._attn_implementation == attention
    # The default stays transformers' own, so records made before the field existed keep their meaning.
    assert load_setup(None).model.attention == "sdpa"
