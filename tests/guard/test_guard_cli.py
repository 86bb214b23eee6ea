"""`lorabench guard` and `lorabench fetch`, run as real commands."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from guardlib import PYTHON, burner_code, child_env

from harness.cli import main


def write_config(tmp_path: Path, checks: str = '["net", "downloads", "cpu", "memory", "gpu"]') -> Path:
    config = tmp_path / "bench.toml"
    config.write_text(
        f'[guard]\nwindow_s = 1.0\ncpu_other_percent_limit = 10\nchecks = {checks}\ndownload_dirs = ["{tmp_path}"]\n'
    )
    return config


def guard_cli(
    hermetic: list[str], tmp_path: Path, *args: str, before: str = ""
) -> subprocess.CompletedProcess[str]:
    """The CLI on a quiet machine: fresh pid and net namespaces, caches in tmp_path."""
    command = f"{before}{PYTHON} -m harness.cli guard {' '.join(args)}"
    return subprocess.run(
        [*hermetic, "sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(HF_HOME=str(tmp_path / "hf"), XDG_CACHE_HOME=str(tmp_path / "cache")),
    )


def test_quiet_machine_passes_every_check(hermetic: list[str], tmp_path: Path) -> None:
    done = guard_cli(hermetic, tmp_path, "--config", str(write_config(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "quiet: a timed run may start" in done.stdout
    assert "cpu_other" in done.stdout and "memory_available" in done.stdout and "downloads" in done.stdout


def test_noisy_machine_exits_3_with_json(hermetic: list[str], tmp_path: Path) -> None:
    config = write_config(tmp_path)
    done = guard_cli(
        hermetic,
        tmp_path,
        "--json",
        "--config",
        str(config),
        before=f"{PYTHON} -c '{burner_code(15)}' & echo burner=$! >&2; ",  # outlives a slow CLI start; the pid namespace ends it
    )
    assert done.returncode == 3, done.stdout + done.stderr
    verdict = json.loads(done.stdout)
    burner = done.stderr.split("burner=")[1].split()[0]
    assert not verdict["ok"] and f"pid {burner} " in verdict["reason"]
    assert {r["name"] for r in verdict["readings"]} >= {"cpu_other", "downloads", "memory_available"}


def test_bad_config_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("guard:\n  net_bytes_per_s_limit: -1\n")
    assert main(["guard", "--config", str(bad)]) == 2
    assert (
        "guard.net_bytes_per_s_limit: Input should be greater than or equal to 0, got -1"
        in capsys.readouterr().err
    )


def test_fetch_local_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, data = tmp_path / "model", tmp_path / "train.jsonl"
    model.mkdir()
    data.write_text('{"question": "q", "sql": "select 1"}\n')
    assert main(["fetch", "--model", str(model), "--data", str(data)]) == 0
    assert f"model {model}: {model}" in capsys.readouterr().out
    assert main(["fetch", "--model", str(tmp_path / "missing")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_fetch_unreachable_hub_id_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Offline, so nothing leaves the machine: the hub id cannot be in the empty cache.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)  # read at import, before the env var above
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    assert main(["fetch", "--model", "org/no-such-model"]) == 2
    err = capsys.readouterr().err
    assert "--model 'org/no-such-model': could not fetch from the Hugging Face hub" in err
    assert main(["fetch"]) == 2
    assert "nothing to fetch" in capsys.readouterr().err
