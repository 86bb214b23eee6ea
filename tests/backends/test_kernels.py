"""recipe.kernels: fused kernels only where they can run, named in the record; none by default."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends import hf
from harness.config import load_setup
from harness.errors import UserError
from harness.runtime import resolve_runtime


def test_default_patches_nothing_and_keeps_the_fingerprint(tiny_model_dir: Path) -> None:
    setup = load_setup(None, [f"model.source={tiny_model_dir}"])
    model, _ = hf.load(setup, tiny_model_dir, resolve_runtime("cpu", "fp32"))
    forwards = {type(m).__name__: m.forward for m in model.modules()}
    assert hf.fused_kernels(model, setup, resolve_runtime("cpu", "fp32")) is None
    assert {type(m).__name__: m.forward for m in model.modules()} == forwards
    # A field at its default stays out of the fingerprint: every earlier record still stands.
    assert "kernels" not in setup.fingerprint_payload()
    assert "kernels" in load_setup(None, ["recipe.kernels=liger"]).fingerprint_payload()


def test_liger_on_a_cpu_is_refused_naming_the_field(tiny_model_dir: Path) -> None:
    setup = load_setup(None, [f"model.source={tiny_model_dir}", "recipe.kernels=liger"])
    model, _ = hf.load(setup, tiny_model_dir, resolve_runtime("cpu", "fp32"))
    with pytest.raises(
        UserError,
        match=r"^recipe.kernels: 'liger' runs Triton kernels on a GPU .* set recipe.kernels = 'none'$",
    ):
        hf.fused_kernels(model, setup, resolve_runtime("cpu", "fp32"))


def test_an_unknown_kernel_set_is_a_config_error() -> None:
    with pytest.raises(Exception, match=r"recipe\.kernels"):
        load_setup(None, ["recipe.kernels=unsloth"])
