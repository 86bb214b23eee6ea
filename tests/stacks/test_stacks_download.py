"""`lorabench stacks verify --download` over a real pip and real wheels: a tiny wheel built here (zip, metadata,
RECORD) served from a find-links folder with the index switched off, so the test needs no network. The
full run over every stack's lockfile is reports/benchmarks/stacks_download.txt."""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

import pytest

from harness.stacks import load_stacks
from harness.stacks_download import download_stack, install_stack, not_here, pip_platforms

PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def build_wheel(folder: Path, name: str, version: str) -> str:
    """A pure-Python wheel pip accepts; returns its sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": "VALUE = 1\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for rel, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    with zipfile.ZipFile(path, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def lockdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the find-links folder is the only source
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    wheels = tmp_path / "wheels"
    good = build_wheel(wheels, "tinypkg", "1.0")
    build_wheel(wheels, "otherpkg", "2.0")
    lock = tmp_path / "lockfiles"
    lock.mkdir()
    (lock / "mini.in").write_text("tinypkg\n")
    (lock / "mini.overrides.txt").write_text("torch\ntriton\n")
    (lock / "mini.txt").write_text(f"tinypkg==1.0 \\\n    --hash=sha256:{good}\n")
    (lock / "stacks.toml").write_text(f"""
[stacks.mini]
description = "test"
python = "{PY}"
platform = "x86_64-manylinux_2_28"
accelerator = "cpu"
torch = "base-image"
torch_version = "2.9.1"
input = "mini.in"
lockfile = "mini.txt"
overrides = "mini.overrides.txt"
find_links = ["{wheels}"]
base_image = "rocm/pytorch:x@sha256:{"b" * 64}"
digest_verified = false
digest_source = "test"
""")
    return lock


def test_platform_tags_cover_every_manylinux_up_to_the_stacks() -> None:
    tags = pip_platforms("x86_64-manylinux_2_28")
    assert tags[0] == "manylinux_2_28_x86_64" and "manylinux_2_17_x86_64" in tags
    assert {"manylinux2014_x86_64", "manylinux1_x86_64"} <= set(tags) and "manylinux_2_29_x86_64" not in tags


def test_a_lockfile_whose_pins_download_with_their_hashes_installs(lockdir: Path, tmp_path: Path) -> None:
    stack = load_stacks(lockdir)["mini"]
    result = download_stack(stack, lockdir, tmp_path / "dl")
    assert result.ok, result.failures
    assert result.files == ("tinypkg-1.0-py3-none-any.whl",)
    assert (
        "--require-hashes" in result.command
        and result.command[result.command.index("--python-version") + 1] == PY
    )
    installed = install_stack(stack, lockdir, tmp_path / "dl", tmp_path / "venv")
    assert installed.ok, installed.message
    assert (tmp_path / "venv" / "lib" / f"python{PY}" / "site-packages" / "tinypkg" / "__init__.py").is_file()
    assert not_here(stack, lockdir)[0].startswith("torch, triton: from the base image rocm/pytorch:x@sha256:")


def test_a_wrong_hash_and_a_missing_version_are_named(lockdir: Path, tmp_path: Path) -> None:
    lock = lockdir / "mini.txt"
    lock.write_text(
        lock.read_text().replace(lock.read_text().split("sha256:")[1][:8], "00000000")
        + "otherpkg==9.9 \\\n    --hash=sha256:"
        + "c" * 64
        + "\n"
    )
    result = download_stack(load_stacks(lockdir)["mini"], lockdir, tmp_path / "dl")
    named = {f.package: f.message for f in result.failures}
    assert set(named) == {"tinypkg==1.0", "otherpkg==9.9"}, named
    assert "hash" in named["tinypkg==1.0"].lower()
    assert not result.ok and result.files == ()
