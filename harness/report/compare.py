"""Compare two sets of records setup by setup: per metric the ratio new/old, whether the change is
significant, and whether it is a regression (significant and in the worse direction).

Exact match uses an exact McNemar test on per-question outcomes paired by seed and question; other
metrics Welch's t-test over seeds, which needs two or more seeds a side: with one, a change is shown but
never called significant. Like for like first, as pyperf and asv do: the same host kind and stack, and
the same settings for each setup on both sides (`sides_unlike`). A metric one side lacks (a run that
ended without scores) is named (`missing_metrics`), never dropped without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness import stats
from harness.errors import UserError
from harness.report import likeness
from harness.report.groups import LoadedRecord, SetupRuns, paired_outcomes, variants
from harness.report.metrics import COMPARED, Metric, Window, windows
from harness.report.tables import trained_em, values

ALPHA = 0.05
METRICS = COMPARED


@dataclass(frozen=True)
class MetricChange:
    setup: str  # experiment/setup
    metric: str  # the metric's key (harness/report/metrics.py)
    old: float
    new: float
    n_old: int
    n_new: int
    method: str
    p_value: float | None
    is_significant: bool
    is_regression: bool
    windows: tuple[Window | None, Window | None] = field(default=(None, None))  # OLD's, NEW's

    @property
    def windows_differ(self) -> bool:
        """Steady steps against the whole run (a side without a steady step time): not one quantity."""
        return self.windows[0] != self.windows[1]

    @property
    def ratio(self) -> float | None:
        return self.new / self.old if self.old else None


def by_setup(loaded: Sequence[LoadedRecord], side: str) -> dict[str, SetupRuns]:
    """ "experiment/setup" → its runs on one side; runs of one name with other settings are split into
    variants named by what they changed (never pooled: `groups.variants`)."""
    groups: dict[str, list[LoadedRecord]] = {}
    for item in loaded:
        groups.setdefault(f"{item.record.experiment}/{item.record.setup_name}", []).append(item)
    out = {}
    for key, items in sorted(groups.items()):
        origins = sorted({f"{i.record.host} × {i.record.stack}" for i in items})
        if len(origins) > 1:
            raise UserError(
                f"{side}: {key} has records from {', '.join(origins)}; pass one host × stack folder per side"
            )
        experiment, setup = key.split("/", 1)
        for variant in variants(experiment, setup, sorted(items, key=lambda i: i.record.seed)):
            out[f"{experiment}/{variant.setup}"] = variant
    return out


def _accuracy_test(old: SetupRuns, new: SetupRuns) -> stats.TestResult | None:
    xs, ys, _ = paired_outcomes(old, new)
    return stats.mcnemar_exact(xs, ys) if xs else None


_WORDS = {"steady": "steady steps", "whole": "whole run", "mixed": "mixed windows", None: "none"}


def _windows(metric: Metric, old: SetupRuns, new: SetupRuns) -> tuple[Window | None, Window | None]:
    if not metric.is_windowed:
        return None, None
    return (
        windows([r for r in old.ok if metric.getter(r) is not None]),
        windows([r for r in new.ok if metric.getter(r) is not None]),
    )


def _change(
    key: str, metric: Metric, old: SetupRuns, new: SetupRuns, tolerance: float
) -> MetricChange | None:
    a, b = values(old.ok, metric.getter), values(new.ok, metric.getter)
    if not a or not b:
        return None
    found_windows = _windows(metric, old, new)
    test = _accuracy_test(old, new) if metric.getter is trained_em else None
    if test is None and found_windows[0] == found_windows[1]:
        test = stats.welch_test(a, b)
    p = test.p_value if test else None
    method = test.method if test else "too few seeds to test"
    if found_windows[0] != found_windows[1]:
        method = (
            f"not tested: {_WORDS[found_windows[0]]} against {_WORDS[found_windows[1]]} (not one quantity)"
        )
    old_mean, new_mean = stats.mean(a), stats.mean(b)
    significant = p is not None and p < ALPHA
    worse = new_mean < old_mean if metric.higher_is_better else new_mean > old_mean
    relative = abs(new_mean - old_mean) / abs(old_mean) if old_mean else float("inf")
    # Accuracy: any significant drop counts. Costs: also beyond the tolerance, so a significant 0.5%
    # slowdown on a quiet machine is reported but does not fail CI.
    beyond = metric.getter is trained_em or relative > tolerance
    return MetricChange(
        key,
        metric.key,
        old_mean,
        new_mean,
        len(a),
        len(b),
        method,
        p,
        significant,
        significant and worse and beyond,
        found_windows,
    )


def _kinds(loaded: Sequence[LoadedRecord]) -> str:
    kinds = {str(i.record.provenance.host.kind or i.record.host) for i in loaded}
    return " / ".join(sorted(kinds))


def _stacks(loaded: Sequence[LoadedRecord]) -> str:
    return " / ".join(sorted({i.record.stack for i in loaded}))


def sides_unlike(old: Sequence[LoadedRecord], new: Sequence[LoadedRecord]) -> list[str]:
    """What makes the two sides unlike, one phrase each, OLD's value first: the host kind
    (`harness.provenance.host_kind`; the host id for records made before kinds were recorded), the stack,
    and every setting a setup on both sides differs in (its records' settings, data by content), and the
    conditions that bias its time figures (timed under the guard or not, alone or beside other runs)."""
    out = []
    if _kinds(old) != _kinds(new):
        out.append(f"host kind: {_kinds(old)} vs {_kinds(new)}")
    if _stacks(old) != _stacks(new):
        out.append(f"stack: {_stacks(old)} vs {_stacks(new)}")
    before, after = by_setup(old, "OLD"), by_setup(new, "NEW")
    for key in sorted(set(before) & set(after)):
        judged = likeness.judge(before[key], after[key], axis=())
        # The commit is what compare compares; timing and sharing bias the time figures, so they count.
        conditions = [d for d in judged.conditions if not d.startswith(f"{likeness.COMMIT}:")]
        out.extend(f"{key}: {d}" for d in (*judged.settings, *conditions))
    return out


def _statuses(runs: SetupRuns) -> str:
    return "; ".join(
        f"seed {r.seed}: {r.status}" + (f" ({r.reason})" if r.reason else "") for r in runs.records
    )


def unfinished(old: Sequence[LoadedRecord], new: Sequence[LoadedRecord]) -> list[str]:
    """Each setup on both sides whose runs on one side give nothing to compare: none finished (killed,
    failed, refused…: their statuses and reasons), or the finished ones hold no compared metric. Such a
    side is refused for that reason, before any other difference is weighed."""
    before, after = by_setup(old, "OLD"), by_setup(new, "NEW")
    out = []
    for key in sorted(set(before) & set(after)):
        for side, runs in (("OLD", before[key]), ("NEW", after[key])):
            if not runs.ok:
                out.append(f"{side} {key}: no run finished ({_statuses(runs)})")
            elif not any(values(runs.ok, m.getter) for m in METRICS):
                keys = ", ".join(m.key for m in METRICS)
                out.append(f"{side} {key}: its runs hold none of the compared metrics ({keys})")
    return out


@dataclass(frozen=True)
class MissingMetric:
    setup: str
    metric: str
    side: str  # the side that lacks it: OLD or NEW
    why: str  # the runs' statuses on that side


def missing_metrics(
    old: Sequence[LoadedRecord], new: Sequence[LoadedRecord], metrics: Sequence[Metric] = METRICS
) -> list[MissingMetric]:
    """Metrics of a setup on both sides that one side has and the other lacks."""
    before, after = by_setup(old, "OLD"), by_setup(new, "NEW")
    out = []
    for key in sorted(set(before) & set(after)):
        for metric in metrics:
            a, b = values(before[key].ok, metric.getter), values(after[key].ok, metric.getter)
            if bool(a) == bool(b):
                continue
            side, runs = ("NEW", after[key]) if a else ("OLD", before[key])
            statuses = ", ".join(f"seed {r.seed}: {r.status}" for r in runs.records)
            out.append(MissingMetric(key, metric.key, side, statuses))
    return out


def compare_records(
    old: Sequence[LoadedRecord],
    new: Sequence[LoadedRecord],
    tolerance: float = 0.02,
    metrics: Sequence[Metric] = METRICS,
) -> tuple[list[MetricChange], list[str]]:
    """Changes for every setup on both sides, and the setups found on one side only."""
    before, after = by_setup(old, "OLD"), by_setup(new, "NEW")
    changes = [
        change
        for key in sorted(set(before) & set(after))
        for metric in metrics
        if (change := _change(key, metric, before[key], after[key], tolerance)) is not None
    ]
    unmatched = [f"{key} (only in OLD)" for key in sorted(set(before) - set(after))]
    unmatched += [f"{key} (only in NEW)" for key in sorted(set(after) - set(before))]
    return changes, unmatched
