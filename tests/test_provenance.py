"""The host's kind: what a record answers for (the fingerprint's host; the stand-in rule)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.provenance import (
    ENVIRONMENT,
    collect_cpu,
    collect_environment,
    collect_memory,
    collect_provenance,
    host_id,
    host_kind,
)

CPUINFO = Path(__file__).parent / "data" / "cpuinfo"


def cpu_host(name: str, cores: int = 2) -> dict:
    cpu = collect_cpu((CPUINFO / name).read_text(encoding="utf-8"))
    return {"cpu": {**cpu, "arch": "x86_64", "logical_cores": cores}}


def test_cpu_kind_is_arch_cores_and_tier_not_the_model_name() -> None:
    amx, zen4, avx2 = (
        cpu_host("intel-xeon-amx.txt"),
        cpu_host("amd-epyc-zen4.txt"),
        cpu_host("intel-broadwell-avx2.txt"),
    )
    assert host_kind(amx) == "cpu-x86-64-2c-amx"
    assert host_kind(zen4) == "cpu-x86-64-2c-avx512bf16"
    assert host_kind(avx2) == "cpu-x86-64-2c-avx2"
    assert host_id(amx) == "cpu-intel-r-xeon-r-processor-2c" and host_id(zen4) == "cpu-amd-epyc-2c"
    # Another model name of the same tier is the same kind; other cores are not (torch's threads).
    other_model = {"cpu": {**amx["cpu"], "model": "Intel(R) Xeon(R) Platinum 8480+"}}
    assert host_kind(other_model) == host_kind(amx) and host_id(other_model) != host_id(amx)
    assert host_kind(cpu_host("intel-xeon-amx.txt", cores=4)) != host_kind(amx)


def test_gpu_kind_is_its_id() -> None:
    host = {
        "cpu": {"arch": "x86_64", "logical_cores": 16},
        "gpus": [{"name": "NVIDIA H200"}] * 2,
        "machine_gpus": 2,
    }
    assert host_kind(host) == host_id(host) == "nvidia-h200x2"


def test_records_say_what_the_cpu_can_do() -> None:
    cpu = collect_cpu((CPUINFO / "intel-xeon-amx.txt").read_text(encoding="utf-8"))
    assert (cpu["isa"], cpu["bf16"], cpu["model"]) == ("amx", "amx_bf16", "Intel(R) Xeon(R) Processor")


def test_ram_is_the_kernels_memtotal() -> None:
    """psutil's total, not what is available now: a record's host must not change with the machine's load."""
    line = next(ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal:"))
    assert collect_memory() == {"ram_bytes": int(line.split()[1]) * 1024}


def test_the_runtime_environment_that_changes_a_figure_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("UNRELATED_TO_A_FIGURE", "x")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    environment = collect_provenance("cpu").environment or {}
    assert environment["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert environment["OMP_NUM_THREADS"] == "2"
    assert "LD_PRELOAD" not in environment  # unset is left out, not recorded as empty
    assert set(environment) <= set(ENVIRONMENT)


def test_every_variable_the_issue_names_is_watched() -> None:
    named = {
        "PYTORCH_CUDA_ALLOC_CONF",
        "LD_PRELOAD",
        "MALLOC_CONF",
        "GLIBC_TUNABLES",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
    }
    assert named <= set(ENVIRONMENT)
    assert collect_environment({"MALLOC_CONF": "background_thread:true", "HOME": "/root"}) == {
        "MALLOC_CONF": "background_thread:true"
    }
