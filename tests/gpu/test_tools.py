"""GPU probes: recorded real vendor outputs through the pure parsers, and through the real probe
code with a stand-in tool on PATH (the vendor tools are the only faked edge)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.gpu.tools import (
    parse_amd_smi_metric_json,
    parse_amd_smi_process_json,
    parse_nvidia_smi_compute_apps,
    parse_nvidia_smi_gpus,
    parse_rocm_smi_showpids_json,
    parse_rocm_smi_use_json,
    probe_gpu_busy,
    probe_gpu_processes,
    read_sysfs_busy,
)
from harness.guard import GuardConfig, Sampler, precheck

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def test_nvidia_smi_h200() -> None:
    busy, uuids = parse_nvidia_smi_gpus(recorded("nvidia-smi_query-gpu_h200.csv"))
    assert [b.percent for b in busy] == [100, 100, 0, 100, 0, 0, 0, 0]
    procs = parse_nvidia_smi_compute_apps(recorded("nvidia-smi_compute-apps_h200.csv"), uuids)
    assert [(p.pid, p.gpu) for p in procs] == [(1328667, "0"), (1328668, "1"), (1328669, "3"), (1758887, "7")]
    assert procs[0].used_bytes == 130004 * 2**20 and procs[3].name == "[Not Found]"
    assert parse_nvidia_smi_compute_apps(recorded("nvidia-smi_compute-apps_empty.csv")) == []


def test_amd_smi_both_process_shapes() -> None:
    (old,) = parse_amd_smi_process_json(recorded("amd-smi_process_mi300x.json"))
    assert (old.pid, old.name, old.gpu, old.used_bytes) == (28389, "llama-server", "0", 2353860608)
    new = parse_amd_smi_process_json(recorded("amd-smi_process_by-pid.json"))
    assert [(p.pid, p.gpu, p.used_bytes) for p in new] == [(2168274, "0", 48000), (2168274, "1", 65588000)]
    assert parse_amd_smi_process_json(recorded("amd-smi_process_none.json")) == []


def test_amd_smi_and_rocm_smi_busy() -> None:
    assert [
        (b.gpu, b.percent) for b in parse_amd_smi_metric_json(recorded("amd-smi_metric_usage_w7700.json"))
    ] == [("0", 42.0)]
    assert [(b.gpu, b.percent) for b in parse_rocm_smi_use_json(recorded("rocm-smi_showuse_780m.json"))] == [
        ("0", 19.0)
    ]


def test_rocm_smi_showpids_json() -> None:
    (proc,) = parse_rocm_smi_showpids_json(recorded("rocm-smi_showpids_mi300x.json"))
    assert (proc.pid, proc.name, proc.used_bytes) == (28389, "llama-server", 2353860608)


def test_sysfs_busy_percent(tmp_path: Path) -> None:
    for card, value in (("card0", "87\n"), ("card1", "3\n")):
        (tmp_path / card / "device").mkdir(parents=True)
        (tmp_path / card / "device" / "gpu_busy_percent").write_text(value)
    (tmp_path / "card0-DP-1").mkdir()  # connectors sit beside cards and have no such file
    assert [(b.gpu, b.percent) for b in read_sysfs_busy(tmp_path)] == [("0", 87.0), ("1", 3.0)]


def stand_in_nvidia_smi(bin_dir: Path, compute_apps: str, body: str | None = None) -> None:
    """An `nvidia-smi` that prints the recorded H200 outputs for the two queries the probe makes."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "nvidia-smi"
    script.write_text(
        body
        or (
            "#!/bin/sh\n"
            'case "$1" in\n'
            f"  --query-gpu=*) cat {DATA / 'nvidia-smi_query-gpu_h200.csv'} ;;\n"
            f"  --query-compute-apps=*) cat {DATA / compute_apps} ;;\n"
            "  *) exit 2 ;;\n"
            "esac\n"
        )
    )
    script.chmod(0o755)


@pytest.fixture
def tool_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return bin_dir


def test_foreign_gpu_process_is_refused(tool_path: Path) -> None:
    stand_in_nvidia_smi(tool_path, "nvidia-smi_compute-apps_h200.csv")
    verdict = precheck(GuardConfig(checks=("gpu",), window_s=0.1, gpu_busy_percent_limit=100))
    assert not verdict.ok
    assert "foreign GPU process pid 1328667 (/usr/local/bin/python3.10) on GPU 0" in (verdict.reason or "")
    assert "and 3 more" in (verdict.reason or "")


def test_busy_gpu_is_refused_and_idle_one_passes(tool_path: Path) -> None:
    stand_in_nvidia_smi(tool_path, "nvidia-smi_compute-apps_empty.csv")
    verdict = precheck(GuardConfig(checks=("gpu",), window_s=0.1))
    assert [r.name for r in verdict.failed] == ["gpu_busy:0", "gpu_busy:1", "gpu_busy:3"]
    assert verdict.reason is not None and "GPU 0 busy 100%" in verdict.reason
    assert next(r for r in verdict.readings if r.name == "gpu_foreign_processes").ok


def test_our_own_gpu_processes_are_not_foreign(tool_path: Path) -> None:
    stand_in_nvidia_smi(tool_path, "nvidia-smi_compute-apps_h200.csv")
    ours = {1328667, 1328668, 1328669, 1758887}
    verdict = precheck(
        GuardConfig(checks=("gpu",), window_s=0.1, gpu_busy_percent_limit=100), exclude_pids=ours
    )
    assert verdict.ok, verdict.reason


def test_no_tool_means_no_gpu_reading(tool_path: Path) -> None:
    assert probe_gpu_processes() is None and probe_gpu_busy() is None
    assert precheck(GuardConfig(checks=("gpu",), window_s=0.1)).readings == ()


def test_failing_or_hanging_tool_is_skipped_quietly(tool_path: Path) -> None:
    stand_in_nvidia_smi(tool_path, "", body="#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    assert probe_gpu_processes().value == []  # type: ignore[union-attr]
    stand_in_nvidia_smi(tool_path, "", body="#!/bin/sh\nexec sleep 30\n")
    assert probe_gpu_processes(timeout_s=0.3).value == []  # type: ignore[union-attr]


def test_sampler_sees_a_foreign_gpu_process_and_counts_the_tool_cpu(tool_path: Path) -> None:
    stand_in_nvidia_smi(tool_path, "nvidia-smi_compute-apps_h200.csv")
    config = GuardConfig(checks=("gpu",), sample_interval_s=0.2, gpu_check_every_s=0.3)
    with Sampler(config) as sampler:
        time.sleep(0.7)
    report = sampler.report()
    assert not report.valid and "foreign GPU process pid 1328667" in (report.reason or "")
    # The sampler names GPUs by uuid (one nvidia-smi call instead of two).
    assert "on GPU GPU-a44622e3" in (report.reason or "")
    assert report.cost_cpu_percent > 0
