"""GuardConfig: frozen, no unknown keys, loaded from a [guard] section of TOML or YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.errors import ConfigError, UserError
from harness.guard import GuardConfig, load_guard_config


def test_defaults_and_frozen() -> None:
    config = GuardConfig()
    assert (config.window_s, config.sample_interval_s) == (3, 1)
    assert config.net_ignore_interfaces == () and config.net_loopback_interfaces == ("lo",)
    with pytest.raises(ValidationError):
        config.window_s = 1.0  # type: ignore[misc]
    with pytest.raises(ValidationError, match="extra"):
        GuardConfig.model_validate({"window": 3})


def test_toml_and_yaml_sections(tmp_path: Path) -> None:
    toml = tmp_path / "bench.toml"
    toml.write_text('[guard]\nwindow_s = 1.5\nnet_interfaces = ["eth*"]\n')
    assert load_guard_config(toml) == GuardConfig(window_s=1.5, net_interfaces=("eth*",))
    yaml = tmp_path / "bench.yaml"
    yaml.write_text("guard:\n  cpu_other_percent_limit: 80\n  checks: [net, cpu]\n")
    assert load_guard_config(yaml) == GuardConfig(cpu_other_percent_limit=80, checks=("net", "cpu"))


def test_every_problem_listed_with_field_and_value(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[guard]\nwindow_s = 0\nchecks = ["net", "disk"]\nwindw = 2\n')
    with pytest.raises(ConfigError) as caught:
        load_guard_config(bad)
    text = str(caught.value)
    assert "3 problem(s)" in text
    assert "guard.window_s: Input should be greater than 0, got 0" in text
    assert "guard.checks.1" in text and "'disk'" in text
    assert "guard.windw" in text


def test_unreadable_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read it"):
        load_guard_config(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("guard.ini", "[guard]\n", "unknown config format '.ini'"),
        ("guard.yaml", "- 1\n", "top level must be a table"),
        ("guard.toml", "[guard\n", "cannot parse"),
        ("guard.toml", b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_guard_file_is_read_by_the_one_config_reader(
    tmp_path: Path, name: str, text: str | bytes, words: str
) -> None:
    """Setups and guard thresholds share `harness.config.read_config_file`: a fault reads the same in both."""
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError, match=words):
        load_guard_config(path)
