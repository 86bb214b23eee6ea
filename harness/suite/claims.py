"""The experiments' claims as assertions over run records, with messages that show every number.

Deliberately minimal math (mean, max − min, ratios of means) until `harness.stats` lands; the places
that should use a proper test are marked `STATS:`. Each function returns the figure it judged, so a
test can hand it to the report (`record_property`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

from harness import stats
from harness.results import RunRecord

GiB = 1024**3


def label(record: RunRecord) -> str:
    return f"{record.experiment}/{record.setup_name} seed {record.seed}"


def mean(values: Sequence[float]) -> float:
    if not values:
        raise AssertionError("no values to average: the claim needs at least one run")
    return sum(values) / len(values)


def exact_match(record: RunRecord) -> float:
    if record.trained is None:
        raise AssertionError(
            f"{label(record)}: no trained exact match in the record (status {record.status})"
        )
    return record.trained.exact_match


def train_seconds(record: RunRecord) -> float:
    seconds = record.train.train_s if record.train else None
    if not seconds:
        raise AssertionError(f"{label(record)}: no training time in the record")
    return seconds


def step_seconds(record: RunRecord) -> float:
    seconds = record.train.step_s if record.train else None
    if not seconds:
        raise AssertionError(f"{label(record)}: no steady step time in the record (made before train.step_s existed?)")
    return seconds


def peak_vram(record: RunRecord) -> int:
    peak = record.memory.peak_vram_bytes if record.memory else None
    if peak is None:
        raise AssertionError(
            f"{label(record)}: no peak VRAM in the record (device {record.memory and record.memory.device})"
        )
    return peak


def _table(records: Sequence[RunRecord], figure: Callable[[RunRecord], str]) -> str:
    return "; ".join(f"{label(r)}: {figure(r)}" for r in records)


def assert_gain(records: Sequence[RunRecord], min_points: float) -> list[float]:
    """Exact match after training minus before, in points, at least `min_points` on every run."""
    gains: list[float] = []
    for record in records:
        gain = record.gain
        if gain is None:
            raise AssertionError(f"{label(record)}: no baseline or trained score, cannot judge the gain")
        gains.append(gain)
    low = [(r, g) for r, g in zip(records, gains, strict=True) if g < min_points]
    if low:
        shown = "; ".join(
            f"{label(r)}: {r.baseline.exact_match:.1f} → {r.trained.exact_match:.1f} (gain {g:+.1f})"  # type: ignore[union-attr]
            for r, g in low
        )
        raise AssertionError(f"gain below {min_points:g} points: {shown}")
    return gains


def assert_seed_spread(records: Sequence[RunRecord], max_points: float) -> float:
    """max − min of trained exact match over seeds, at most `max_points`."""
    if len(records) < 2:
        raise AssertionError(f"seed spread needs at least 2 seeds, got {len(records)}")
    scores = [exact_match(r) for r in records]
    spread = round(max(scores) - min(scores), 1)
    if spread > max_points:
        shown = _table(records, lambda r: f"{exact_match(r):.1f}")
        raise AssertionError(f"seed spread {spread:.1f} points > bound {max_points:g}: {shown}")
    return spread


def assert_equivalent(a: Sequence[RunRecord], b: Sequence[RunRecord], margin: float) -> float:
    """Same accuracy within ±`margin` points by two one-sided tests (TOST) on the per-seed differences,
    paired by seed; returns the mean difference b − a. "Not significantly different" is never taken
    as "the same": with three seeds the interval is wide, and a claim may fail for want of evidence."""
    by_seed = {r.seed: r for r in a}
    pairs = [(by_seed[r.seed], r) for r in b if r.seed in by_seed]
    if len(pairs) < 2:
        raise AssertionError(f"equivalence needs at least two seeds run on both sides, got {len(pairs)}")
    result = stats.tost([exact_match(y) - exact_match(x) for x, y in pairs], margin)
    diff = round(result.diff, 1)
    if not result.is_equivalent:
        raise AssertionError(
            f"not shown equivalent within ±{margin:g} points: mean difference {diff:+.1f}, "
            f"90% interval [{result.interval.low:+.1f}, {result.interval.high:+.1f}] (TOST p={result.p_value:.3f}, "
            f"n={result.n} seeds) (A: {_table(a, lambda r: f'{exact_match(r):.1f}')}) "
            f"(B: {_table(b, lambda r: f'{exact_match(r):.1f}')})"
        )
    return diff


def assert_speedup(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord], min_ratio: float, per: str = "run"
) -> float:
    """Mean time of `baseline` / that of `candidate`; the lower end of its 95% bootstrap interval must
    reach `min_ratio` (a lucky mean alone does not pass). Returns the ratio of means. `per` = "run":
    the whole training span (warm-up and compile included); "step": the steady seconds per step
    (train.step_s), for claims about throughput that a short run's fixed costs would blur."""
    seconds = {"run": train_seconds, "step": step_seconds}[per]
    old, new = [seconds(r) for r in baseline], [seconds(r) for r in candidate]
    ratio = round(mean(old) / mean(new), 2)
    interval = stats.bootstrap_ratio_ci(old, new)
    if interval.low < min_ratio:
        unit = "s" if per == "run" else "s/step"
        digits = 0 if per == "run" else 3
        raise AssertionError(
            f"speedup {ratio:.2f}× per {per} (95% interval {interval.low:.2f}–{interval.high:.2f}×) does not reach "
            f"{min_ratio:g}×: baseline {_table(baseline, lambda r: f'{seconds(r):.{digits}f} {unit}')}; "
            f"candidate {_table(candidate, lambda r: f'{seconds(r):.{digits}f} {unit}')}"
        )
    return ratio


def assert_time_ratio(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord], max_ratio: float
) -> float:
    """How much slower `candidate` trains than `baseline` (ratio of means), at most `max_ratio`."""
    ratio = round(mean([train_seconds(r) for r in candidate]) / mean([train_seconds(r) for r in baseline]), 2)
    if ratio > max_ratio:
        raise AssertionError(f"time ratio {ratio:.2f}× > bound {max_ratio:g}×")
    return ratio


def assert_memory(records: Sequence[RunRecord], max_bytes: float) -> int:
    """Peak VRAM of every run within `max_bytes`; returns the largest peak."""
    worst = max(peak_vram(r) for r in records)
    if worst > max_bytes:
        shown = _table(records, lambda r: f"{peak_vram(r) / GiB:.2f} GiB")
        raise AssertionError(
            f"peak VRAM {worst / GiB:.2f} GiB over the budget {max_bytes / GiB:.2f} GiB: {shown}"
        )
    return worst


def assert_memory_saved(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord], predicted_bytes: float, min_share: float
) -> float:
    """Peak VRAM saved by `candidate` is at least `min_share` of the predicted saving; returns saved / predicted."""
    saved = mean([peak_vram(r) for r in baseline]) - mean([peak_vram(r) for r in candidate])
    share = round(saved / predicted_bytes, 2) if predicted_bytes > 0 else 0.0
    if share < min_share:
        raise AssertionError(
            f"peak VRAM saved {saved / GiB:.2f} GiB = {share:.2f} of the predicted {predicted_bytes / GiB:.2f} GiB, "
            f"below {min_share:g}"
        )
    return share


def assert_finite(records: Sequence[RunRecord]) -> None:
    """No NaN or inf in any training loss, and a scored generation on every run."""
    for record in records:
        losses = record.train.loss if record.train else []
        bad = [i for i, x in enumerate(losses, start=1) if not math.isfinite(x)]
        if bad:
            raise AssertionError(f"{label(record)}: non-finite training loss at step(s) {bad[:10]}")
        if not losses:
            raise AssertionError(f"{label(record)}: no training losses recorded")
        exact_match(record)  # generation ran and was scored


def assert_loads_staggered(record: RunRecord) -> float:
    """Under DDP each rank loaded the model only after the one before it had finished (the staggered-load
    lock, so the host never holds two copies in RAM at once): sorted by start, no load window begins
    before the previous one ended. Returns when the last rank started loading (the staggering's cost)."""
    windows = sorted(record.timings.load_windows or [])
    if len(windows) < 2:
        raise AssertionError(
            f"{label(record)}: no per-rank load windows in the record (one process, or a record made "
            f"before they were recorded)"
        )
    overlapping = [(a, b) for a, b in itertools.pairwise(windows) if b[0] < a[1]]
    if overlapping:
        shown = "; ".join(f"[{a[0]:.2f}, {a[1]:.2f}] s and [{b[0]:.2f}, {b[1]:.2f}] s" for a, b in overlapping)
        raise AssertionError(f"{label(record)}: ranks loaded the model at the same time: {shown}")
    return windows[-1][0]
