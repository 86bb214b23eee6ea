"""`lorabench inspect` on real configs: the tiny Llama (checked against real PEFT on real weights) and a
tiny multimodal config with vision and audio towers, built from a transformers config class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.config import DEFAULT_TARGETS
from harness.errors import UserError
from harness.inspect import inspect_model

LANGUAGE_ONLY = r"^model\.layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)$"


@pytest.fixture(scope="module")
def omni_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config folder only (no weights): Qwen2.5-Omni's thinker, with a vision and an audio tower, made tiny."""
    from transformers import Qwen2_5OmniThinkerConfig

    config = Qwen2_5OmniThinkerConfig(
        text_config={"vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "num_key_value_heads": 2},
        vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
                       "fullatt_block_indexes": [1]},
        audio_config={"encoder_layers": 2, "d_model": 32, "encoder_attention_heads": 2, "encoder_ffn_dim": 64,
                      "output_dim": 64, "num_mel_bins": 16},
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("omni")
    config.save_pretrained(folder)
    return folder


def test_meta_counts_and_hits_agree_with_real_peft_on_real_weights(tiny_model_dir: Path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    found = inspect_model(tiny_model_dir, list(DEFAULT_TARGETS))
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    assert found.total_params == sum(p.numel() for p in model.parameters())
    assert found.model_class == "LlamaForCausalLM" and set(found.params) == {"language"}
    peft_model = get_peft_model(model, LoraConfig(target_modules=list(DEFAULT_TARGETS)))
    wrapped = {
        name.removeprefix("base_model.model.")
        for name, m in peft_model.named_modules()
        if hasattr(m, "lora_A")
    }
    assert {h.name for h in found.hits} == wrapped and len(wrapped) == 2 * 7
    assert not found.unwrappable_hits


def test_a_target_peft_cannot_wrap_is_named_and_peft_agrees(tiny_model_dir: Path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    found = inspect_model(tiny_model_dir, ["q_proj", "input_layernorm"])
    assert {h.type_name for h in found.unwrappable_hits} == {"LlamaRMSNorm"}
    assert len(found.unwrappable_hits) == 2 and len(found.hits) == 4
    assert found.unwrappable_with_params["LlamaRMSNorm"] == 2 * 2 + 1
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    with pytest.raises(ValueError, match="not supported"):
        get_peft_model(model, LoraConfig(target_modules=["q_proj", "input_layernorm"]))


def test_multimodal_towers_and_a_language_only_regex(omni_config_dir: Path) -> None:
    assert not list(omni_config_dir.glob("*.safetensors"))  # nothing to load: the config alone
    # Built on the meta device: no weights are allocated, whatever the model's size (this was a 30 s
    # window once; a busy CI runner is slower, the meta device is not).
    from harness.inspect import build_on_meta, load_config

    built = build_on_meta(load_config(omni_config_dir, None))
    assert {p.device.type for p in built.parameters()} == {"meta"}
    broad = inspect_model(omni_config_dir, list(DEFAULT_TARGETS))
    assert set(broad.params) >= {"language", "vision", "audio"}
    assert broad.params["vision"]["conv"] > 0 and broad.params["audio"]["conv"] > 0
    assert broad.params["language"]["embedding"] == 1000 * 64
    # The usual suffix list reaches into both towers: the vision MLP and the audio attention.
    assert {"language", "vision", "audio"} <= set(broad.hits_by_tower())
    narrow = inspect_model(omni_config_dir, LANGUAGE_ONLY)
    assert narrow.hits_by_tower() == {"language": 2 * 7}
    assert "Conv3d" in broad.tree and "×2" in broad.tree


def test_cli_prints_json_and_a_table(omni_config_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(omni_config_dir), "--regex", LANGUAGE_ONLY, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hits_by_tower"] == {"language": 14}
    assert {"vision", "audio"} <= set(data["params"])
    # `mlp` names containers here (the merger's Sequential, the decoder's MLP block), never a Linear.
    assert main(["inspect", str(omni_config_dir), "--targets", "mlp", "--no-tree"]) == 0
    out = capsys.readouterr().out
    assert "PEFT cannot wrap 5 targeted module(s) (Qwen2MLP, Qwen2_5OmniMLP, Sequential)" in out, out


def test_missing_model_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no config\.json"):
        inspect_model(tmp_path, ["q_proj"])
    with pytest.raises(UserError, match="not a regular expression"):
        inspect_model(tmp_path / "nothing-here", "(")
