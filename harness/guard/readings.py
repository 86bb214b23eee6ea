"""Joins the collectors: a snapshot of the counters, readings from two snapshots, and the pre-check
before every timed phase (watch the machine for a short window, refuse if noisy).

Windowed readings (network, downloads, CPU) compare two snapshots; instant ones (memory, GPU)
are read once. A collector the host cannot serve yields no reading rather than a failure.
Memory matters because unified-memory APUs freeze the desktop instead of failing with OOM.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil

from harness.gpu.tools import GpuBusy, GpuProcess, probe_gpu_busy, probe_gpu_processes
from harness.guard.config import GuardConfig
from harness.guard.cpu import ProcCpu, cpu_reading, process_tree, take_cpu_snapshot
from harness.guard.downloads import downloads_reading, scan_partial_files, watched_dirs
from harness.guard.hostview import host_view, view_reading
from harness.guard.net import NetCounters, net_readings, read_net_counters
from harness.guard.verdict import GuardVerdict, Reading, format_bytes


@dataclass(frozen=True)
class Snapshot:
    time: float  # time.monotonic()
    net: dict[str, NetCounters] | None
    cpu: dict[int, ProcCpu] | None
    partial_files: dict[str, int] | None


def take_snapshot(config: GuardConfig) -> Snapshot:
    checks = set(config.checks)
    return Snapshot(
        time=time.monotonic(),
        net=read_net_counters() if "net" in checks else None,
        # The CPU snapshot also tells which processes are ours, which the GPU check needs.
        cpu=take_cpu_snapshot() if checks & {"cpu", "gpu"} else None,
        partial_files=(
            scan_partial_files(watched_dirs(config), config.download_patterns, config.download_scan_depth)
            if "downloads" in checks
            else None
        ),
    )


def excluded_pids(snapshot: Snapshot, extra: set[int] | None) -> set[int]:
    """The caller, its whole process tree (the trainer is a child) and any pids it names."""
    own = process_tree(snapshot.cpu, os.getpid()) if snapshot.cpu is not None else {os.getpid()}
    return own | (extra or set())


def windowed_readings(
    before: Snapshot, after: Snapshot, config: GuardConfig, exclude: set[int]
) -> list[Reading]:
    seconds = max(after.time - before.time, 1e-3)
    readings: list[Reading] = []
    if before.net is not None and after.net is not None:
        readings += net_readings(before.net, after.net, seconds, config)
    if before.partial_files is not None and after.partial_files is not None:
        readings.append(downloads_reading(before.partial_files, after.partial_files, seconds))
    if "cpu" in config.checks and before.cpu is not None and after.cpu is not None:
        readings.append(cpu_reading(before.cpu, after.cpu, seconds, config, exclude))
    return readings


def gpu_readings(config: GuardConfig, exclude: set[int], *, with_busy: bool) -> tuple[list[Reading], float]:
    """Foreign GPU processes (and busy % when asked); returns the readings and the tools' CPU cost."""
    readings: list[Reading] = []
    cpu_s = 0.0
    processes = probe_gpu_processes(config.tool_timeout_s, with_index=with_busy)
    if processes is not None:
        readings.append(foreign_process_reading(processes.value, exclude))
        cpu_s += processes.cpu_s
    if with_busy:
        busy = probe_gpu_busy(config.tool_timeout_s)
        if busy is not None:
            readings += busy_readings(busy.value, config)
            cpu_s += busy.cpu_s
    return readings, cpu_s


def instant_readings(config: GuardConfig, exclude: set[int]) -> list[Reading]:
    readings: list[Reading] = []
    if "view" in config.checks:
        readings.append(view_reading(host_view()))
    if "memory" in config.checks:
        readings.append(memory_reading(config))
    if "gpu" in config.checks:
        readings += gpu_readings(config, exclude, with_busy=True)[0]
    return readings


def memory_reading(config: GuardConfig) -> Reading:
    vm = psutil.virtual_memory()
    limit = max(config.memory_min_available_bytes, config.memory_min_available_fraction * vm.total)
    ok = vm.available >= limit
    detail = f"{format_bytes(vm.available)} memory available of {format_bytes(vm.total)}"
    if not ok:
        detail += f" (need {format_bytes(limit)}) — another job holding memory?"
    return Reading("memory_available", float(vm.available), "B", float(limit), ok, detail)


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


class Precheck:
    """A pre-check under way: started, it takes the first snapshot and the instant readings (memory, GPU)
    at once; `verdict()` waits out the window and compares the second snapshot with the first.

    A timed run starts its trainer between the two (harness.run.parent): the window then overlaps the
    trainer's imports, which run on the CPU in the caller's own process tree, never noise. The instant
    readings come before the trainer exists, so its memory and its GPU context are not read as another
    job's."""

    def __init__(self, config: GuardConfig, *, exclude_pids: set[int] | None = None) -> None:
        self.config, self.extra = config, exclude_pids
        self.before = take_snapshot(config)
        self.instant = instant_readings(config, excluded_pids(self.before, exclude_pids))

    def verdict(self) -> GuardVerdict:
        """Blocks until the window (3 s by default) has passed since the start; `reason` names the first
        failed reading and the --allow-noisy fix."""
        time.sleep(max(0.0, self.before.time + self.config.window_s - time.monotonic()))
        after = take_snapshot(self.config)
        exclude = excluded_pids(after, self.extra)
        readings = windowed_readings(self.before, after, self.config, exclude) + self.instant
        return GuardVerdict.from_readings(readings, host_view=host_view().to_dict())


def precheck(config: GuardConfig, *, exclude_pids: set[int] | None = None) -> GuardVerdict:
    """Readings over `config.window_s`, blocking for it. Processes in the caller's own tree are never noise."""
    return Precheck(config, exclude_pids=exclude_pids).verdict()
