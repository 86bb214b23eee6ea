"""CPU used by other processes, from /proc/<pid>/stat: another job steals cycles from a timing.

"Other" means outside the caller's own process tree (the trainer is its child) and any pids it names.

Read by hand, not through psutil.process_iter: the scan is the 1 Hz sampler's dominant cost, which must
stay under 1% of a core, and psutil took 2.03× the CPU (27 vs 54 µs a process: the budget then holds
~370 processes, ~180 with psutil; reports/benchmarks/cpu/bench_libraries.txt). The offender's command
line, read only when the check fails, comes from psutil.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import psutil

from harness.guard.config import GuardConfig
from harness.guard.verdict import Reading, format_seconds

PROC = Path("/proc")
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcCpu:
    ppid: int
    comm: str
    cpu_s: float
    start_ticks: int  # tells a reused pid from the same process (comm changes: kworkers, exec)


def take_cpu_snapshot(proc: Path = PROC) -> dict[int, ProcCpu] | None:
    """user+system seconds of every visible process; None where the host has no /proc."""
    try:
        entries = os.listdir(proc)
    except OSError:
        return None
    snapshot: dict[int, ProcCpu] = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(proc / entry / "stat", "rb") as f:
                raw = f.read().decode("utf-8", "replace")
        except OSError:
            continue  # exited between listdir and open
        # comm sits in parentheses and may itself contain spaces or parentheses.
        head, _, tail = raw.rpartition(")")
        fields = tail.split()
        if len(fields) < 20:
            continue
        snapshot[int(entry)] = ProcCpu(
            ppid=int(fields[1]),
            comm=head.partition("(")[2],
            cpu_s=(int(fields[11]) + int(fields[12])) / _TICKS,
            start_ticks=int(fields[19]),
        )
    return snapshot


def process_tree(snapshot: dict[int, ProcCpu], root: int) -> set[int]:
    """root and all its descendants, as psutil's children(recursive=True) would find them."""
    children: dict[int, list[int]] = {}
    for pid, info in snapshot.items():
        children.setdefault(info.ppid, []).append(pid)
    tree, stack = {root}, [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in tree:
                tree.add(child)
                stack.append(child)
    return tree


def _cmdline(pid: int, fallback: str) -> str:
    """The offender's command line for the message (read only when a check fails, so psutil's cost is moot)."""
    try:
        text = " ".join(psutil.Process(pid).cmdline()).strip()
    except psutil.Error:  # exited, a zombie, or not ours to read
        return fallback
    return (text[:60] + "…") if len(text) > 60 else (text or fallback)


def cpu_reading(
    before: dict[int, ProcCpu],
    after: dict[int, ProcCpu],
    seconds: float,
    config: GuardConfig,
    exclude: set[int],
) -> Reading:
    """Percent of one core used during the window by processes not in `exclude`."""
    used: dict[int, float] = {}
    for pid, now in after.items():
        if pid in exclude:
            continue
        then = before.get(pid)
        # A process born during the window spent all its CPU time inside it.
        delta = now.cpu_s - (then.cpu_s if then and then.start_ticks == now.start_ticks else 0.0)
        if delta > 0:
            used[pid] = delta
    percent = 100.0 * sum(used.values()) / seconds
    ok = percent <= config.cpu_other_percent_limit
    detail = f"other processes used {percent:.0f}% of one core over {format_seconds(seconds)}"
    if not ok:
        top = sorted(used.items(), key=lambda item: -item[1])[:3]
        names = ", ".join(
            f"pid {pid} {_cmdline(pid, after[pid].comm)} {100 * s / seconds:.0f}%" for pid, s in top
        )
        detail += f" (limit {config.cpu_other_percent_limit:.0f}%; {names}) — another job?"
    return Reading("cpu_other", percent, "% of one core", config.cpu_other_percent_limit, ok, detail)
