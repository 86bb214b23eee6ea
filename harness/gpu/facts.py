"""GPU facts as torch and the machine tell them: the runtime (HIP, CUDA or none), each visible GPU's
name, arch and memory, how many GPUs the machine has, and which variable pins a process to some of them.

The one place lorabench asks torch about GPUs (torch's cuda API answers for ROCm/HIP and CUDA alike).
Each function skips quietly what the host cannot tell: no torch, no GPU, no nvidia-smi.
"""

from __future__ import annotations

import subprocess
from typing import Any


def gpu_runtime() -> str:
    """'hip', 'cuda' or 'cpu': what this torch build drives."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "hip" if getattr(torch.version, "hip", None) else ("cuda" if torch.version.cuda else "cpu")


def visible_gpu_count() -> int:
    """GPUs this process may use (after CUDA_/HIP_VISIBLE_DEVICES)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def visible_devices_var() -> str:
    """The variable that pins a process's children to some GPUs on this runtime."""
    return "HIP_VISIBLE_DEVICES" if gpu_runtime() == "hip" else "CUDA_VISIBLE_DEVICES"


def collect_gpus() -> dict[str, Any]:
    """The runtime and every visible GPU (name, arch, VRAM, multiprocessors); on CUDA also the driver
    and the machine's GPU count."""
    try:
        import torch
    except ImportError:
        return {}
    runtime = gpu_runtime()
    info: dict[str, Any] = {"runtime": runtime, "runtime_version": torch.version.hip or torch.version.cuda, "gpus": []}
    if not torch.cuda.is_available():
        return info
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        info["gpus"].append(
            {
                "index": index,
                "name": props.name,
                "arch": getattr(props, "gcnArchName", None) or f"sm_{props.major}{props.minor}",
                "vram_bytes": props.total_memory,
                "multiprocessors": props.multi_processor_count,
            }
        )
    if runtime == "cuda":
        info["driver"] = nvidia_driver()
        info["machine_gpus"] = machine_gpu_count()
    return {k: v for k, v in info.items() if v is not None}


def nvidia_driver() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def machine_gpu_count() -> int | None:
    """GPUs in the machine, not only those visible to this process: a run pinned to one card
    (CUDA_VISIBLE_DEVICES, a pytest-xdist worker) still belongs to the same host."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
