"""Runs a benchmark setup for one seed, or hands back the record already on disk for it.

One `SuiteRunner` per pytest process (each xdist worker has its own), kept in `config.stash`. Runs go
through `harness.run.start.run_on_hosts` (one host: `harness.run.parent.run_setup`), in a child process
unless inline was asked for. Three things keep parallel sessions honest: a lock per record path (two workers needing the same run train it once),
the host-wide timed lock `run_setup` takes (two timings never overlap), and a seat per xdist worker on its
device (harness/suite/placement.py: the run's devices travel in its plan, and the record says who shared them).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Literal

from harness.backends.checkpoint import is_resumable, latest
from harness.config import Override, SetupConfig
from harness.json_types import JsonObject
from harness.locks import exclusive_lock
from harness.results import RunRecord, record_lock_path, run_fingerprint
from harness.run.plan import checkpoint_folder
from harness.suite.cache import (
    DEFAULT_RERUN,
    HostKey,
    Rerun,
    expected_path,
    lookup,
    stand_in,
    wants_rerun,
    why_not_standing_in,
)
from harness.suite.expected import earlier_runs, expected_note
from harness.suite.host_gate import await_host_gate
from harness.suite.placement import CPU, Spread, fits_beside, seat_memory, seated, visible_devices
from harness.suite.progress import ProgressView
from harness.suite.setups import BenchSetup, load_bench_setup

How = Literal["trained", "re-ran", "reused"]
# (label, header, seeds of the setup after this one) → a block in which a trainer child's progress is shown.
FollowRun = Callable[[str, str, int], AbstractContextManager[ProgressView | None]]


@dataclass(frozen=True)
class SuiteSettings:
    """The suite's options, validated (see `harness.suite.plugin` for their flags)."""

    stack: str
    seeds: tuple[int, ...]
    results_dir: Path
    published_dir: Path | None = None  # committed records, read only: they stand in, never written
    model: str | None = None
    data: str | None = None
    overrides: tuple[str, ...] = ()
    allow_noisy: bool = False
    rerun: Rerun = DEFAULT_RERUN
    inline: bool = False
    quiet: bool = True
    other_stack: str | None = None
    progress: Literal["auto", "live", "lines", "off"] = "auto"
    progress_every_s: float = 30.0
    mps_pipe: str | None = None  # the controller's CUDA MPS server, when it started one (harness/gpu/mps.py)
    setups: tuple[
        Path, ...
    ] = ()  # folders of setup files whose claims are the cases (none: the built-in folder)
    host_checks: Path | None = None  # bench's verdict file: runs that train wait for it (host_gate.py)
    warm_pool: Path | None = None  # bench's warm trainer servers, one per worker (harness/run/warm_pool.py)

    def setup_overrides(self) -> list[Override]:
        """Overrides every setup gets, before a case's own: data, model, then `--lorabench-set`."""
        found: list[Override] = [("data.source", self.data)] if self.data else []
        found += [("model.source", self.model)] if self.model else []
        return found + list(self.overrides)


@dataclass(frozen=True)
class RunResult:
    record: RunRecord
    path: Path
    how: How
    note: str | None = None  # a record of another host stood in, or why none could
    published: bool = False  # read from the published (committed) records, not the user's folder

    def line(self) -> str:
        r = self.record
        reason = f" ({r.reason})" if r.reason and r.status != "ok" else ""
        origin = "published" if self.published else "yours"
        notes = "; ".join(n for n in (origin, self.note) if n)
        return f"{self.how:<7} {r.experiment}/{r.setup_name} seed {r.seed}: {r.status}{reason} → {shown(self.path)} [{notes}]"


def shown(path: Path) -> Path:
    """A path as the user reads it: relative to where they ran the command when it lies below it (the
    same words on the host and inside a container whose working folder is the mounted checkout)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


@dataclass
class SuiteRunner:
    settings: SuiteSettings
    worker: str | None = None  # the xdist worker id (gw0, gw1, …), None outside xdist
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    follow: FollowRun | None = None  # shows a trainer child's progress past pytest's capture
    _memo: dict[tuple[str, bool], RunResult] = field(default_factory=dict)
    _setups: dict[Path, BenchSetup] = field(default_factory=dict)

    @cached_property
    def host_facts(self) -> JsonObject:
        # Asked once, before any GPU pinning, so this process's host matches the one `run_setup` records.
        from harness.provenance import collect_host

        return collect_host()

    @cached_property
    def host_key(self) -> HostKey:
        return HostKey(str(self.host_facts["id"]), str(self.host_facts["kind"]))

    @property
    def host(self) -> str:
        return self.host_key.id

    @cached_property
    def spread(self) -> Spread:
        """This worker among the session's xdist workers and the host's GPUs (one worker outside xdist)."""
        from harness.gpu.facts import visible_devices_var, visible_gpu_count

        index = self.worker.removeprefix("gw") if self.worker else ""
        in_xdist = index.isdigit()
        count = visible_gpu_count()
        name = visible_devices_var() if count else None
        return Spread(
            worker=int(index) if in_xdist else 0,
            workers=int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) if in_xdist else 1,
            devices=tuple(visible_devices(count, os.environ.get(name) if name else None)),
            variable=name,
            siblings_root=self._siblings_root() if in_xdist else None,
            mps_pipe=self.settings.mps_pipe,
        )

    def _siblings_root(self) -> int:
        """The xdist controller, whose tree holds the suite's workers and their trainers; with bench's warm
        pool, bench (the pool's servers and the trainers they fork are its children)."""
        controller = os.getppid()
        if self.settings.warm_pool is None:
            return controller
        import psutil

        try:
            return psutil.Process(controller).ppid() or controller
        except psutil.Error:
            return controller

    def bench_setup(self, path: Path) -> BenchSetup:
        if path not in self._setups:
            self._setups[path] = load_bench_setup(path)
        return self._setups[path]

    def resolve(self, bench: BenchSetup, seed: int, overrides: Sequence[Override] = ()) -> SetupConfig:
        return bench.resolve(seed, [*self.settings.setup_overrides(), *overrides])

    def run(self, setup: SetupConfig, *, timed: bool = False) -> RunResult:
        """The record for `setup` on this stack and host: from this session, from disk, or from a new run."""
        stack, results = self.settings.stack, self.settings.results_dir
        key = (run_fingerprint(setup, stack, self.host_key.kind), timed)
        if key in self._memo:
            return self._memo[key]
        path = expected_path(results, setup, stack, self.host)
        published = self.settings.published_dir
        with exclusive_lock(record_lock_path(path), what="record lock"):
            cached = lookup(results, setup, stack, self.host_key, timed=timed)
            # The user's folder first, then the published records: this host's own, then (untimed claims
            # only) one of another host of this kind (the rule: harness/suite/cache.py).
            published_own: RunRecord | None = None
            ours = other = None
            if cached is None and published is not None:
                published_own = lookup(published, setup, stack, self.host_key, timed=timed)
            if cached is None and published_own is None and not timed:
                other = stand_in(results, setup, stack, self.host_key)
                ours = other
                if other is None and published is not None:
                    other = stand_in(published, setup, stack, self.host_key)
            if cached is not None and not (wants_rerun(cached, self.settings.rerun) and self._older(cached)):
                result = RunResult(cached, path, "reused")
            elif published_own is not None and not wants_rerun(published_own, self.settings.rerun):
                own_path = expected_path(published, setup, stack, self.host)  # type: ignore[arg-type]
                result = RunResult(published_own, own_path, "reused", published=True)
            elif other is not None and not wants_rerun(other[0], self.settings.rerun):
                note = f"stands in: made on host {other[0].host}, of this host's kind {self.host_key.kind}"
                result = RunResult(other[0], other[1], "reused", note, published=other is not ours)
            else:
                not_used = [] if cached else self._not_standing_in(setup, timed)
                note = "not standing in: " + "; ".join(not_used) if not_used else None
                if cached:
                    why = f"its record is {cached.status}, running it again"
                elif not_used:
                    why = "no record of this setup stands in"
                else:
                    why = "no record of this setup on this host"
                record, written = self._train(setup, timed, note, why)
                result = RunResult(record, written, "re-ran" if cached or other else "trained", note)
        self._memo[key] = result
        return result

    def _not_standing_in(self, setup: SetupConfig, timed: bool) -> list[str]:
        stack, results, published = (
            self.settings.stack,
            self.settings.results_dir,
            self.settings.published_dir,
        )
        reasons = why_not_standing_in(results, setup, stack, self.host_key, timed=timed)
        if published is not None and published.resolve() != results.resolve():
            reasons += why_not_standing_in(
                published, setup, stack, self.host_key, timed=timed, tag=" (published)"
            )
        return reasons

    def cached(self, setup: SetupConfig, stack: str) -> tuple[RunRecord | None, Path]:
        """A record of another stack on this host, never run here (Exp E compares stacks run in two images):
        the user's, else the published one."""
        for folder in self._folders:
            record = lookup(folder, setup, stack, self.host_key)
            if record is not None:
                return record, expected_path(folder, setup, stack, self.host)
        return None, expected_path(self.settings.results_dir, setup, stack, self.host)

    @property
    def _folders(self) -> list[Path]:
        """The user's results folder, then the published one (when there is one)."""
        return [
            self.settings.results_dir,
            *([self.settings.published_dir] if self.settings.published_dir else []),
        ]

    def _older(self, record: RunRecord) -> bool:
        # A record another worker wrote during this session is the re-run: do not re-run it again.
        try:
            return datetime.fromisoformat(record.created) < self.started.replace(microsecond=0)
        except ValueError:
            return True

    def _train(
        self,
        setup: SetupConfig,
        timed: bool,
        note: str | None = None,
        why: str = "no record of this setup on this host",
    ) -> tuple[RunRecord, Path]:
        from harness.run.start import run_on_hosts
        from harness.run.supervisor import RunOptions, summary_line

        if self.settings.host_checks is not None:  # bench's host checks, run beside pytest's start
            await_host_gate(self.settings.host_checks)
        shares, placed = self.fits_shared(setup)
        alone = timed or not shares
        options = RunOptions(
            results_dir=self.settings.results_dir,
            stack=self.settings.stack,
            timed=timed,
            allow_noisy=self.settings.allow_noisy,
            quiet=self.settings.quiet,
            isolate=not self.settings.inline,
            checkpoints=not timed,
            # A timed run, or one of several GPUs, sits alone on its devices (harness/suite/placement.py).
            placement=self.spread.placement(setup.gpus, alone=alone),
        )
        _ = self.host_key
        label = f"{setup.experiment}/{setup.name} seed {setup.recipe.seed}"
        header = f"{why}: " + ("timed run" if timed else "training") + (f" ({note})" if note else "")
        # A timed run takes the host-wide timed lock itself (harness.run.parent).
        # A timed run saves no checkpoints (the saves would be in its time): stopped, it runs again from step 0.
        checkpoints = None if timed else self.checkpoint_dir(setup)
        resumes = latest(checkpoints) if checkpoints and is_resumable(setup) else None
        if resumes:
            header += f"; resuming from step {resumes[1].step} ({shown(resumes[0])})"
        if placed and not timed:  # a timed run is alone by rule: "timed run" says so
            header += f"; {placed}"
        # What it will take, before it starts: from an earlier run of this setup on this host, if any.
        header += "; " + expected_note(
            self._folders,
            setup,
            self.settings.stack,
            self.host_key,
            more_runs=self._seeds_after(setup),
            shown=shown,
        )
        follow = self.follow(label, header, self._seeds_after(setup)) if self.follow else nullcontext()
        with seated(self.spread.slots(setup.gpus, alone=alone)), follow as view:
            if view is not None:  # the trainer writes its progress lines where the view reads them
                options = replace(options, progress_file=view.progress_file)
            # The run removes its checkpoints once it has a record that is not `killed`.
            record, path = run_on_hosts(setup, options)
            if view is not None:
                view.finish(summary_line(record, shown(path)))
        if record.host != self.host:
            warnings.warn(
                f"run_setup recorded host {record.host!r} but the suite looks records up under {self.host!r}: "
                "this record will not be reused as a cache hit",
                stacklevel=2,
            )
        return record, path

    def fits_shared(self, setup: SetupConfig) -> tuple[bool, str]:
        """Whether the run may share its GPU with its seat's siblings, and the phrase that says why: an
        earlier run of the setup (the user's records or the published ones) peaked low enough for all of
        them at once in this host's GPU memory. No phrase where it has no siblings, nor for a setup of
        several GPUs (it holds every slot of them: harness/suite/placement.py)."""
        seat = self.spread.seat
        if seat.shared_by <= 1 or seat.device == CPU or setup.gpus > 1:
            return True, ""
        stack = self.settings.stack
        here = earlier_runs(self._folders, setup, stack, self.host_key)[:1]
        # A run's peak is set by its setup and stack, not by the card it ran on: with no run on this host,
        # the stack's runs on other GPUs tell it (a fresh H100 seated each of Exp A's seeds alone, the H200's
        # published records beside it: suite 62-75 s, 2026-12-05). The largest of them, to be safe.
        found = here or earlier_runs(self._folders, setup, stack, self.host_key, elsewhere=True)
        measured = [
            (r.memory.peak_vram_bytes, r.host) for r, _ in found if r.memory and r.memory.peak_vram_bytes
        ]
        memory = seat_memory(self.host_facts.get("gpus") or [], self.spread.devices, seat.device)
        if not measured:
            return (
                False,
                f"alone on GPU {seat.device}: no run of this setup on stack {stack} tells its peak VRAM",
            )
        if not memory:
            return False, f"alone on GPU {seat.device}: its memory was not read"
        peak, host = max(measured)
        told = f"a peak of {peak / 2**30:.2f} GiB on {'this host' if host == self.host else host}"
        if fits_beside(peak, memory, seat.shared_by):
            return True, f"on GPU {seat.device} beside {seat.shared_by - 1} other run(s): {told}"
        return (
            False,
            f"alone on GPU {seat.device}: {seat.shared_by} runs of {told} would not fit in its memory",
        )

    def _seeds_after(self, setup: SetupConfig) -> int:
        """The runs of this setup's other seeds that follow this one: one after another in one process;
        under xdist its workers take the seeds `workers` at a time, so only the later rounds follow (Exp A's
        three seeds on one H200's three workers: none; the line said "~1:57 with the 2 seed(s) after it"
        for a 53 s suite)."""
        seeds, workers = self.settings.seeds, self.spread.workers
        if setup.recipe.seed not in seeds:
            return 0
        rounds = -(-len(seeds) // workers)
        return rounds - 1 - seeds.index(setup.recipe.seed) // workers

    def checkpoint_dir(self, setup: SetupConfig) -> Path:
        """Where this run's resumable checkpoints live: beside the results, outside any work folder, keyed
        by the fingerprint (a checkpoint never resumes a run of other settings)."""
        fp = run_fingerprint(setup, self.settings.stack, self.host_key.kind)
        return checkpoint_folder(self.settings.results_dir, self.settings.stack, self.host, setup, fp)
