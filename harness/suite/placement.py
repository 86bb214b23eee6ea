"""Where the suite's runs go (issue #40): one pytest-xdist worker per GPU on a multi-GPU host, each pinned to
its device through the run's `Placement` (harness/run/plan.py), and k workers per GPU on CUDA, where several
seeds at once were measured faster. A CPU host runs one seed at a time unless the user asks for `-n`.

Worker i of n sits on device i mod len(devices), in slot i // len(devices) of it. Under xdist a run holds
its slot's lock (a file lock in the host's lock folder, so two sessions' workers share the slots); a run
that must be alone on its devices (timed, or a setup of several GPUs) holds every slot of them, so it waits
for its siblings there and none starts beside it: the record then says it was not shared. A session of
one process has no siblings and takes no slot (the host-wide timed lock still keeps timings apart).
"""

from __future__ import annotations

import re
from collections.abc import Generator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from harness.cpuinfo import cores_each
from harness.json_types import JsonObject
from harness.locks import exclusive_lock, lock_dir
from harness.run.plan import Placement

# Exp A's 3 seeds on one H200 (issue #40): started at once by hand 48.4 s against 88.4 s one after another;
# `lorabench bench -- -k exp_a` warm, 3 workers sharing the GPU 68.9 s against 95.5 s with each seed alone
# (2026-12-03, reports/benchmarks/h200/2026-12-03-suite-placement.txt; 66.3 s, the median of 4, once the
# workers prewarm their trainers: …-suite-prewarm.txt); the same predictions either way. Through one CUDA MPS
# server (harness/gpu/mps.py) their steps take ~18 s where they took ~25 s (…-2026-12-04-suite-mps.txt).
CUDA_WORKERS_PER_GPU = 3
CPU = "cpu"
# Room left beside k runs' measured peaks: allocator fragmentation, CUDA contexts, eval's own peak.
MEMORY_HEADROOM = 0.8


def visible_devices(gpu_count: int, given: str | None) -> list[str]:
    """The GPUs a worker may be pinned to, as the visibility variable names them (its value when set)."""
    return given.split(",") if given else [str(i) for i in range(gpu_count)]


def default_workers(devices: Sequence[str], runtime: str | None) -> int:
    """The `-n` `lorabench bench` picks: k per GPU on CUDA, one per GPU elsewhere (ROCm is not measured),
    0 on a CPU host (no workers: its cores run one seed at a time)."""
    per_gpu = CUDA_WORKERS_PER_GPU if runtime == "cuda" else 1
    return len(devices) * per_gpu


@dataclass(frozen=True)
class Seat:
    """One worker's place: its device, its slot on it, and how many workers sit on that device."""

    device: str
    slot: int
    shared_by: int


def seat(worker: int, workers: int, devices: Sequence[str]) -> Seat:
    if not devices:
        return Seat(CPU, worker, workers)  # every worker shares the CPU
    index = worker % len(devices)
    return Seat(devices[index], worker // len(devices), len(range(index, workers, len(devices))))


def seat_memory(gpus: Sequence[Mapping[str, Any]], devices: Sequence[str], device: str) -> int | None:
    """The memory of the seat's own card: the host's facts list the visible GPUs in the order `devices` names
    them (on a host of a 24 GiB and an 80 GiB card, the first card's told the second's seats nothing)."""
    position = devices.index(device) if device in devices else len(gpus)
    memory = gpus[position].get("vram_bytes") if position < len(gpus) else None
    return memory if isinstance(memory, int) else None


@dataclass(frozen=True)
class Spread:
    """This worker among its siblings: which worker (0 outside xdist), how many, and the host's GPUs."""

    worker: int
    workers: int
    devices: tuple[str, ...]
    variable: str | None  # the GPU visibility variable; None on a CPU host
    siblings_root: int | None = None  # the xdist controller: its tree is the suite's own load
    mps_pipe: str | None = None  # the session's CUDA MPS server (harness/gpu/mps.py), for shared runs

    @property
    def seat(self) -> Seat:
        return seat(self.worker, self.workers, self.devices)

    def cpu_threads(self, cores: int) -> int | None:
        """Each worker's share of a CPU host's cores when several share it (`-n k`); None on a GPU host or alone.
        Left to torch, every run starts a thread per core and their spinning threads starve each other: two
        12-step SmolLM2 runs at once on 2 cores took 418 s with two threads each, 64 s with one (2026-12-05,
        docs/measurements.md)."""
        return cores_each(self.workers, cores) if not self.devices and self.workers > 1 else None

    def placement(self, gpus: int, *, alone: bool) -> Placement:
        """The run's devices: its worker's GPU (all of them for a setup of several GPUs, not narrowed),
        shared by its seat's workers unless it runs alone."""
        if gpus > 1:
            return Placement(devices=",".join(self.devices), siblings_root=self.siblings_root)
        mine = self.seat
        variable = self.variable if mine.device != CPU else None
        shared = 1 if alone else mine.shared_by
        return Placement(
            devices=mine.device,
            variable=variable,
            shared_by=shared,
            siblings_root=self.siblings_root,
            mps_pipe=self.mps_pipe if shared > 1 and variable else None,  # alone: a plain process
        )

    def slots(self, gpus: int, *, alone: bool) -> list[Seat]:
        """The slots a run holds: its own, or every slot of its devices when it must be alone."""
        mine = self.seat
        if self.workers <= 1:
            return []
        if not alone and gpus <= 1:
            return [mine]
        seats = {seat(i, self.workers, self.devices) for i in range(self.workers)}
        wanted = {mine.device} if gpus <= 1 else {s.device for s in seats}
        return sorted((s for s in seats if s.device in wanted), key=lambda s: (s.device, s.slot))


def fits_beside(peak_bytes: int | None, gpu_bytes: int | None, shared_by: int) -> bool:
    """Whether `shared_by` runs of a setup fit on one GPU at once, from an earlier run's peak;
    not known (no earlier run, no reading) is not fitting: the run then sits alone on its GPU. The peak may
    come from another GPU of the stack (SuiteRunner.fits_shared); the memory is always this host's."""
    if not peak_bytes or not gpu_bytes:
        return False
    return peak_bytes * shared_by <= MEMORY_HEADROOM * gpu_bytes


def slot_lock_name(slot: Seat) -> str:
    return "lorabench-device-" + re.sub(r"[^A-Za-z0-9_.-]", "_", slot.device) + f"-slot{slot.slot}.lock"


@contextmanager
def seated(slots: Sequence[Seat], *, timeout_s: float | None = None) -> Generator[None]:
    """Hold the slots' locks for the block, taken in one order (device, slot) by every worker: a worker
    holds one slot or takes all of a device's in that order, so no two wait on each other in a circle."""
    with ExitStack() as stack:
        for slot in slots:
            stack.enter_context(
                exclusive_lock(lock_dir() / slot_lock_name(slot), timeout_s=timeout_s, what="device slot")
            )
        yield


def workers_for_host(gpu_facts: JsonObject) -> int:
    """`default_workers` for a host as `harness.gpu.facts.collect_gpus` tells it; 0 when fewer than two
    workers would run (no xdist: one worker gains nothing)."""
    gpus = gpu_facts.get("gpus") or []
    devices = [str(gpu.get("index", i)) for i, gpu in enumerate(gpus)]
    workers = default_workers(devices, gpu_facts.get("runtime"))
    return workers if workers >= 2 else 0


def shares_gpus(gpu_facts: JsonObject, workers: int) -> bool:
    """Whether `workers` seat several runs on one CUDA GPU: those then go through one MPS server
    (harness/gpu/mps.py)."""
    gpus = gpu_facts.get("gpus") or []
    return gpu_facts.get("runtime") == "cuda" and workers > len(gpus)


def asks_for_workers(pytest_args: Sequence[str]) -> bool:
    """Whether the user chose the workers themselves: `-n`, `--numprocesses`, `--dist`, or xdist off."""
    for i, arg in enumerate(pytest_args):
        if arg in ("-p", "--plugin") and pytest_args[i + 1 : i + 2] == ["no:xdist"]:
            return True
        if re.match(r"(-n|--numprocesses|--dist|--maxprocesses|-pno:xdist)", arg):
            return True
    return False
