"""recipe.kernels: fused kernels only where they can run, named in the record; "auto" (the default): Liger's
where measured faster."""

from __future__ import annotations

import json
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


def test_auto_means_liger_only_where_the_layers_run_eager_on_an_nvidia_gpu() -> None:
    from harness.autorecipe import auto_kernels

    bf16 = load_setup(None, ["device=cuda"])
    assert auto_kernels(bf16, "cuda", "none", installed=True)[0] == "liger"
    # Where measured slower, not measured, or not possible: the model's own modules, and why.
    cases = {
        "graphed layers": (bf16, "cuda", "graphs", True, True),
        "compiled layers": (bf16, "cuda", "layers", True, True),
        "ROCm": (bf16, "cuda", "none", False, True),
        "a CPU": (load_setup(None, ["device=cpu"]), "cpu", "none", True, True),
        "4-bit": (load_setup(None, ["device=cuda", "precision=4bit"]), "cuda", "none", True, True),
        "Unsloth": (load_setup(None, ["device=cuda", "backend=unsloth"]), "cuda", "none", True, True),
        "not installed": (bf16, "cuda", "none", True, False),
    }
    whys = {}
    for case, (setup, device, mode, nvidia, installed) in cases.items():
        kernels, whys[case] = auto_kernels(setup, device, mode, nvidia=nvidia, installed=installed)
        assert kernels == "none", case
    assert whys["graphed layers"].startswith("graphs layers: Liger's kernels not faster there")
    assert "pip install liger-kernel" in whys["not installed"]
    assert whys["ROCm"] == "ROCm: Liger's kernels not measured yet"


def test_auto_kernels_enter_the_fingerprint_only_where_they_now_mean_liger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness import autorecipe
    from harness.results import run_fingerprint, setup_digest

    monkeypatch.setattr(autorecipe, "liger_installed", lambda: True)
    setups = Path(__file__).resolve().parents[2] / "benchmarks" / "setups"
    packed = load_setup(setups / "exp_c_speed_packed.toml", [])  # the 4B shape: eager layers
    assert packed.recipe.kernels == "auto"
    assert run_fingerprint(packed, "cuda", "nvidia-h200") != setup_digest(packed, "cuda", "nvidia-h200")
    # Exp A (graphed layers), an AMD GPU, a CPU, liger-kernel missing: "auto" means what it meant.
    exp_a = load_setup(setups / "exp_a.toml", [])
    assert run_fingerprint(exp_a, "cuda", "nvidia-h200") == setup_digest(exp_a, "cuda", "nvidia-h200")
    for kind in ("amd-radeon-rx-7900-xtx", "radeon-8060s-graphics", "amd-instinct-mi300x"):
        assert run_fingerprint(packed, "rocm", kind) == setup_digest(packed, "rocm", kind)
    # NVIDIA's older names lack the vendor: still NVIDIA's.
    assert run_fingerprint(packed, "cuda", "tesla-v100-sxm2-16gb") != setup_digest(
        packed, "cuda", "tesla-v100-sxm2-16gb"
    )
    cpu = load_setup(None, ["device=cpu"])
    assert run_fingerprint(cpu, "cpu", "cpu-x86-64-2c-avx2") == setup_digest(cpu, "cpu", "cpu-x86-64-2c-avx2")
    monkeypatch.setattr(autorecipe, "liger_installed", lambda: False)
    assert run_fingerprint(packed, "cuda", "nvidia-h200") == setup_digest(packed, "cuda", "nvidia-h200")


def test_a_record_from_before_the_field_reads_as_none_and_says_what_auto_ran() -> None:
    from harness.report.settings import settings
    from harness.results import load_record

    results = Path(__file__).resolve().parents[2] / "reports" / "results" / "h200-image" / "nvidia-h200"
    path = results / "exp_c_speed" / "packed-8x2048-ckpt-true" / "seed-3407.json"
    assert "kernels" not in json.loads(path.read_text())["setup"]["recipe"]  # made before the field
    old = load_record(path)
    assert old.setup.recipe.kernels == "none" and settings(old)["recipe.kernels"] == "none"
    liger = load_record(results / "exp_c_speed" / "packed-liger" / "seed-3407.json")
    ran = liger.model_copy(
        update={
            "setup": liger.setup.model_copy(
                update={"recipe": liger.setup.recipe.model_copy(update={"kernels": "auto"})}
            )
        }
    )
    assert settings(ran)["recipe.kernels"] == "liger (auto)"
