"""Runs a benchmark setup for one seed, or hands back the record already on disk for it.

One `SuiteRunner` per pytest process (each xdist worker has its own), kept in `config.stash`. Runs go
through `harness.run.start.run_on_hosts` (one host: `harness.run.parent.run_setup`), in a child process
unless inline was asked for. Three things keep parallel sessions honest: a lock per record path (two workers needing the same run train it once),
the host-wide timed lock `run_setup` takes (two timings never overlap), and one GPU per xdist worker.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Literal

from harness.config import Override, SetupConfig
from harness.locks import exclusive_lock
from harness.results import RunRecord, fingerprint
from harness.suite.cache import Rerun, expected_path, lookup, wants_rerun
from harness.suite.setups import BenchSetup, load_bench_setup

How = Literal["trained", "re-ran", "reused"]


@dataclass(frozen=True)
class SuiteSettings:
    """The suite's options, validated (see `harness.suite.plugin` for their flags)."""

    stack: str
    seeds: tuple[int, ...]
    results_dir: Path
    model: str | None = None
    data: str | None = None
    overrides: tuple[str, ...] = ()
    allow_noisy: bool = False
    rerun: Rerun = "no"
    inline: bool = False
    quiet: bool = True
    other_stack: str | None = None

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

    def line(self) -> str:
        r = self.record
        reason = f" ({r.reason})" if r.reason and r.status != "ok" else ""
        return f"{self.how:<7} {r.experiment}/{r.setup_name} seed {r.seed}: {r.status}{reason} → {self.path}"


@dataclass
class SuiteRunner:
    settings: SuiteSettings
    worker: str | None = None  # the xdist worker id (gw0, gw1, …), None outside xdist
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    _memo: dict[tuple[str, bool], RunResult] = field(default_factory=dict)
    _setups: dict[Path, BenchSetup] = field(default_factory=dict)

    @cached_property
    def host(self) -> str:
        # Asked once, before any GPU pinning, so this process's host id matches the one `run_setup` records.
        from harness.provenance import collect_host

        return str(collect_host()["id"])

    @cached_property
    def gpu_pin(self) -> tuple[str, str] | None:
        """(env var, device) that gives this xdist worker's trainer children one GPU of their own."""
        if not self.worker or not self.worker.removeprefix("gw").isdigit():
            return None
        from harness.gpu.facts import visible_devices_var, visible_gpu_count

        name = visible_devices_var()
        given = os.environ.get(name)
        devices = given.split(",") if given else [str(i) for i in range(visible_gpu_count())]
        if len(devices) < 2:
            return None
        return name, devices[int(self.worker.removeprefix("gw")) % len(devices)]

    def bench_setup(self, path: Path) -> BenchSetup:
        if path not in self._setups:
            self._setups[path] = load_bench_setup(path)
        return self._setups[path]

    def resolve(self, bench: BenchSetup, seed: int, overrides: Sequence[Override] = ()) -> SetupConfig:
        return bench.resolve(seed, [*self.settings.setup_overrides(), *overrides])

    def run(self, setup: SetupConfig, *, timed: bool = False) -> RunResult:
        """The record for `setup` on this stack and host: from this session, from disk, or from a new run."""
        stack = self.settings.stack
        key = (fingerprint(setup.fingerprint_payload(), stack, self.host), timed)
        if key in self._memo:
            return self._memo[key]
        path = expected_path(self.settings.results_dir, setup, stack, self.host)
        with exclusive_lock(path.with_name(path.stem + ".lock"), what="record lock"):
            cached = lookup(self.settings.results_dir, setup, stack, self.host, timed=timed)
            if cached is not None and not (wants_rerun(cached, self.settings.rerun) and self._older(cached)):
                result = RunResult(cached, path, "reused")
            else:
                record, written = self._train(setup, timed)
                result = RunResult(record, written, "re-ran" if cached else "trained")
        self._memo[key] = result
        return result

    def cached(self, setup: SetupConfig, stack: str) -> tuple[RunRecord | None, Path]:
        """A record of another stack on this host, never run here (Exp E compares stacks run in two images)."""
        return lookup(self.settings.results_dir, setup, stack, self.host), expected_path(
            self.settings.results_dir, setup, stack, self.host
        )

    def _older(self, record: RunRecord) -> bool:
        # A record another worker wrote during this session is the re-run: do not re-run it again.
        try:
            return datetime.fromisoformat(record.created) < self.started.replace(microsecond=0)
        except ValueError:
            return True

    def _train(self, setup: SetupConfig, timed: bool) -> tuple[RunRecord, Path]:
        from harness.run.parent import RunOptions
        from harness.run.start import run_on_hosts

        options = RunOptions(
            results_dir=self.settings.results_dir, stack=self.settings.stack, timed=timed,
            allow_noisy=self.settings.allow_noisy, quiet=self.settings.quiet, isolate=not self.settings.inline,
        )  # fmt: skip
        _ = self.host  # resolved before pinning a GPU (see `host`)
        # A timed run takes the host-wide timed lock itself (harness.run.parent).
        with self._pinned():
            record, path = run_on_hosts(setup, options)
        if record.host != self.host:
            warnings.warn(
                f"run_setup recorded host {record.host!r} but the suite looks records up under {self.host!r}: "
                "this record will not be reused as a cache hit",
                stacklevel=2,
            )
        return record, path

    @contextmanager
    def _pinned(self) -> Generator[None]:
        """This worker's GPU for the trainer child only (the child reads the environment at start)."""
        if self.gpu_pin is None:
            yield
            return
        name, index = self.gpu_pin
        before = os.environ.get(name)
        os.environ[name] = index
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before
