"""Hand-written /proc readers and lock vs the maintained libraries (psutil, filelock): cost per call, side by side.

Plain script, not collected by pytest:
  python dev/bench_libraries.py [--repeats 31] [--out reports/benchmarks/cpu/bench_libraries.txt]

Each case times a hand-written reader and the library call doing the same job, interleaved (hand, library,
library, hand, … within every repeat, so a neighbour's burst hits both), each timing the mean of a batch of
calls sized to ~10 ms. Timed: the calling thread's CPU time (what the guard sampler's 1% budget counts, and
what a neighbour's load disturbs least), and wall time beside it (a wait on the disk shows only there).
Printed: the median CPU per call of each over the repeats, and the median of the paired per-repeat ratios
library / hand, which is the figure to read (on a shared machine absolute times move with its load, the
paired ratio much less). Each case also checks that both sides give the same answer.

Where harness/ uses the library the hand-written side is a copy of what it replaced (commit 649fdc7), kept
here only to be measured; where harness/ kept the hand-written reader, its docstring quotes this output.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Generator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import filelock
import psutil

from harness.guard.cpu import ProcCpu, take_cpu_snapshot
from harness.guard.net import NetCounters, read_net_counters
from harness.locks import exclusive_lock
from harness.provenance import collect_memory

BATCH_S = 0.01


# --- the hand-written side where harness/ now calls a library (as of 649fdc7) --------------------------------


def hand_collect_memory() -> dict[str, int]:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return {"ram_bytes": int(line.split()[1]) * 1024}
    return {}


def hand_cmdline(pid: int, fallback: str) -> str:
    try:
        raw = (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return fallback
    text = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return (text[:60] + "…") if len(text) > 60 else (text or fallback)


_held: dict[tuple[int, int, int], list[int]] = {}  # key → [fd, depth]
_held_guard = threading.Lock()


@contextmanager
def hand_exclusive_lock(path: Path) -> Generator[Path]:
    """harness/locks.py before filelock: flock on a descriptor of our own, re-entrant per thread, the holder's
    name written in and emptied before unlocking (the waiting/timeout branch is left out: uncontended here)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    stat = os.fstat(fd)
    key = (stat.st_dev, stat.st_ino, threading.get_ident())
    with _held_guard:
        held = _held.get(key)
    if held is not None:
        os.close(fd)
        held[1] += 1
        try:
            yield path
        finally:
            held[1] -= 1
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with _held_guard:
            _held[key] = [fd, 1]
        try:
            os.ftruncate(fd, 0)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            os.pwrite(fd, f"pid {os.getpid()} since {stamp}: {' '.join(sys.argv)[:300]}\n".encode(), 0)
            yield path
        finally:
            with _held_guard:
                del _held[key]
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# --- the library side where harness/ kept its own reader ------------------------------------------------------


def psutil_cpu_snapshot() -> dict[int, ProcCpu]:
    """What take_cpu_snapshot returns, from psutil: its leanest form (no name: psutil's name() reads the
    command line too when the kernel's 15-character name is cut, so the name would be fetched only for the
    offenders a failed check names)."""
    snapshot: dict[int, ProcCpu] = {}
    for process in psutil.process_iter(["ppid", "cpu_times", "create_time"]):
        info = process.info
        if info["cpu_times"] is None:  # it exited, or is not ours to read
            continue
        cpu = info["cpu_times"]
        start = int(info["create_time"] * 100)
        snapshot[process.pid] = ProcCpu(info["ppid"], "", cpu.user + cpu.system, start)
    return snapshot


def psutil_net_counters() -> dict[str, NetCounters]:
    counters = psutil.net_io_counters(pernic=True)
    return {name: NetCounters(c.bytes_recv, c.bytes_sent) for name, c in counters.items()}


# --- the cases ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    hand: Callable[[], object]
    library: Callable[[], object]
    library_name: str
    agree: Callable[[], bool]  # same answer from both (a lock: both name their holder, then clear it)
    harness: str  # what harness/ uses now, and why


def same_answer(hand: Callable[[], object], library: Callable[[], object]) -> Callable[[], bool]:
    return lambda: hand() == library()


def same_processes() -> bool:
    """Same pids (give or take the few that start or exit between the two scans) with the same parents."""
    hand, library = take_cpu_snapshot() or {}, psutil_cpu_snapshot()
    common = set(hand) & set(library)
    return len(set(hand) ^ set(library)) <= 2 and all(hand[p].ppid == library[p].ppid for p in common)


def names_holder(lock: Callable[[Path], AbstractContextManager[Path]], path: Path) -> bool:
    with lock(path), lock(path):
        held = path.read_text()
    return held.startswith(f"pid {os.getpid()} since") and path.read_text() == ""


def cycle(lock: Callable[[Path], AbstractContextManager[Path]], path: Path, depth: int) -> Callable[[], None]:
    def run() -> None:
        with ExitStack() as stack:
            for _ in range(depth):
                stack.enter_context(lock(path))

    return run


def cases(folder: Path) -> list[Case]:
    pid, lock_path = os.getpid(), folder / "bench.lock"
    from harness.guard.cpu import _cmdline

    memory = (hand_collect_memory, collect_memory)
    cmdline = (lambda: hand_cmdline(pid, "?"), lambda: _cmdline(pid, "?"))
    net = (lambda: read_net_counters(Path("/proc/net/dev")), psutil_net_counters)

    def locks_agree() -> bool:
        return names_holder(hand_exclusive_lock, lock_path) and names_holder(exclusive_lock, lock_path)

    return [
        Case("CPU snapshot of every process (guard, 1 Hz)", take_cpu_snapshot, psutil_cpu_snapshot,
             "psutil.process_iter(ppid, cpu_times, create_time)", same_processes,
             "hand-written (harness/guard/cpu.py): the sampler's dominant cost; see the ratio"),
        Case("network byte counters (guard, 1 Hz)", *net, "psutil.net_io_counters(pernic=True)",
             lambda: set(net[0]() or {}) == set(net[1]()),
             "hand-written (harness/guard/net.py): psutil cannot read /proc/1/net/dev, the host's counters"),
        Case("total RAM (provenance, once a run)", *memory, "psutil.virtual_memory().total", same_answer(*memory),
             "psutil (harness/provenance.py)"),
        Case("a process's command line (guard message)", *cmdline, "psutil.Process(pid).cmdline()",
             same_answer(*cmdline), "psutil (harness/guard/cpu.py)"),
        Case("lock acquire + release, uncontended", cycle(hand_exclusive_lock, lock_path, 1),
             cycle(exclusive_lock, lock_path, 1), f"filelock {filelock.__version__} UnixFileLock", locks_agree,
             "filelock (harness/locks.py): a few locks a run"),
        Case("lock re-entered once in the same thread", cycle(hand_exclusive_lock, lock_path, 2),
             cycle(exclusive_lock, lock_path, 2), f"filelock {filelock.__version__} (is_singleton)", locks_agree,
             "filelock (harness/locks.py)"),
    ]  # fmt: skip


def batch_size(fn: Callable[[], object]) -> int:
    start = time.perf_counter()
    fn()
    return max(1, int(BATCH_S / max(time.perf_counter() - start, 1e-7)))


def per_call(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """(CPU seconds of this thread, wall seconds) per call, over a batch of `n` calls."""
    cpu, wall = time.thread_time(), time.perf_counter()
    for _ in range(n):
        fn()
    return (time.thread_time() - cpu) / n, (time.perf_counter() - wall) / n


@dataclass(frozen=True)
class Result:
    case: Case
    hand_s: float  # median CPU seconds a call
    library_s: float
    ratio: float  # median of the paired per-repeat CPU ratios library / hand
    ratio_low: float  # 10th and 90th percentile of those ratios
    ratio_high: float
    wall_ratio: float  # the same median for wall time (waits on the disk show here, not in CPU)
    same: bool


def paired(hands: list[float], libraries: list[float]) -> list[float]:
    """Per-repeat ratios library / hand, sorted; a repeat whose hand side read 0 (clock tick) is left out."""
    return sorted(lib / hand for hand, lib in zip(hands, libraries, strict=True) if hand > 0)


def measure(case: Case, repeats: int) -> Result:
    hand_n, library_n = batch_size(case.hand), batch_size(case.library)
    hands: list[tuple[float, float]] = []
    libraries: list[tuple[float, float]] = []
    for repeat in range(repeats):
        order = ((case.hand, hand_n, hands), (case.library, library_n, libraries))
        for fn, n, into in order if repeat % 2 == 0 else order[::-1]:
            into.append(per_call(fn, n))
    ratios = paired([h[0] for h in hands], [lib[0] for lib in libraries])
    walls = paired([h[1] for h in hands], [lib[1] for lib in libraries])
    deciles = statistics.quantiles(ratios, n=10) if len(ratios) >= 2 else [ratios[0]] * 9
    return Result(case, statistics.median(h[0] for h in hands), statistics.median(lib[0] for lib in libraries),
                  statistics.median(ratios), deciles[0], deciles[-1], statistics.median(walls),
                  case.agree())  # fmt: skip


def import_cost_ms(module: str, runs: int = 5) -> float:
    """Cumulative import time of `module` in a fresh interpreter (-X importtime), median of `runs`."""
    costs = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        line = next(ln for ln in reversed(done.stderr.splitlines()) if ln.rstrip().endswith(f"| {module}"))
        costs.append(int(line.split("|")[1]) / 1000)
    return statistics.median(costs)


def sampler_budget(snapshot: Result) -> list[str]:
    """The CPU snapshot against the sampler's budget (1% of one core at 1 Hz: 10 ms a second)."""
    processes = len(take_cpu_snapshot() or {})
    hand_us, library_us = (1e6 * s / processes for s in (snapshot.hand_s, snapshot.library_s))
    return [
        f"CPU snapshot at the sampler's 1 Hz: hand-written {100 * snapshot.hand_s:.2f}% of one core, psutil"
        f" {100 * snapshot.library_s:.2f}%, for {processes} processes ({hand_us:.0f} vs {library_us:.0f} µs a"
        " process).",
        f"Within the 1% budget (dev/bench_guard_cost.py) up to ~{10_000 / hand_us:.0f} processes hand-written,"
        f" ~{10_000 / library_us:.0f} with psutil; a host seen through `pid: host` shows all of its processes.",
    ]


def header(argv: list[str], repeats: int) -> list[str]:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    processes = len(psutil.pids())
    return [
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} cores, load average"
        f" {load:.1f} at start, {processes} processes visible, Python {platform.python_version()},"
        f" psutil {psutil.__version__}, filelock {filelock.__version__}",
        f"# python {shlex.join(argv)}",
        "# The machine is shared (5 helpers at once on 2 cores): absolute times move with its load; the paired",
        f"# ratios (hand and library interleaved within each of {repeats} repeats) are what count.",
        "",
    ]


def table(results: list[Result]) -> list[str]:
    lines = [
        "| reader | hand-written, CPU a call | library, CPU a call | library / hand, CPU (p10–p90) |"
        " library / hand, wall | same answer | library | harness/ uses |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for r in results:
        lines.append(
            f"| {r.case.name} | {r.hand_s * 1e6:,.1f} µs | {r.library_s * 1e6:,.1f} µs | {r.ratio:.2f}×"
            f" ({r.ratio_low:.2f}–{r.ratio_high:.2f}) | {r.wall_ratio:.2f}× | {'yes' if r.same else 'NO'}"
            f" | {r.case.library_name} | {r.case.harness} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=31, help="interleaved repeats per case (default 31)")
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    argv = ["dev/bench_libraries.py", *sys.argv[1:]]
    lines = header(argv, args.repeats)
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as folder:
        results = [measure(case, args.repeats) for case in cases(Path(folder))]
    lines += table(results)
    lines += ["", *sampler_budget(results[0])]
    lines += ["", f"import filelock in a fresh interpreter: {import_cost_ms('filelock'):.1f} ms (median of 5); a run"
              " paid it before harness/locks.py used filelock (at 649fdc7 `import harness.run.parent` loads it)"]  # fmt: skip
    print("\n".join(lines[len(header(argv, args.repeats)) :]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
