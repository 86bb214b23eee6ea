import json
from pathlib import Path

import pytest

from harness.config import FINGERPRINT_VERSION, load_setup
from harness.errors import ConfigError
from harness.run.evaluate import decoded_in, eval_batch_size, merges_adapter


def test_defaults_are_the_storys_recipe() -> None:
    setup = load_setup(None)
    assert (setup.recipe.steps, setup.recipe.batch_size, setup.recipe.lr) == (300, 8, 2e-4)
    assert (setup.lora.rank, setup.lora.alpha) == (16, 16)
    assert setup.data.test_size == 300 and setup.data.split_seed == 42


def test_every_bad_field_is_listed_with_its_value(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('backend = "torchtune"\n[lora]\nrank = 0\nalpah = 3\n[recipe]\nlr = -1\n')
    with pytest.raises(ConfigError) as caught:
        load_setup(config)
    message = str(caught.value)
    assert "4 problem(s)" in message
    assert "lora.rank: input should be greater than 0, got 0" in message
    assert "backend: input should be 'hf' or 'unsloth', got 'torchtune'" in message
    assert "lora.alpah: unknown field, got 3; allowed here: alpha, dropout, rank, targets" in message
    assert "recipe.lr: input should be greater than 0, got -1" in message
    config.write_text("[lora]\nrank = 8.5\n")
    with pytest.raises(ConfigError) as caught:
        load_setup(config)
    assert str(caught.value).endswith(
        "lora.rank: input should be a valid integer, got a number with a fractional part: 8.5"
    )
    config.write_text("[recipe]\nsteps = 'abc'\n")  # a message that names the text says it once
    with pytest.raises(ConfigError) as caught:
        load_setup(config)
    assert str(caught.value).endswith("recipe.steps: must be a number, not the text 'abc'")
    config.write_text("[recipe]\nsteps = '8'\n")  # a quoted number: the quotes are the mistake
    with pytest.raises(ConfigError) as caught:
        load_setup(config)
    assert str(caught.value).endswith(
        "recipe.steps: must be a number, not the text '8'; write it without quotes"
    )
    config.write_text("[data]\nsource = ''\n")  # not ".", the folder you stand in
    with pytest.raises(ConfigError) as caught:
        load_setup(config)
    assert "data.source: is empty; give a hub dataset id or a local" in str(caught.value)


def test_a_not_finite_number_from_set_is_named_so_not_as_quoted_text(tmp_path: Path) -> None:
    # YAML spells NaN .nan: `--set recipe.lr=nan` arrives as the text 'nan', typed without quotes.
    config = tmp_path / "setup.toml"
    config.write_text("[recipe]\nsteps = 5\n")
    for typed in ("nan", "inf", "-Infinity"):
        with pytest.raises(ConfigError) as caught:
            load_setup(config, [f"recipe.lr={typed}"])
        assert str(caught.value).endswith(f"recipe.lr: must be a finite number, got '{typed}'")


def test_flags_override_the_file(tmp_path: Path) -> None:
    config = tmp_path / "setup.yaml"
    config.write_text("recipe:\n  steps: 50\n  seed: 1\nlora:\n  targets: [q_proj, v_proj]\n")
    setup = load_setup(config, ["recipe.steps=7", "lora.targets=.*attn.*"])
    assert setup.recipe.steps == 7 and setup.recipe.seed == 1
    assert setup.lora.targets == ".*attn.*"


def test_missing_and_malformed_files_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_setup(tmp_path / "nope.toml")
    bad = tmp_path / "broken.toml"
    bad.write_text("[recipe\n")
    with pytest.raises(ConfigError, match="cannot parse"):
        load_setup(bad)
    with pytest.raises(ConfigError, match=r"field\.path=value"):
        load_setup(None, ["steps"])


def test_fingerprint_payload_changes_with_the_setup() -> None:
    assert (
        load_setup(None).fingerprint_payload() != load_setup(None, ["recipe.seed=42"]).fingerprint_payload()
    )


def test_fields_at_their_default_stay_out_of_the_fingerprint() -> None:
    # A field added later with the old behaviour as its default must not invalidate cached records.
    payload = json.loads(load_setup(None).fingerprint_payload())
    assert payload == {"fingerprint_version": FINGERPRINT_VERSION}
    explicit = load_setup(None, ["eval.batch_size=64"]).fingerprint_payload()
    assert (
        explicit != load_setup(None).fingerprint_payload()
    )  # 64 is not auto: on a GPU it decodes differently


def test_eval_autos_resolve_per_device() -> None:
    from harness.runtime import Runtime

    gpu_bf16, cpu_fp32, cpu_bf16 = Runtime("cuda", "bf16"), Runtime("cpu", "fp32"), Runtime("cpu", "bf16")
    assert eval_batch_size("auto", "cpu") == 64 and eval_batch_size("auto", "cuda") >= 300
    assert eval_batch_size(16, "cuda") == 16
    default = load_setup(None, [])
    # On a GPU the default decodes a bf16 model lifted to fp32, adapter merged: repeatable and faster there.
    assert decoded_in(default, gpu_bf16) == "fp32" and merges_adapter(default, gpu_bf16)
    assert decoded_in(default, cpu_fp32) == "fp32" and not merges_adapter(default, cpu_fp32)
    assert decoded_in(default, cpu_bf16) == "bf16" and not merges_adapter(default, cpu_bf16)
    train = load_setup(None, ["eval.precision=train"])
    assert decoded_in(train, gpu_bf16) == "bf16" and not merges_adapter(
        train, gpu_bf16
    )  # never folded into bf16
    on = load_setup(None, ["eval.merge_adapter=true"])
    assert merges_adapter(on, cpu_fp32)
    # Never into a quantized base nor lifted, whatever the setting.
    qlora = load_setup(None, ["eval.merge_adapter=true", "precision=4bit"])
    assert (
        not merges_adapter(qlora, gpu_bf16)
        and decoded_in(load_setup(None, ["precision=4bit"]), gpu_bf16) == "bf16"
    )
    with pytest.raises(ConfigError, match=r"eval\.batch_size"):
        load_setup(None, ["eval.batch_size=0"])


@pytest.mark.parametrize("settings", [["precision=4bit"], ["backend=unsloth"]])
def test_fp32_eval_is_for_a_bf16_hf_model(settings: list[str]) -> None:
    from harness.errors import UserError

    with pytest.raises(UserError, match=r"eval\.precision: 'fp32' lifts .* set eval\.precision = 'train'"):
        load_setup(None, ["eval.precision=fp32", *settings])


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[1] / "benchmarks" / "setups").glob("*.toml")),
                         ids=lambda p: p.name)  # fmt: skip
def test_every_built_in_setup_loads_for_lorabench_run(path: Path) -> None:
    """`lorabench run benchmarks/setups/X.toml` (the README's command) reads a suite file: its [claims.*] and
    [suite] tables are the suite's and set aside (a GPU call of the 2026-12-01 run (606e6e1) found [suite] refused)."""
    setup = load_setup(path)
    assert setup.name and "claims" not in setup.model_dump() and "suite" not in setup.model_dump()
