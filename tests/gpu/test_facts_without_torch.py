"""GPU facts without importing torch: the same answer torch gives, from torch's version file and nvidia-smi."""

from __future__ import annotations

import importlib
import stat
import sys
from pathlib import Path

import pytest

from harness.gpu import facts
from harness.provenance import host_id

SMI = """#!/bin/sh
echo "0, NVIDIA H200, 143771, 9.0, 580.159.04"
echo "1, NVIDIA H200, 143771, 9.0, 580.159.04"
"""


def test_this_torch_build_says_what_torch_says() -> None:
    import torch

    kind, version = facts.torch_build()
    assert version == (torch.version.hip or torch.version.cuda)
    assert kind == ("hip" if torch.version.hip else "cuda" if torch.version.cuda else "cpu")
    if kind == "cpu":
        # Torch imported now, so collect_gpus asks torch: both answers must agree.
        assert facts.nvidia_gpus_without_torch() == facts.collect_gpus()


@pytest.fixture
def cuda_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CUDA build of torch (its version file only) and an nvidia-smi that lists two H200s."""
    package = tmp_path / "site" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('not for importing')\n")
    (package / "version.py").write_text(
        "from typing import Optional\ncuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n"
    )
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text(SMI)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setenv("PATH", f"{tool.parent}:{__import__('os').environ['PATH']}")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    importlib.invalidate_caches()


def test_cuda_host_is_told_by_nvidia_smi(cuda_host: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    told = facts.collect_gpus()
    assert told["runtime"] == "cuda" and told["runtime_version"] == "13.0" and told["machine_gpus"] == 2
    assert [g["name"] for g in told["gpus"]] == ["NVIDIA H200", "NVIDIA H200"] and told["gpus"][0][
        "arch"
    ] == "sm_90"
    assert host_id({"gpus": told["gpus"], "machine_gpus": told["machine_gpus"]}) == "nvidia-h200x2"
    assert "torch" not in sys.modules


def test_visible_devices_pick_the_gpus(cuda_host: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    told = facts.nvidia_gpus_without_torch()
    assert [g["index"] for g in told["gpus"]] == [0] and told["machine_gpus"] == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-e6801c44")  # by UUID: torch must answer
    assert facts.nvidia_gpus_without_torch() is None


@pytest.mark.parametrize(("visible", "count"), [(None, 2), ("1", 1), ("0,1", 2), ("", 0)])
def test_the_suites_gpu_count_and_runtime_need_no_torch(
    cuda_host: None, monkeypatch: pytest.MonkeyPatch, visible: str | None, count: int
) -> None:
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert facts.visible_gpu_count() == count and facts.gpu_runtime() == "cuda"
    assert "torch" not in sys.modules  # this fake torch raises on import: it was never asked


def test_a_process_asks_nvidia_smi_once(
    cuda_host: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite's worker asks for its placement, its host skips and its host id: one query answers all."""
    import os

    tool = tmp_path / "counting" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text(SMI.replace("#!/bin/sh\n", f"#!/bin/sh\necho asked >> {tmp_path}/asked\n"))
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tool.parent}:{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert facts.visible_gpu_count() == 2 and len(facts.collect_gpus()["gpus"]) == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # what is visible is read anew; the machine is not
    assert facts.visible_gpu_count() == 1
    assert (tmp_path / "asked").read_text().count("asked") == 1
