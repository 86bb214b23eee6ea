"""GPU probes through whichever vendor tool the host has: amd-smi, rocm-smi, nvidia-smi, sysfs.

Each parser is a pure function over the tool's text, so tests feed recorded real outputs
(`tests/data/gpu/`, sources in its README). Each probe returns None when no tool exists and
skips quietly a tool that fails, hangs or prints something unexpected: the guard must never
crash a run because a vendor tool changed its format.

Not covered: NVML/amdsmi Python bindings (not always installed), MIG instances, and mapping
container pids to host pids (nvidia-smi may report pids of another pid namespace).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")

SYSFS_DRM = Path("/sys/class/drm")
NVIDIA_GPUS = ["nvidia-smi", "--query-gpu=index,uuid,utilization.gpu", "--format=csv"]


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    name: str
    gpu: str
    used_bytes: int | None
    tool: str


@dataclass(frozen=True)
class GpuBusy:
    """How busy one GPU is right now (percent of time running work)."""

    gpu: str
    percent: float
    tool: str


@dataclass(frozen=True)
class ToolRun:
    """A vendor tool's output and the CPU it cost (so the sampler can account for itself)."""

    text: str
    cpu_s: float


@dataclass(frozen=True)
class Probe(Generic[T]):  # Python 3.11: no PEP 695 syntax yet
    value: T
    cpu_s: float


_UNIT_BYTES = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def _to_bytes(value: Any, unit: str = "B") -> int | None:
    """Vendor tools give memory as numbers with a unit, sometimes inside a string: '6010 MiB'."""
    if isinstance(value, dict):
        return _to_bytes(value.get("value"), str(value.get("unit", unit)))
    if isinstance(value, int | float):
        factor = _UNIT_BYTES.get(unit.strip().lower())
        return int(value * factor) if factor else None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", value)
        if not match:
            return None
        return _to_bytes(float(match.group(1)), match.group(2) or unit)
    return None


def _csv_rows(text: str) -> list[dict[str, str]]:
    """nvidia-smi --format=csv: a header like 'used_gpu_memory [MiB]', then one row per item."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    reader = csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True)
    header = [re.sub(r"\s*\[.*\]$", "", name.strip()) for name in next(reader)]
    return [dict(zip(header, (cell.strip() for cell in row), strict=False)) for row in reader]


def parse_nvidia_smi_gpus(text: str) -> tuple[list[GpuBusy], dict[str, str]]:
    """`nvidia-smi --query-gpu=index,uuid,utilization.gpu --format=csv` → busy per GPU and uuid→index."""
    busy: list[GpuBusy] = []
    uuid_to_index: dict[str, str] = {}
    for row in _csv_rows(text):
        index = row.get("index", "?")
        if "uuid" in row:
            uuid_to_index[row["uuid"]] = index
        match = re.match(r"([0-9.]+)", row.get("utilization.gpu", ""))
        if match:
            busy.append(GpuBusy(gpu=index, percent=float(match.group(1)), tool="nvidia-smi"))
    return busy, uuid_to_index


def parse_nvidia_smi_compute_apps(text: str, uuid_to_index: dict[str, str] | None = None) -> list[GpuProcess]:
    """`nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv`."""
    uuid_to_index = uuid_to_index or {}
    processes: list[GpuProcess] = []
    for row in _csv_rows(text):
        if not row.get("pid", "").isdigit():
            continue
        uuid = row.get("gpu_uuid", "?")
        processes.append(
            GpuProcess(
                pid=int(row["pid"]),
                name=row.get("process_name", "?"),
                gpu=uuid_to_index.get(uuid, uuid),
                used_bytes=_to_bytes(row.get("used_gpu_memory", ""), "MiB"),
                tool="nvidia-smi",
            )
        )
    return processes


def parse_amd_smi_process_json(text: str) -> list[GpuProcess]:
    """`amd-smi process --json`, both shapes seen in the wild: per GPU with `process_list` (ROCm 6.x)
    and per pid with `gpus` (newer amd-smi)."""
    processes: list[GpuProcess] = []
    for entry in json.loads(text):
        if "process_list" in entry:
            for item in entry["process_list"]:
                info = item.get("process_info")
                if not isinstance(info, dict) or "pid" not in info:
                    continue  # "No running processes detected"
                memory = (
                    info.get("memory_usage", {}).get("vram_mem") or info.get("mem_usage") or info.get("mem")
                )
                processes.append(
                    GpuProcess(
                        int(info["pid"]),
                        str(info.get("name", "?")),
                        str(entry.get("gpu", "?")),
                        _to_bytes(memory),
                        "amd-smi",
                    )
                )
        elif "pid" in entry:
            for gpu in entry.get("gpus", []):
                memory = gpu.get("memory_usage", {}).get("vram_mem") or gpu.get("mem")
                processes.append(
                    GpuProcess(
                        int(entry["pid"]),
                        str(entry.get("name", "?")),
                        str(gpu.get("gpu_index", "?")),
                        _to_bytes(memory),
                        "amd-smi",
                    )
                )
    return processes


def parse_amd_smi_metric_json(text: str) -> list[GpuBusy]:
    """`amd-smi metric --usage --json`: gfx_activity per GPU (a list, or {"gpu_data": [...]})."""
    data = json.loads(text)
    entries = data.get("gpu_data", []) if isinstance(data, dict) else data
    busy: list[GpuBusy] = []
    for entry in entries:
        activity = entry.get("usage", {}).get("gfx_activity")
        value = activity.get("value") if isinstance(activity, dict) else activity
        if isinstance(value, int | float):
            busy.append(GpuBusy(gpu=str(entry.get("gpu", "?")), percent=float(value), tool="amd-smi"))
    return busy


def parse_rocm_smi_showpids_json(text: str) -> list[GpuProcess]:
    """`rocm-smi --showpids --json`: {"system": {"PID28389": "name, n_gpus, vram, sdma, cu"}}.
    rocm-smi reports how many GPUs a process uses, not which (ROCm/rocm_smi_lib#166)."""
    processes: list[GpuProcess] = []
    for key, value in json.loads(text).get("system", {}).items():
        if not key.startswith("PID") or not key[3:].isdigit():
            continue
        fields = [field.strip() for field in str(value).split(",")]
        vram = int(fields[2]) if len(fields) > 2 and fields[2].isdigit() else None
        processes.append(
            GpuProcess(
                int(key[3:]), fields[0], f"{fields[1] if len(fields) > 1 else '?'} GPU(s)", vram, "rocm-smi"
            )
        )
    return processes


def parse_rocm_smi_use_json(text: str) -> list[GpuBusy]:
    """`rocm-smi --showuse --json`: {"card0": {"GPU use (%)": "19", ...}}."""
    busy: list[GpuBusy] = []
    for card, fields in json.loads(text).items():
        value = fields.get("GPU use (%)") if isinstance(fields, dict) else None
        if value is not None and re.fullmatch(r"[0-9.]+", str(value)):
            busy.append(GpuBusy(gpu=card.removeprefix("card"), percent=float(value), tool="rocm-smi"))
    return busy


def read_sysfs_busy(root: Path = SYSFS_DRM) -> list[GpuBusy]:
    """amdgpu exposes `gpu_busy_percent` per card: one file read, far cheaper than any tool."""
    busy: list[GpuBusy] = []
    for path in sorted(root.glob("card[0-9]*/device/gpu_busy_percent")):
        try:
            busy.append(
                GpuBusy(
                    gpu=path.parent.parent.name.removeprefix("card"),
                    percent=float(path.read_text().strip()),
                    tool="sysfs",
                )
            )
        except (OSError, ValueError):
            continue
    return busy


def run_tool(argv: list[str], timeout_s: float = 5.0) -> ToolRun | None:
    """Run a vendor tool; None if it is absent, fails or hangs. Its CPU time is measured with wait4
    because nvidia-smi and amd-smi each cost tens of milliseconds of CPU per call."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None
    try:
        proc = subprocess.Popen(
            [exe, *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
    except OSError:
        return None
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        timer.cancel()
    cpu_s = usage.ru_utime + usage.ru_stime
    if proc.returncode != 0:
        return None
    return ToolRun(text=out.decode("utf-8", "replace"), cpu_s=cpu_s)


def _parsed(run: ToolRun | None, parse: Callable[[str], T]) -> T | None:
    if run is None:
        return None
    try:
        return parse(run.text)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # an unexpected format is "cannot tell", not a crash


def _available(tools: Iterable[str]) -> list[str]:
    return [tool for tool in tools if shutil.which(tool)]


def _ask(argv: list[str], parse: Callable[[str], list[T]], timeout_s: float) -> tuple[list[T], float]:
    """A tool's parsed answer ([] when it cannot tell) and the CPU it cost."""
    run = run_tool(argv, timeout_s)
    return _parsed(run, parse) or [], run.cpu_s if run else 0.0


def probe_gpu_processes(timeout_s: float = 5.0, *, with_index: bool = True) -> Probe[list[GpuProcess]] | None:
    """Processes on any GPU, from every vendor tool present; None when no tool exists.

    `with_index=False` saves the sampler a second nvidia-smi call: GPUs are then named by uuid.
    """
    tools = _available(("amd-smi", "rocm-smi", "nvidia-smi"))
    if not tools:
        return None
    found: list[GpuProcess] = []
    cpu_s = 0.0
    if "amd-smi" in tools:
        found, cpu_s = _ask(["amd-smi", "process", "--json"], parse_amd_smi_process_json, timeout_s)
    elif "rocm-smi" in tools:  # rocm-smi is the older tool for the same GPUs: ask only one
        found, cpu_s = _ask(["rocm-smi", "--showpids", "--json"], parse_rocm_smi_showpids_json, timeout_s)
    if "nvidia-smi" in tools:
        gpus = run_tool(NVIDIA_GPUS, timeout_s) if with_index else None
        uuid_map = (_parsed(gpus, parse_nvidia_smi_gpus) or ([], {}))[1]
        apps, apps_cpu_s = _ask(
            ["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,process_name,used_memory", "--format=csv"],
            lambda text: parse_nvidia_smi_compute_apps(text, uuid_map),
            timeout_s,
        )
        found += apps
        cpu_s += (gpus.cpu_s if gpus else 0.0) + apps_cpu_s
    return Probe(found, cpu_s)


def probe_gpu_busy(timeout_s: float = 5.0, sysfs_root: Path = SYSFS_DRM) -> Probe[list[GpuBusy]] | None:
    """Busy percent per GPU: sysfs first (free), then the vendor tools; None when nothing can tell."""
    busy = read_sysfs_busy(sysfs_root)
    cpu_s = 0.0
    tools = _available(("amd-smi", "rocm-smi", "nvidia-smi"))
    if not busy and "amd-smi" in tools:
        busy, cpu_s = _ask(["amd-smi", "metric", "--usage", "--json"], parse_amd_smi_metric_json, timeout_s)
    elif not busy and "rocm-smi" in tools:
        busy, cpu_s = _ask(["rocm-smi", "--showuse", "--json"], parse_rocm_smi_use_json, timeout_s)
    if "nvidia-smi" in tools:
        run = run_tool(NVIDIA_GPUS, timeout_s)
        busy += (_parsed(run, parse_nvidia_smi_gpus) or ([], {}))[0]
        cpu_s += run.cpu_s if run else 0.0
    if not busy and not tools:
        return None
    return Probe(busy, cpu_s)
