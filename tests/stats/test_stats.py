"""Known answers: textbook t quantiles, hand-computed McNemar p-values, TOST cases where the answer is
decided by arithmetic, and the rule that "not significant" is not "equivalent"."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness import stats


def test_mean() -> None:
    assert stats.mean([1, 2, 6]) == 3
    with pytest.raises(ValueError, match="non-empty"):
        stats.mean([])


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [(0.975, 1, 12.7062), (0.975, 2, 4.3027), (0.95, 4, 2.1318), (0.975, 10, 2.2281), (0.95, 99, 1.6604)],
)
def test_t_quantile_matches_tables(p: float, df: int, expected: float) -> None:
    assert stats.t_quantile(p, df) == pytest.approx(expected, abs=1e-4)


def test_t_cdf_symmetry_and_cauchy() -> None:
    # df = 1 is the Cauchy distribution: P(T ≤ 1) = 3/4.
    assert stats.t_cdf(1.0, 1) == pytest.approx(0.75)
    assert stats.t_cdf(-2.0, 5) == pytest.approx(1 - stats.t_cdf(2.0, 5))
    assert stats.t_cdf(0.0, 7) == pytest.approx(0.5)


def test_bootstrap_ratio_is_seeded_and_brackets_the_ratio() -> None:
    old, new = [200.0, 210.0, 190.0, 260.0], [100.0, 104.0, 98.0, 101.0]
    a = stats.bootstrap_ratio_ci(old, new, seed=7)
    assert a == stats.bootstrap_ratio_ci(old, new, seed=7)
    assert a != stats.bootstrap_ratio_ci(old, new, seed=8)
    assert a.low < np.mean(old) / np.mean(new) < a.high
    assert a.low >= min(old) / max(new) and a.high <= max(old) / min(new)


def test_bootstrap_ratio_of_constant_groups_is_exact() -> None:
    ci = stats.bootstrap_ratio_ci([200.0, 200.0, 200.0], [100.0, 100.0, 100.0])
    assert (ci.low, ci.high) == (2.0, 2.0)


def test_mcnemar_exact_known_answers() -> None:
    # 10 discordant questions, all favour B: p = 2 · 0.5^10.
    a = [False] * 10 + [True] * 90
    b = [True] * 100
    result = stats.mcnemar_exact(a, b)
    assert (result.only_a, result.only_b) == (0, 10)
    assert result.p_value == pytest.approx(2 / 1024)
    assert result.diff == pytest.approx(10.0)
    # 5 vs 5 discordant: no evidence at all.
    even = stats.mcnemar_exact([True] * 5 + [False] * 5, [False] * 5 + [True] * 5)
    assert even.p_value == pytest.approx(1.0)
    # 1 vs 9 of 10 discordant: p = 2 · (C(10,0) + C(10,1)) / 1024 = 22/1024.
    assert stats.mcnemar_exact([True] + [False] * 9, [False] + [True] * 9).p_value == pytest.approx(22 / 1024)


def test_tost_decides_by_margin() -> None:
    # Differences alternate ±100 over 100 questions: mean 0, se = 100·√(100/99)/10 ≈ 10.05,
    # t(0.95, 99) = 1.6604 → 90% interval ±16.69 points.
    diffs = [100.0, -100.0] * 50
    wide = stats.tost(diffs, margin=20.0)
    assert wide.interval.high == pytest.approx(1.6604 * 100 * math.sqrt(100 / 99) / 10, abs=1e-3)
    assert wide.is_equivalent and wide.p_value < 0.05
    narrow = stats.tost(diffs, margin=10.0)
    assert not narrow.is_equivalent and narrow.p_value > 0.05


def test_not_significant_is_not_equivalent() -> None:
    # Six questions each way out of 20: McNemar finds nothing, yet the data cannot show equivalence
    # within 5 points — "not significant" must never be read as "the same".
    a = [True] * 6 + [False] * 6 + [True] * 8
    b = [False] * 6 + [True] * 6 + [True] * 8
    assert stats.mcnemar_exact(a, b).p_value == pytest.approx(1.0)
    per_question = [100.0 * (int(y) - int(x)) for x, y in zip(a, b, strict=True)]
    assert not stats.tost(per_question, margin=5.0).is_equivalent


def test_identical_runs_are_equivalent() -> None:
    # No spread at all: the interval is the point, inside any margin.
    result = stats.tost([0.0] * 3, margin=1.0)
    assert result.is_equivalent and result.diff == pytest.approx(0.0)
    assert not stats.tost([1.5] * 3, margin=1.0).is_equivalent


def test_welch_known_answer() -> None:
    # a = [1, 2, 3], b = [4, 5, 6]: t = 3 / √(2/3) = 3.674, df = 4 → two-sided p = 0.02131.
    result = stats.welch_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert result is not None
    assert result.diff == pytest.approx(3.0)
    assert result.p_value == pytest.approx(0.02131, abs=1e-4)
    assert stats.welch_test([1.0], [2.0, 3.0]) is None
