"""`lorabench export`: merge, read back, same answers — on the real SmolLM2 with a non-trivial adapter,
and on a tiny model with a corrupted merge, which the check must name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.cli import main
from harness.config import load_setup
from harness.errors import UserError
from harness.export import export_adapter


def save_test_adapter(model_dir: Path, target: Path, *overrides: str) -> Path:
    """A LoRA adapter as a run saves it, with its B matrices drawn at random (seeded) so the merge moves
    the weights: a freshly initialised adapter (B = 0) would make any merge trivially identical."""
    from harness.backends.hf import load, wrap_lora
    from harness.run.adapter import save_adapter
    from harness.runtime import resolve_runtime

    setup = load_setup(None, ["task=verdict", f"model.source={model_dir}", "lora.rank=4",
                              "lora.targets=[q_proj, v_proj]", *overrides])  # fmt: skip
    runtime = resolve_runtime("cpu", "fp32")
    model, _ = load(setup, model_dir, runtime)
    model = wrap_lora(model, setup)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.02)
    save_adapter(model, target, setup, runtime.precision, model_dir)
    return target


def test_smollm2_round_trip_gives_identical_answers(
    smollm2_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from safetensors import safe_open

    adapter = save_test_adapter(smollm2_dir, tmp_path / "seed-3407.adapter", "eval.max_new_tokens=16")
    record = tmp_path / "seed-3407.json"
    record.write_text("{}")  # the adapter is found beside a record by name
    monkeypatch.delenv("LORABENCH_GGUF_CONVERTER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    out = tmp_path / "merged"
    assert main(["export", str(record), "--out", str(out), "--limit", "4"]) == 0
    printed = capsys.readouterr().out
    assert "4/4 identical" in printed and "GGUF: not converted — no converter installed" in printed
    summary = json.loads((out / "export.json").read_text())
    assert summary["is_identical"] and summary["n_compared"] == 4 and summary["precision"] == "fp32"
    assert summary["adapter_dir"] == str(adapter)
    # The merge moved the weights (so identical answers say something), and nothing LoRA is left.
    with (
        safe_open(str(out / "model.safetensors"), "pt") as merged,
        safe_open(str(smollm2_dir / "model.safetensors"), "pt") as base,
    ):
        key = "model.layers.0.self_attn.q_proj.weight"
        assert not torch.equal(merged.get_tensor(key), base.get_tensor(key))
        assert not [k for k in list(merged.keys()) if "lora" in k]  # safe_open is not iterable
    with pytest.raises(UserError, match="not an empty folder"):
        export_adapter(adapter, out, limit=1)


def test_a_corrupted_merge_is_caught(
    smollm2_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from peft.tuners.tuners_utils import BaseTuner

    from harness.testing import build_tiny_model

    # Untied: with the input embedding as its output head a random tiny model repeats the prompt's last
    # token, a newline, and every answer is empty — nothing a corrupted merge could change.
    tiny = build_tiny_model(tmp_path / "tiny-untied", smollm2_dir, seed=0, tie_word_embeddings=False)
    adapter = save_test_adapter(tiny, tmp_path / "adapter", "eval.max_new_tokens=8")
    merge = BaseTuner.merge_and_unload  # what PeftModel.merge_and_unload forwards to

    def merge_wrong(self: BaseTuner, *args: object, **kwargs: object) -> object:
        merged = merge(self, *args, **kwargs)
        with torch.no_grad():
            merged.lm_head.weight.add_(
                torch.randn_like(merged.lm_head.weight, generator=torch.Generator().manual_seed(1))
            )
        return merged

    monkeypatch.setattr(BaseTuner, "merge_and_unload", merge_wrong)
    result = export_adapter(adapter, tmp_path / "merged", limit=6, gguf=False)
    assert not result.is_identical and result.mismatches
    assert json.loads((tmp_path / "merged" / "export.json").read_text())["is_identical"] is False


def test_a_run_folder_without_an_adapter_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.export import find_gguf_converter

    record = tmp_path / "seed-1.json"
    record.write_text("{}")
    with pytest.raises(UserError, match=r"no adapter folder seed-1\.adapter/"):
        export_adapter(record, tmp_path / "out")
    monkeypatch.setenv("LORABENCH_GGUF_CONVERTER", str(tmp_path / "nope.py"))
    with pytest.raises(UserError, match="LORABENCH_GGUF_CONVERTER"):
        find_gguf_converter()
