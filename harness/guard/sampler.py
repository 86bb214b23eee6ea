"""The sampler: watches the machine at ~1 Hz during a timed phase, so noise that starts mid-run
marks the timing invalid instead of being silently kept.

Memory and GPU busy % are not sampled: during the phase our own trainer fills both (the memory
watchdog guards memory). Vendor GPU tools cost ~50 ms of CPU a call, so foreign GPU processes
are looked for every `gpu_check_every_s` only. The sampler measures its own CPU cost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from harness.guard.config import GuardConfig
from harness.guard.readings import Snapshot, excluded_pids, gpu_readings, take_snapshot, windowed_readings
from harness.guard.verdict import RERUN_FIX, GuardVerdict, Reading
from harness.json_types import JsonObject


@dataclass(frozen=True)
class NoisySample:
    """A sample with failed readings, kept for the record: [start, end] in unix time."""

    start: float
    end: float
    readings: tuple[Reading, ...]

    def to_dict(self) -> JsonObject:
        return {"start": self.start, "end": self.end, "readings": [r.to_dict() for r in self.readings]}


@dataclass(frozen=True)
class SamplerReport:
    valid: bool
    reason: str | None
    n_samples: int
    noisy_samples: tuple[NoisySample, ...]
    cost_cpu_percent: float  # of one core, over the sampler's lifetime
    window: tuple[float, float] | None

    def to_dict(self) -> JsonObject:
        return {
            "valid": self.valid,
            "reason": self.reason,
            "n_samples": self.n_samples,
            "noisy_samples": [s.to_dict() for s in self.noisy_samples],
            "cost_cpu_percent": self.cost_cpu_percent,
            "window": list(self.window) if self.window else None,
        }


class Sampler:
    """Context manager: a daemon thread samples every `config.sample_interval_s`; leaving the block
    takes one last sample so the tail of the phase is covered too."""

    def __init__(self, config: GuardConfig, *, exclude_pids_fn: Callable[[], set[int]] | None = None) -> None:
        self.config = config
        self._exclude_pids_fn = exclude_pids_fn
        self._samples: list[tuple[float, float, GuardVerdict]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cost_s = 0.0
        self._started: float | None = None
        self._stopped: float | None = None
        self._last_gpu = float("-inf")
        self._previous: tuple[float, Snapshot] | None = None

    def __enter__(self) -> Sampler:
        self._started = time.time()
        cost0 = time.thread_time()
        self._previous = (time.time(), take_snapshot(self.config))
        self._cost_s += time.thread_time() - cost0
        self._thread = threading.Thread(target=self._run, name="lorabench-guard-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._tick()
        self._stopped = time.time()

    def _run(self) -> None:
        while not self._stop.wait(self.config.sample_interval_s):
            self._tick()

    def _tick(self) -> None:
        cost0 = time.thread_time()
        tool_cpu_s = 0.0
        assert self._previous is not None
        start, before = self._previous
        end, after = time.time(), take_snapshot(self.config)
        extra = self._exclude_pids_fn() if self._exclude_pids_fn else None
        exclude = excluded_pids(after, extra)
        readings = windowed_readings(before, after, self.config, exclude)
        if "gpu" in self.config.checks and after.time - self._last_gpu >= self.config.gpu_check_every_s:
            self._last_gpu = after.time
            gpu, tool_cpu_s = gpu_readings(self.config, exclude, with_busy=False)
            readings += gpu
        verdict = GuardVerdict.from_readings(readings, prefix="noise during the timed phase", fix=RERUN_FIX)
        with self._lock:
            self._samples.append((start, end, verdict))
            self._previous = (end, after)
            self._cost_s += time.thread_time() - cost0 + tool_cpu_s

    @property
    def samples(self) -> list[tuple[float, GuardVerdict]]:
        """(unix time at the end of the sample's interval, verdict), oldest first."""
        with self._lock:
            return [(end, verdict) for _, end, verdict in self._samples]

    @property
    def cost_cpu_percent(self) -> float:
        if self._started is None:
            return 0.0
        elapsed = (self._stopped or time.time()) - self._started
        with self._lock:
            return 100.0 * self._cost_s / max(elapsed, 1e-9)

    def report(self, window: tuple[float, float] | None = None) -> SamplerReport:
        """Valid when every sample overlapping `window` (unix times; None = all) was quiet.

        Samples outside the window (model loading, evaluation) never invalidate the timing.
        """
        with self._lock:
            samples = list(self._samples)
        if window is not None:
            samples = [(s, e, v) for s, e, v in samples if e > window[0] and s < window[1]]
        noisy = tuple(NoisySample(s, e, v.failed) for s, e, v in samples if not v.ok)
        reason = None
        if not samples:
            reason = "timing invalid: the guard sampler took no sample in the timed window"
        elif noisy:
            first = noisy[0]
            offset = first.end - (window[0] if window else samples[0][0])
            reason = (
                f"timing invalid: {len(noisy)} of {len(samples)} guard samples noisy; first at"
                f" +{offset:.0f} s: {first.readings[0].detail} {RERUN_FIX}"
            )
        return SamplerReport(
            valid=reason is None,
            reason=reason,
            n_samples=len(samples),
            noisy_samples=noisy,
            cost_cpu_percent=self.cost_cpu_percent,
            window=window,
        )
