"""The stacks table and its real lockfiles agree; `stacks diff` on two real lockfiles."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import ConfigError, UserError
from harness.stacks import diff_lockfiles, load_stacks, normalize, parse_lockfile

ROOT = Path(__file__).resolve().parents[2]
LOCKFILES = ROOT / "lockfiles"
# The cpu stack must equal the team venv (the contract with the lead).
CPU_PINS = {
    "torch": "2.13.0+cpu",
    "transformers": "5.17.0",
    "peft": "0.21.2",
    "trl": "1.14.0",
    "datasets": "4.8.5",
    "accelerate": "1.15.0",
    "gguf": "0.19.0",
}
IMAGE_OWNED = {"torch", "torchvision", "torchaudio", "triton", "pytorch-triton-rocm"}


def test_table_loads_with_the_four_stacks() -> None:
    stacks = load_stacks(LOCKFILES)
    assert set(stacks) == {"rocm7.2-hf5.5", "rocm7.2-hf5.17", "cuda13", "cpu"}
    for stack in stacks.values():
        if stack.accelerator != "cpu":
            assert re.search(r"@sha256:[0-9a-f]{64}$", stack.base_image)
            assert stack.digest_source, f"{stack.name}: a digest needs its source"


@pytest.mark.parametrize("name", ["rocm7.2-hf5.5", "rocm7.2-hf5.17", "cuda13", "cpu"])
def test_every_pin_is_hashed_and_matches_its_input(name: str) -> None:
    stack = load_stacks(LOCKFILES)[name]
    pins = parse_lockfile(LOCKFILES / stack.lockfile)
    assert pins, f"{stack.lockfile} is empty"
    assert all(p.hashes for p in pins.values()), "a pin without --hash breaks pip --require-hashes"
    for line in (LOCKFILES / stack.input).read_text().splitlines():
        if m := re.match(r"^([A-Za-z0-9._-]+)(?:\[[^\]]*\])?==([^\s*]+)$", line.strip()):
            assert pins[normalize(m[1])].version == m[2], f"{stack.input} pins {line}, lockfile differs"
    if stack.torch == "base-image":
        assert not IMAGE_OWNED & set(pins), f"{stack.lockfile} would replace the image's torch/triton"
        owned = {
            normalize(x) for x in (LOCKFILES / stack.overrides).read_text().split() if not x.startswith("#")
        }
        assert {"torch", "triton"} <= owned


def test_rocm_stacks_exclude_cuda_only_xformers_and_keep_bitsandbytes() -> None:
    for name in ("rocm7.2-hf5.5", "rocm7.2-hf5.17"):
        pins = parse_lockfile(LOCKFILES / load_stacks(LOCKFILES)[name].lockfile)
        assert "xformers" not in pins
        assert tuple(int(x) for x in pins["bitsandbytes"].version.split(".")[:3]) >= (0, 50, 2)
        assert "unsloth" in pins


def test_cpu_stack_matches_the_team_venv() -> None:
    pins = parse_lockfile(LOCKFILES / "cpu.txt")
    assert {n: pins[n].version for n in CPU_PINS} == CPU_PINS


def test_diff_of_the_two_rocm_stacks_names_the_story_upgrade() -> None:
    diff = diff_lockfiles(LOCKFILES / "rocm7.2-hf5.5.txt", LOCKFILES / "rocm7.2-hf5.17.txt")
    changed = {name: (a, b) for name, a, b in diff.changed}
    assert changed["transformers"] == ("5.5.4", "5.17.0")
    assert changed["trl"][0].startswith("0.24")
    assert "tokenizers" in changed
    assert diff_lockfiles(LOCKFILES / "cpu.txt", LOCKFILES / "cpu.txt").is_empty


def test_stacks_diff_cli_prints_the_changes() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "stacks", "diff", "rocm7.2-hf5.5", "rocm7.2-hf5.17"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert re.search(r"^transformers\s+5\.5\.4\s+5\.17\.0$", out, re.MULTILINE)


def test_unknown_stack_is_a_user_error_without_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "stacks", "diff", "rocm7.2-hf5.5", "rocm9"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "'rocm9' is neither a stack" in proc.stderr and "Traceback" not in proc.stderr


def _copy_lockfiles(tmp_path: Path) -> Path:
    target = tmp_path / "lockfiles"
    shutil.copytree(LOCKFILES, target)
    return target


def test_bad_table_lists_every_problem(tmp_path: Path) -> None:
    lockfiles = _copy_lockfiles(tmp_path)
    table = (lockfiles / "stacks.toml").read_text()
    table = table.replace("@sha256:db80a41f", "@sha256:XYZ", 1)  # a digest that is not one
    table = table.replace('accelerator = "cpu"', 'accelerator = "tpu"', 1)
    (lockfiles / "stacks.toml").write_text(table)
    (lockfiles / "rocm7.2-hf5.5.txt").unlink()
    with pytest.raises(ConfigError) as err:
        load_stacks(lockfiles)
    text = str(err.value)
    assert "stacks.cuda13.base_image: must be pinned" in text
    assert "stacks.cpu.accelerator" in text and "'tpu'" in text
    assert "stacks.rocm7.2-hf5.5.lockfile: file 'rocm7.2-hf5.5.txt' not found" in text


def test_hand_edited_lockfile_line_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("torch>=2.4 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    with pytest.raises(UserError, match=r"bad.txt:1: not a `name==version` pin"):
        parse_lockfile(bad)
