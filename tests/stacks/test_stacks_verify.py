"""`verify_environment` on real (small) site-packages folders: dist-info metadata and files on disk,
read through importlib.metadata exactly as in a real environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.stacks import load_stacks, verify_environment

HASH = "--hash=sha256:" + "a" * 64
TABLE = """
[stacks.rocm-mini]
description = "test stack"
python = "3.12"
platform = "x86_64-manylinux_2_28"
accelerator = "rocm"
torch = "base-image"
torch_version = "2.9.1"
input = "mini.in"
lockfile = "mini.txt"
overrides = "mini.overrides.txt"
base_image = "rocm/pytorch:x@sha256:{digest}"
digest_verified = false
digest_source = "test"
""".replace("{digest}", "b" * 64)


def add_dist(site: Path, name: str, version: str, files: dict[str, str] | None = None) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    files = files or {}
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    (info / "RECORD").write_text("".join(f"{rel},,\n" for rel in files))


def torch_files(hip: str | None, cuda: str | None) -> dict[str, str]:
    def q(v: str | None) -> str:
        return "None" if v is None else repr(v)

    return {
        "torch/version.py": f"__version__ = '2.9.1'\ncuda: Optional[str] = {q(cuda)}\nhip: Optional[str] = {q(hip)}\n"
    }


@pytest.fixture
def lockfiles(tmp_path: Path) -> Path:
    d = tmp_path / "lockfiles"
    d.mkdir()
    (d / "stacks.toml").write_text(TABLE)
    (d / "mini.in").write_text("unsloth\nbitsandbytes>=0.50.2\n")
    (d / "mini.overrides.txt").write_text("torch\ntriton\n")
    (d / "mini.txt").write_text(f"bitsandbytes==0.50.2 \\\n    {HASH}\nunsloth==2026.10.9 \\\n    {HASH}\n")
    return d


def healthy_rocm_site(site: Path) -> None:
    add_dist(site, "torch", "2.9.1+rocm7.2.4", torch_files(hip="7.2.26015", cuda=None))
    add_dist(site, "pytorch-triton-rocm", "3.5.1")
    add_dist(site, "bitsandbytes", "0.50.2", {"bitsandbytes/libbitsandbytes_rocm72.so": ""})
    add_dist(site, "unsloth", "2026.10.9")


def problems(lockfiles: Path, site: Path) -> list[tuple[str, str, str]]:
    stack = load_stacks(lockfiles)["rocm-mini"]
    return [
        (p.severity, p.package, p.message)
        for p in verify_environment(stack, directory=lockfiles, search_path=[str(site)])
    ]


def test_healthy_rocm_environment_has_no_problem(lockfiles: Path, tmp_path: Path) -> None:
    healthy_rocm_site(tmp_path / "site")
    assert problems(lockfiles, tmp_path / "site") == []


def test_cuda_triton_next_to_hip_torch_is_an_error(lockfiles: Path, tmp_path: Path) -> None:
    healthy_rocm_site(tmp_path / "site")
    add_dist(tmp_path / "site", "triton", "3.5.0")  # what `pip install unsloth` pulls from PyPI
    found = problems(lockfiles, tmp_path / "site")
    assert [(s, p) for s, p, _ in found] == [("error", "triton")]
    assert "PyPI CUDA build" in found[0][2]


def test_missing_rocm_bitsandbytes_backend_is_an_error(lockfiles: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    add_dist(site, "torch", "2.9.1+rocm7.2.4", torch_files(hip="7.2.26015", cuda=None))
    add_dist(site, "bitsandbytes", "0.50.2", {"bitsandbytes/libbitsandbytes_cuda128.so": ""})
    add_dist(site, "unsloth", "2026.10.9")
    found = problems(lockfiles, site)
    assert [(s, p) for s, p, _ in found] == [("error", "bitsandbytes")]
    assert "no ROCM backend" in found[0][2]


def test_cuda_torch_in_a_rocm_stack_and_version_drift_are_errors(lockfiles: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    add_dist(site, "torch", "2.9.1", torch_files(hip=None, cuda="12.8"))  # pip replaced the image's torch
    add_dist(site, "bitsandbytes", "0.50.2", {"bitsandbytes/libbitsandbytes_rocm72.so": ""})
    add_dist(site, "unsloth", "2026.10.8")
    found = {(s, p) for s, p, _ in problems(lockfiles, site)}
    assert found == {("error", "torch"), ("error", "unsloth")}


def test_xformers_with_hip_torch_is_a_warning(lockfiles: Path, tmp_path: Path) -> None:
    healthy_rocm_site(tmp_path / "site")
    add_dist(tmp_path / "site", "xformers", "0.0.35")
    assert [(s, p) for s, p, _ in problems(lockfiles, tmp_path / "site")] == [("warning", "xformers")]
