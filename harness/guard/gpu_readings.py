"""Guard readings from the GPU probes: foreign GPU processes, and how busy each GPU is."""

from __future__ import annotations

from harness.gpu.tools import GpuBusy, GpuProcess
from harness.guard.config import GuardConfig
from harness.guard.verdict import Reading, format_bytes


def foreign_process_reading(processes: list[GpuProcess], exclude: set[int]) -> Reading:
    foreign = [p for p in processes if p.pid not in exclude]
    if not foreign:
        return Reading(
            "gpu_foreign_processes",
            0,
            "processes",
            0,
            True,
            f"no foreign GPU process ({len(processes)} of ours)",
        )
    first = foreign[0]
    memory = f" using {format_bytes(first.used_bytes)}" if first.used_bytes is not None else ""
    more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
    detail = (
        f"foreign GPU process pid {first.pid} ({first.name}) on GPU {first.gpu}{memory}{more},"
        f" seen by {first.tool} — another job?"
    )
    return Reading("gpu_foreign_processes", len(foreign), "processes", 0, False, detail)


def busy_readings(busy: list[GpuBusy], config: GuardConfig) -> list[Reading]:
    readings = []
    for gpu in busy:
        ok = gpu.percent <= config.gpu_busy_percent_limit
        detail = f"GPU {gpu.gpu} busy {gpu.percent:.0f}% ({gpu.tool})"
        if not ok:
            detail += f" (limit {config.gpu_busy_percent_limit:.0f}%) — another job on the GPU?"
        readings.append(
            Reading(f"gpu_busy:{gpu.gpu}", gpu.percent, "%", config.gpu_busy_percent_limit, ok, detail)
        )
    return readings
