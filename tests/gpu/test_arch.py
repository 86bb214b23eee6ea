"""The gfx-arch check at container start: recorded KFD topology files, torch arch lists, the override."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.gpu.arch import check_gfx_support, gfx_from_override, gfx_name, gfx_version, read_kfd_gfx

KFD = Path(__file__).resolve().parents[1] / "data" / "gpu" / "kfd"
# The shape of torch.cuda.get_arch_list() on a ROCm build (an example list, not a claim about one image).
TORCH_ARCHS = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102"]


def topology(tmp_path: Path, *files: str) -> Path:
    """A KFD nodes tree, node i holding the i-th recorded properties file."""
    for i, name in enumerate(files):
        (tmp_path / str(i)).mkdir()
        shutil.copy(KFD / name, tmp_path / str(i) / "properties")
    return tmp_path


@pytest.mark.parametrize(
    ("version", "name"),
    [(110000, "gfx1100"), (110501, "gfx1151"), (90010, "gfx90a"), (90402, "gfx942"), (100300, "gfx1030")],
)
def test_target_version_names(version: int, name: str) -> None:
    assert gfx_name(version) == name
    assert gfx_from_override(gfx_version(name) or "") == name


def test_recorded_topology_lists_gpus_in_node_order_and_skips_the_cpu(tmp_path: Path) -> None:
    nodes = topology(
        tmp_path, "properties_cpu.txt", "properties_gfx1100_7900xtx.txt", "properties_gfx1151_strix-halo.txt"
    )
    assert read_kfd_gfx(nodes) == ["gfx1100", "gfx1151"]
    assert read_kfd_gfx(tmp_path / "absent") == []


def test_supported_card_passes() -> None:
    result = check_gfx_support(["gfx1100"], TORCH_ARCHS)
    assert result.ok and "gfx1100" in result.message


def test_unsupported_card_names_the_override_that_would_run_it() -> None:
    result = check_gfx_support(["gfx1151"], TORCH_ARCHS)
    assert not result.ok
    assert result.message.startswith("GPU 0 is gfx1151, but this image's torch has kernels only for")
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0 to run gfx1100 kernels" in result.message
    assert check_gfx_support(["gfx1151"], TORCH_ARCHS, override="11.0.0").ok


def test_override_to_an_arch_torch_lacks_or_malformed_is_refused() -> None:
    lacking = check_gfx_support(["gfx1151"], TORCH_ARCHS, override="11.5.1")
    assert (
        not lacking.ok
        and "HSA_OVERRIDE_GFX_VERSION=11.5.1 makes GPU 0 (gfx1151) run gfx1151 kernels" in lacking.message
    )
    malformed = check_gfx_support(["gfx1100"], TORCH_ARCHS, override="11")
    assert (
        not malformed.ok and "HSA_OVERRIDE_GFX_VERSION='11' is not major.minor.stepping" in malformed.message
    )


def test_hidden_igpu_is_not_checked() -> None:
    both = check_gfx_support(["gfx1100", "gfx1036"], TORCH_ARCHS)
    assert not both.ok and "GPU 1 is gfx1036" in both.message and "HIP_VISIBLE_DEVICES" in both.message
    assert check_gfx_support(["gfx1100", "gfx1036"], TORCH_ARCHS, visible="0").ok


def test_no_gpu_or_no_arch_list_is_not_a_failure() -> None:
    assert check_gfx_support([], TORCH_ARCHS).ok
    assert check_gfx_support(["gfx1100"], ["sm_90"]).ok
