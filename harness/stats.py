"""Small statistics for few seeds and paired per-question outcomes, pure numpy + stdlib: mean, a seeded
bootstrap interval for a ratio of means, Student-t quantiles (for 3 seeds a normal quantile is far too
narrow), an exact McNemar test, Welch's t-test, and equivalence by two one-sided tests (TOST): "not
significant" is never proof of "the same". Not covered: multiple-comparison corrections, Bayesian anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _array(values: Sequence[float]) -> np.ndarray:
    data = np.asarray(values, dtype=float)
    if data.ndim != 1 or data.size == 0:
        raise ValueError(f"expected a non-empty list of numbers, got {list(values)!r}")
    return data


def mean(values: Sequence[float]) -> float:
    return float(np.mean(_array(values)))


# --- Student t, exact for integer degrees of freedom (Abramowitz & Stegun 26.7.3 / 26.7.4) ---


def t_cdf(t: float, df: int) -> float:
    """P(T ≤ t) for Student's t with integer df ≥ 1 (closed-form finite series, no scipy)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be ≥ 1, got {df}")
    theta = math.atan(abs(t) / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    if df % 2 == 1:
        total, term = 0.0, cos
        for k in range(1, (df - 1) // 2 + 1):
            total += term
            term *= cos * cos * (2 * k) / (2 * k + 1)
        inside = 2 / math.pi * (theta + sin * total) if df > 1 else 2 / math.pi * theta
    else:
        total, term = 0.0, 1.0
        for k in range(df // 2):
            total += term
            term *= cos * cos * (2 * k + 1) / (2 * k + 2)
        inside = sin * total
    # `inside` is P(|T| < |t|).
    return 0.5 + inside / 2 if t >= 0 else 0.5 - inside / 2


def t_quantile(p: float, df: int) -> float:
    """The t with P(T ≤ t) = p, by bisection on `t_cdf` (accurate to ~1e-10)."""
    if not 0 < p < 1:
        raise ValueError(f"probability must be in (0, 1), got {p}")
    low, high = -1e6, 1e6
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    level: float


def bootstrap_ratio_ci(
    numerator: Sequence[float],
    denominator: Sequence[float],
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Interval:
    """Interval for mean(numerator) / mean(denominator), each group resampled on its own (a speedup is
    old time / new time). With three seeds per group the interval is rough; it is still wider, and so
    more honest, than none. A group of one has nothing to resample: the interval then shows only the
    other group's spread, so callers print the n instead (as the scorecard does)."""
    top, bottom = _array(numerator), _array(denominator)
    rng = np.random.default_rng(seed)
    top_means = top[rng.integers(0, top.size, size=(n_resamples, top.size))].mean(axis=1)
    bottom_means = bottom[rng.integers(0, bottom.size, size=(n_resamples, bottom.size))].mean(axis=1)
    ratios = top_means / bottom_means
    alpha = (1 - level) / 2
    return Interval(float(np.quantile(ratios, alpha)), float(np.quantile(ratios, 1 - alpha)), level)


# --- paired tests ---


@dataclass(frozen=True)
class TestResult:
    """A two-sided test of B against A. `diff` is mean(B) − mean(A), in points for 0/1 outcomes."""

    method: str
    n: int
    diff: float
    p_value: float
    only_a: int = 0  # questions A got right and B wrong (McNemar's discordant pairs)
    only_b: int = 0

    def is_significant(self, alpha: float = 0.05) -> bool:
        return self.p_value < alpha


def _binomial_two_sided(k: int, n: int) -> float:
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2**n
    return min(1.0, 2 * tail)


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> TestResult:
    """Exact McNemar test on per-question right/wrong of two runs over the same questions.

    Only discordant questions carry information; under "no difference" each is equally likely to
    favour A or B, so the count favouring B is Binomial(discordant, 1/2)."""
    if len(a) != len(b):
        raise ValueError(f"paired outcomes need the same questions: {len(a)} vs {len(b)}")
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = len(a)
    diff = 100.0 * (only_b - only_a) / n if n else 0.0
    return TestResult("exact McNemar", n, diff, _binomial_two_sided(only_b, only_a + only_b), only_a, only_b)


@dataclass(frozen=True)
class Equivalence:
    """TOST: equivalent when the (1 − 2α) interval of the mean difference lies inside ±margin."""

    diff: float
    interval: Interval
    margin: float
    p_value: float  # the larger of the two one-sided p-values
    n: int

    @property
    def is_equivalent(self) -> bool:
        return -self.margin < self.interval.low and self.interval.high < self.margin


def tost(differences: Sequence[float], margin: float, alpha: float = 0.05) -> Equivalence:
    """Two one-sided t-tests that the mean paired difference lies within (−margin, +margin).

    With per-question 0/1 outcomes pass differences in points (±100 or 0) and the margin in points."""
    if margin <= 0:
        raise ValueError(f"the equivalence margin must be > 0, got {margin}")
    data = _array(differences)
    if data.size < 2:
        raise ValueError("TOST needs at least two paired differences")
    n, diff = data.size, float(data.mean())
    se = float(np.std(data, ddof=1)) / math.sqrt(n)
    if se == 0:
        inside = -margin < diff < margin
        return Equivalence(diff, Interval(diff, diff, 1 - 2 * alpha), margin, 0.0 if inside else 1.0, n)
    df = n - 1
    p_lower = 1 - t_cdf((diff + margin) / se, df)  # H0: diff ≤ −margin
    p_upper = t_cdf((diff - margin) / se, df)  # H0: diff ≥ +margin
    half = t_quantile(1 - alpha, df) * se
    return Equivalence(
        diff, Interval(diff - half, diff + half, 1 - 2 * alpha), margin, max(p_lower, p_upper), n
    )


def welch_test(a: Sequence[float], b: Sequence[float]) -> TestResult | None:
    """Welch's two-sample t-test (unequal variances) of mean(B) − mean(A); None with fewer than two
    values on a side. Degrees of freedom (Welch–Satterthwaite) are rounded down: conservative."""
    xa, xb = _array(a), _array(b)
    if xa.size < 2 or xb.size < 2:
        return None
    diff = float(xb.mean() - xa.mean())
    va, vb = float(np.var(xa, ddof=1)) / xa.size, float(np.var(xb, ddof=1)) / xb.size
    if va + vb == 0:
        return TestResult("Welch t", xa.size + xb.size, diff, 1.0 if diff == 0 else 0.0)
    t = diff / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (xa.size - 1) + vb**2 / (xb.size - 1))
    p = 2 * (1 - t_cdf(abs(t), max(1, math.floor(df))))
    return TestResult("Welch t", xa.size + xb.size, diff, min(1.0, p))
