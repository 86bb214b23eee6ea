"""GPU facts as torch and the machine tell them: the runtime (HIP, CUDA or none), each visible GPU's
name, arch and memory, how many GPUs the machine has, and which variable pins a process to some of them.

The one place lorabench asks torch about GPUs (torch's cuda API answers for ROCm/HIP and CUDA alike).
Each function skips quietly what the host cannot tell: no torch, no GPU, no nvidia-smi.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

from harness.json_types import JsonObject


def gpu_runtime() -> str:
    """'hip', 'cuda' or 'cpu': what this torch build drives (from its version file while torch is not
    imported: a suite's processes place runs before any of them needs torch)."""
    if "torch" not in sys.modules and (build := torch_build()) is not None:
        return build[0]
    try:
        import torch
    except ImportError:
        return "cpu"
    return "hip" if getattr(torch.version, "hip", None) else ("cuda" if torch.version.cuda else "cpu")


def visible_gpu_count() -> int:
    """GPUs this process may use (after CUDA_/HIP_VISIBLE_DEVICES); told by nvidia-smi or a CPU build
    without importing torch where that answers as torch would. The suite's collection asked torch: 1.7 s
    of its 3.5 s on the 2-core Xeon, and a CUDA driver start in every xdist worker."""
    if "torch" not in sys.modules and (told := nvidia_gpus_without_torch()) is not None:
        return len(told["gpus"])
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def visible_devices_var() -> str:
    """The variable that pins a process's children to some GPUs on this runtime."""
    return "HIP_VISIBLE_DEVICES" if gpu_runtime() == "hip" else "CUDA_VISIBLE_DEVICES"


def collect_gpus() -> JsonObject:
    """The runtime and every visible GPU (name, arch, VRAM, multiprocessors); on CUDA also the driver
    and the machine's GPU count."""
    if "torch" not in sys.modules and (told := nvidia_gpus_without_torch()) is not None:
        return told
    try:
        import torch
    except ImportError:
        return {}
    runtime = gpu_runtime()
    info: JsonObject = {
        "runtime": runtime,
        "runtime_version": torch.version.hip or torch.version.cuda,
        "gpus": [],
    }
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
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
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


def torch_build() -> tuple[str, str | None] | None:
    """What this torch was built for, ('cpu' | 'cuda' | 'hip', version), read from torch/version.py without
    importing torch (a parent process that only records facts need not pay torch's import: 4.2 s on the
    H200 image, 4.7 s on the 2-core CPU machine); None where the file is missing or says neither plainly."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text(encoding="utf-8")
    except OSError:
        return None
    found = {}
    for name in ("cuda", "hip"):
        line = re.search(rf"^{name}\s*(?::\s*[\w\[\]]+\s*)?=\s*(.+)$", text, re.MULTILINE)
        if line is None:
            return None
        value = line.group(1).strip()
        quoted = re.fullmatch(r"['\"]([^'\"]+)['\"]", value)
        if value != "None" and quoted is None:
            return None
        found[name] = quoted.group(1) if quoted else None
    if found["hip"]:
        return "hip", found["hip"]
    return ("cuda", found["cuda"]) if found["cuda"] else ("cpu", None)


@functools.lru_cache(maxsize=4)
def _nvidia_smi_rows(path: str) -> tuple[tuple[str, ...], ...] | None:
    """Every GPU of the machine as nvidia-smi lists it, asked once per process (and PATH, which names the
    tool): a suite's worker asks for its placement, its host skips and its host id."""
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=index,name,memory.total,compute_cap,driver_version",
                "--format=csv,noheader,nounits",
            ],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
            env={**os.environ, "PATH": path},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    rows = tuple(tuple(f.strip() for f in line.split(",")) for line in out.stdout.strip().splitlines())
    # An index and all five fields on every line, or the answer is not read.
    return rows if all(len(row) == 5 and row[0].isdigit() for row in rows) else None


def nvidia_gpus_without_torch() -> JsonObject | None:
    """collect_gpus's answer without torch: a CPU build's (no GPUs), or from one nvidia-smi query for a
    CUDA build on an NVIDIA host; None
    (ask torch) where it cannot answer the same: no such build or tool, or CUDA_VISIBLE_DEVICES naming
    GPUs by anything but their index. Same names and count as torch gives, so the host's id and kind
    (harness/provenance.py) are the same; VRAM is the driver's total, not the part CUDA may allocate, and
    the multiprocessor count is left out (nvidia-smi does not give it)."""
    build = torch_build()
    if build is None or build[0] == "hip":
        return None
    if build[0] == "cpu":
        return {"runtime": "cpu", "runtime_version": None, "gpus": []}  # as torch says it: no GPU to drive
    cuda = build[1]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and not all(part.strip().isdigit() for part in visible.split(",") if part.strip()):
        return None
    rows = _nvidia_smi_rows(os.environ.get("PATH", ""))
    if rows is None:
        return None
    by_index = {int(row[0]): row for row in rows}
    order = (
        [int(part) for part in visible.split(",") if part.strip()]
        if visible is not None
        else sorted(by_index)
    )
    # CUDA stops at the first index it cannot find; so does this.
    chosen = [by_index[i] for i in itertools.takewhile(lambda i: i in by_index, order)]
    gpus = [
        {
            "index": position,
            "name": row[1],
            "arch": f"sm_{row[3].replace('.', '')}",
            "vram_bytes": int(row[2]) * 2**20,
        }
        for position, row in enumerate(chosen)
    ]
    info: JsonObject = {"runtime": "cuda", "runtime_version": cuda, "gpus": gpus}
    if by_index:
        info["driver"] = rows[0][4]
        info["machine_gpus"] = len(rows)
    return info
