"""The figures of one comparison of two setups, computed once for the scorecard's comparison tables and
for `report --json`: the speedup in train time and in steady step (ratio of means with a seeded 95%
bootstrap interval; none from one run a side), the exact-match difference with an exact McNemar test on
per-question outcomes paired by seed and question, and equivalence within a margin by TOST over seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness import stats
from harness.report.groups import SetupRuns, paired_outcomes
from harness.suite import claims


@dataclass(frozen=True)
class Speedup:
    ratio: float  # reference mean / setup mean: above 1, the setup is faster
    interval: stats.Interval | None  # seeded 95% bootstrap; None when a side has one run
    n_reference: int
    n_setup: int


def speedup(ref_seconds: Sequence[float], seconds: Sequence[float]) -> Speedup | None:
    if not (ref_seconds and seconds):
        return None
    ratio = stats.mean(ref_seconds) / stats.mean(seconds)
    interval = None
    if min(len(ref_seconds), len(seconds)) > 1:
        interval = stats.bootstrap_ratio_ci(ref_seconds, seconds, seed=0)
    return Speedup(ratio, interval, len(ref_seconds), len(seconds))


@dataclass(frozen=True)
class Accuracy:
    test: stats.TestResult  # A = the reference, B = the setup
    seeds: tuple[int, ...]  # the seeds whose predictions were paired


def accuracy(ref: SetupRuns, setup: SetupRuns) -> Accuracy | None:
    xs, ys, seeds = paired_outcomes(ref, setup)
    return Accuracy(stats.mcnemar_exact(xs, ys), tuple(seeds)) if xs else None


@dataclass(frozen=True)
class Equivalent:
    margin: float  # points
    result: stats.Equivalence | None  # None: fewer than 2 seeds run on both sides
    paired_seeds: int


def equivalence(ref: SetupRuns, setup: SetupRuns, margin: float) -> Equivalent:
    """TOST on the per-seed exact-match differences (paired by seed): the claims' own test."""
    paired = len({r.seed for r in ref.ok} & {r.seed for r in setup.ok})
    try:
        result, _ = claims.equivalence(ref.ok, setup.ok, margin)
    except claims.NotEvaluable:
        return Equivalent(margin, None, paired)
    return Equivalent(margin, result, paired)


@dataclass(frozen=True)
class PairFigures:
    train_time: Speedup | None
    step: Speedup | None
    accuracy: Accuracy | None
    equivalence: Equivalent
