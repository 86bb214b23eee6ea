"""The experiments' claims as judgments over run records: each `check_*` returns an `Outcome` (pass, fail
or not evaluable, with the numbers behind it), so the suite (`require`, which raises) and the report
(which renders every outcome) judge with the same code. `KINDS` (at the end) is the registry a setup file's claim names by its `kind`:
each kind's judge, the setups it compares and the bounds it takes. Which claims there are is what the
setup files say (`harness.suite.catalogue`).

"Not evaluable" is its own answer: too few seeds for the statistic, or a number the records lack. The
suite skips the test with its reason (`harness.suite.plugin` turns `NotEvaluable` into a skip; outside the
plugin it is an AssertionError, so it can never pass unnoticed); a report shows it as neither pass nor fail.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, ParamSpec

from harness import stats
from harness.results import RunRecord

GiB = 1024**3
ClaimStatus = Literal["pass", "fail", "not evaluable"]


class NotEvaluable(AssertionError):
    """The records cannot answer the claim: too few seeds, or a number missing from a record."""


@dataclass(frozen=True)
class Outcome:
    status: ClaimStatus
    measured: str  # the numbers behind the status, one line: a report cell and the assertion message
    value: Any = None  # the figure judged (gain per seed, spread, ratio…), for `record_property`


def passed(measured: str, value: Any) -> Outcome:
    return Outcome("pass", measured, value)


def failed(measured: str, value: Any = None) -> Outcome:
    return Outcome("fail", measured, value)


def require(outcome: Outcome) -> Any:
    """The suite's side: the figure when the claim passes, else an assertion that shows every number."""
    if outcome.status == "pass":
        return outcome.value
    if outcome.status == "not evaluable":
        raise NotEvaluable(f"not evaluable: {outcome.measured}")
    raise AssertionError(outcome.measured)


P = ParamSpec("P")


def judged(check: Callable[P, Outcome]) -> Callable[P, Outcome]:
    """A number missing from a record (`NotEvaluable` from a getter) makes the outcome "not evaluable"."""

    @functools.wraps(check)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Outcome:
        try:
            return check(*args, **kwargs)
        except NotEvaluable as exc:
            return Outcome("not evaluable", str(exc))

    return wrapper


def label(record: RunRecord) -> str:
    return f"{record.experiment}/{record.setup_name} seed {record.seed}"


def mean(values: Sequence[float]) -> float:
    if not values:
        raise NotEvaluable("no values to average: the claim needs at least one run")
    return sum(values) / len(values)


def seeds_of(records: Sequence[RunRecord]) -> str:
    return ", ".join(str(r.seed) for r in records)


# --- getters: a number the record lacks makes a claim not evaluable, never a pass ---


def finite(record: RunRecord, what: str, value: float) -> float:
    """`value` when it is a number: a NaN slips through every comparison (max, min, a bound) unnoticed."""
    if not math.isfinite(value):
        raise NotEvaluable(f"{label(record)}: its {what} is not a number ({value}), so it proves nothing")
    return value


def exact_match(record: RunRecord) -> float:
    if record.trained is None:
        raise NotEvaluable(f"{label(record)}: no trained exact match in the record (status {record.status})")
    return finite(record, "trained exact match", record.trained.exact_match)


def train_seconds(record: RunRecord) -> float:
    seconds = record.train.train_s if record.train else None
    if not seconds:
        raise NotEvaluable(f"{label(record)}: no training time in the record")
    return finite(record, "training time", seconds)


def step_seconds(record: RunRecord) -> float:
    seconds = record.train.step_s if record.train else None
    if not seconds:
        raise NotEvaluable(
            f"{label(record)}: no steady step time in the record (made before train.step_s existed?)"
        )
    return finite(record, "steady step time", seconds)


def peak_vram(record: RunRecord) -> int:
    peak = record.memory.peak_vram_bytes if record.memory else None
    if peak is None:
        raise NotEvaluable(
            f"{label(record)}: no peak VRAM in the record (device {record.memory and record.memory.device})"
        )
    return peak


def timing_guarded(record: RunRecord) -> bool:
    """Timed under the quiet-machine guard (`lorabench run --timed`) and no noise seen while it ran."""
    return bool(record.guard.get("timed")) and record.guard.get("timing_valid", True) is not False


def runs_not_ok(records: Sequence[RunRecord]) -> Outcome | None:
    """A run that did not finish ok fails every claim that reads it, as the suite's run fixture does."""
    bad = [r for r in records if r.status != "ok"]
    if not bad:
        return None
    return failed("; ".join(f"{label(r)}: run {r.status}: {r.reason}" for r in bad))


# --- the claims ---


@judged
def check_gain(records: Sequence[RunRecord], min_points: float) -> Outcome:
    """Exact match after training minus before, in points, at least `min_points` on every run."""
    gains: list[float] = []
    for record in records:
        if record.gain is None or record.baseline is None:
            raise NotEvaluable(f"{label(record)}: no baseline or trained score, cannot judge the gain")
        gains.append(record.gain)
    shown = "; ".join(
        f"{label(r)}: {r.baseline.exact_match:.1f} → {exact_match(r):.1f} (gain {g:+.1f})"  # type: ignore[union-attr]
        for r, g in zip(records, gains, strict=True)
    )
    # The one claim that reads scores past the getters: a NaN baseline passed it (NaN < bound is false).
    if not all(math.isfinite(g) for g in gains):
        raise NotEvaluable(f"a figure is not a number, so it proves nothing: {shown}")
    if any(g < min_points for g in gains):
        return failed(f"gain below {min_points:g} points: {shown}", gains)
    return passed(shown, gains)


@judged
def check_seed_spread(records: Sequence[RunRecord], max_points: float) -> Outcome:
    """max − min of trained exact match over seeds, at most `max_points`."""
    if len(records) < 2:
        raise NotEvaluable(f"seed spread needs at least 2 seeds, got {len(records)}")
    scores = [exact_match(r) for r in records]
    spread = round(max(scores) - min(scores), 1)
    shown = (
        f"spread {spread:.1f} points ({' / '.join(f'{s:.1f}' for s in scores)}; seeds {seeds_of(records)})"
    )
    if spread > max_points:
        return failed(f"seed spread {spread:.1f} points > bound {max_points:g}: {shown}", spread)
    return passed(shown, spread)


def equivalence(
    a: Sequence[RunRecord], b: Sequence[RunRecord], margin: float
) -> tuple[stats.Equivalence, str]:
    """TOST on the per-seed exact-match differences b − a, paired by seed, and the pairs as text."""
    by_seed = {r.seed: r for r in a}
    pairs = [(by_seed[r.seed], r) for r in b if r.seed in by_seed]
    if len(pairs) < 2:
        raise NotEvaluable(f"equivalence needs at least 2 seeds run on both sides, got {len(pairs)}")
    result = stats.tost([exact_match(y) - exact_match(x) for x, y in pairs], margin)
    return result, "; ".join(f"seed {y.seed}: {exact_match(x):.1f} → {exact_match(y):.1f}" for x, y in pairs)


@judged
def check_equivalent(a: Sequence[RunRecord], b: Sequence[RunRecord], margin: float) -> Outcome:
    """Same accuracy within ±`margin` points by two one-sided tests (TOST) on the per-seed differences,
    paired by seed; the value is the mean difference b − a. "Not significantly different" is never taken
    as "the same": with three seeds the interval is wide, and a claim may fail for want of evidence."""
    result, per_seed = equivalence(a, b, margin)
    diff = round(result.diff, 1)
    shown = (
        f"mean difference {diff:+.1f} points, 90% interval [{result.interval.low:+.1f}, {result.interval.high:+.1f}] "
        f"(TOST p = {result.p_value:.3f}, n = {result.n} seeds; {per_seed})"
    )
    if not result.is_equivalent:
        return failed(f"not shown equivalent within ±{margin:g} points: {shown}", diff)
    return passed(shown, diff)


@judged
def check_speedup(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord], min_ratio: float, per: str = "run"
) -> Outcome:
    """Mean time of `baseline` / that of `candidate`; the lower end of its 95% bootstrap interval must
    reach `min_ratio` (a lucky mean alone does not pass, so one run a side cannot). The value is the ratio
    of means. `per` = "run": the whole training span (warm-up and compile included); "step": the steady
    seconds per step (train.step_s), for throughput claims a short run's fixed costs would blur."""
    seconds = {"run": train_seconds, "step": step_seconds}[per]
    old, new = [seconds(r) for r in baseline], [seconds(r) for r in candidate]
    ratio = round(mean(old) / mean(new), 2)
    unit, digits = ("s", 0) if per == "run" else ("s/step", 3)
    times = (
        f"baseline {'; '.join(f'{s:.{digits}f}' for s in old)} {unit}, "
        f"candidate {'; '.join(f'{s:.{digits}f}' for s in new)} {unit}"
    )
    if min(len(old), len(new)) < 2:
        raise NotEvaluable(
            f"{ratio:.2f}× per {per} from n = {len(old)} and n = {len(new)} runs; the 95% interval the bound is "
            f"judged on needs at least 2 seeds a side ({times})"
        )
    interval = stats.bootstrap_ratio_ci(old, new)
    shown = f"{ratio:.2f}× per {per}, 95% interval {interval.low:.2f}–{interval.high:.2f}× (n = {len(old)} / {len(new)}; {times})"
    if interval.low < min_ratio:
        return failed(f"speedup does not reach {min_ratio:g}×: {shown}", ratio)
    return passed(shown, ratio)


@judged
def check_time_ratio(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord], max_ratio: float
) -> Outcome:
    """How much slower `candidate` trains than `baseline` (ratio of means), at most `max_ratio`."""
    ratio = round(mean([train_seconds(r) for r in candidate]) / mean([train_seconds(r) for r in baseline]), 2)
    shown = f"time ratio {ratio:.2f}× (n = {len(baseline)} / {len(candidate)})"
    if ratio > max_ratio:
        return failed(f"{shown} > bound {max_ratio:g}×", ratio)
    return passed(shown, ratio)


@judged
def check_memory(records: Sequence[RunRecord], max_bytes: float) -> Outcome:
    """Peak VRAM of every run within `max_bytes`; the value is the largest peak."""
    worst = max(peak_vram(r) for r in records)
    shown = "; ".join(f"seed {r.seed}: {peak_vram(r) / GiB:.2f} GiB" for r in records)
    if worst > max_bytes:
        return failed(
            f"peak VRAM {worst / GiB:.2f} GiB over the budget {max_bytes / GiB:.2f} GiB: {shown}", worst
        )
    return passed(shown, worst)


def predicted_4bit_saving(record: RunRecord) -> float:
    """The saving 4-bit can make at most, from the record's quantizable_fraction check (preflight)."""
    check = record.checks.get("quantizable_fraction")
    saving = check.evidence.get("max_saving_bytes") if check else None
    if not saving:
        raise NotEvaluable(
            f"{label(record)}: no quantizable_fraction check with max_saving_bytes in the record"
        )
    return float(saving)


@judged
def check_memory_saved(
    baseline: Sequence[RunRecord], candidate: Sequence[RunRecord], predicted_bytes: float, min_share: float
) -> Outcome:
    """Peak VRAM saved by `candidate` is at least `min_share` of the predicted saving; the value is saved / predicted."""
    saved = mean([peak_vram(r) for r in baseline]) - mean([peak_vram(r) for r in candidate])
    share = round(saved / predicted_bytes, 2) if predicted_bytes > 0 else 0.0
    shown = f"saved {saved / GiB:.2f} GiB = {share:.2f} of the predicted {predicted_bytes / GiB:.2f} GiB"
    if share < min_share:
        return failed(f"peak VRAM {shown}, below {min_share:g}", share)
    return passed(shown, share)


@judged
def check_vram_ratio(one: RunRecord, other: RunRecord, max_ratio: float) -> Outcome:
    """Peak VRAM of `other` (per card: the record's peak is rank 0's) at most `max_ratio` × that of `one`."""
    ratio = round(peak_vram(other) / peak_vram(one), 2)
    shown = f"{peak_vram(other) / GiB:.2f} GiB per card against {peak_vram(one) / GiB:.2f} GiB: {ratio:.2f}×"
    if ratio > max_ratio:
        return failed(f"peak VRAM per card {shown}, bound {max_ratio:g}×", ratio)
    return passed(shown, ratio)


@judged
def check_mean_gain_over(small: Sequence[RunRecord], big: Sequence[RunRecord], min_points: float) -> Outcome:
    """Mean exact match of `big` minus that of `small`, at least `min_points`."""
    gain = round(mean([exact_match(r) for r in big]) - mean([exact_match(r) for r in small]), 1)
    shown = f"{gain:+.1f} points (means over n = {len(big)} / {len(small)} seeds)"
    if gain < min_points:
        return failed(f"bigger model scores {shown} against the small one, below {min_points:+g}", gain)
    return passed(shown, gain)


@judged
def check_contract(record: RunRecord, min_contract: float) -> Outcome:
    """Task verdict: the share of answers that keep the output contract, at least `min_contract` percent."""
    gate = record.trained.gate if record.trained else None
    if not gate or gate.get("contract") is None:
        raise NotEvaluable(f"{label(record)}: no verdict metrics in the record (status {record.status})")
    contract = float(gate["contract"])
    before = record.baseline.gate.get("contract") if record.baseline and record.baseline.gate else None
    shown = (
        f"{contract:g}% of answers keep the contract (before training: {'?' if before is None else before}%)"
    )
    if contract < min_contract:
        return failed(f"{label(record)}: {shown}, below {min_contract:g}%", contract)
    return passed(shown, contract)


@judged
def check_finite(records: Sequence[RunRecord]) -> Outcome:
    """No NaN or inf in any training loss, and a scored generation on every run."""
    for record in records:
        losses = record.train.loss if record.train else []
        if not losses:
            raise NotEvaluable(f"{label(record)}: no training losses recorded")
        bad = [i for i, x in enumerate(losses, start=1) if not math.isfinite(x)]
        if bad:
            return failed(f"{label(record)}: non-finite training loss at step(s) {bad[:10]}")
        exact_match(record)  # generation ran and was scored
    steps = sum(len(r.train.loss) for r in records if r.train)
    return passed(
        f"{steps} losses finite, exact match scored (seed{'s' if len(records) > 1 else ''} {seeds_of(records)})",
        None,
    )


@judged
def check_loads_staggered(record: RunRecord) -> Outcome:
    """Under DDP each rank loaded the model only after the one before it had finished (the staggered-load
    lock, so the host never holds two copies in RAM at once): sorted by start, no load window begins
    before the previous one ended. The value is when the last rank started loading (the staggering's cost)."""
    # Each host staggers its own ranks (the lock is a file there): on several nodes, windows per node.
    by_node: dict[int, list[list[float]]] = {}
    for rank in record.ranks or []:
        if rank.load_window is not None:
            by_node.setdefault(rank.node, []).append(rank.load_window)
    per_node = [sorted(w) for w in by_node.values() if len(w) > 1] if len(by_node) > 1 else []
    if len(by_node) > 1 and not per_node:
        raise NotEvaluable(
            f"{label(record)}: one rank per node: each host loaded its one copy, nothing to stagger"
        )
    groups = per_node or [sorted(record.timings.load_windows or [])]
    windows = sorted(w for g in groups for w in g)
    if len(windows) < 2:
        raise NotEvaluable(
            f"{label(record)}: no per-rank load windows in the record (one process, or a record made "
            f"before they were recorded)"
        )
    overlapping = [(a, b) for g in groups for a, b in itertools.pairwise(g) if b[0] < a[1]]
    if overlapping:
        shown = "; ".join(
            f"[{a[0]:.2f}, {a[1]:.2f}] s and [{b[0]:.2f}, {b[1]:.2f}] s" for a, b in overlapping
        )
        return failed(f"{label(record)}: ranks loaded the model at the same time: {shown}")
    shown = ", ".join(f"[{a:.2f}, {b:.2f}] s" for a, b in windows)
    return passed(f"load windows {shown}", windows[-1][0])


@judged
def check_packages_differ(one: RunRecord, other: RunRecord) -> Outcome:
    """Two stacks must differ in some installed package, or nothing was compared; the value is the diff."""
    before = one.provenance.stack.packages
    after = other.provenance.stack.packages
    diff = {
        name: (before.get(name), after.get(name))
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    }
    if not diff:
        return failed(
            f"stacks {one.stack!r} and {other.stack!r} have the same packages: nothing is compared", diff
        )
    return passed("; ".join(f"{k} {a or '–'} → {b or '–'}" for k, (a, b) in diff.items()), diff)


# --- the kinds a setup file's claim names (`[claims.NAME] kind = "…"`) ---

Runs = Sequence[Sequence[RunRecord]]  # the records of each setup the claim reads, in its `setups` order
Bounds = Mapping[str, Any]


@dataclass(frozen=True)
class Kind:
    """One kind of claim: how many setups it reads (the first is the reference), the bounds it takes
    (`required`; `defaults` for optional ones, whose allowed words are `choices`), the bound in words for
    the report, and its judge. `per_seed`: judged seed by seed (one suite case per seed). `cost`: a time
    or memory figure, compared only between runs of one compile mode (CUDA graphs keep their own pools)."""

    name: str
    setups: int
    bound: str  # formatted with the bounds: "≥ {min_gain:g} points …"
    judge: Callable[[Runs, Bounds], Outcome]
    required: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    per_seed: bool = False
    cost: Literal["time", "memory"] | None = None


def _time_ratio_either_way(runs: Runs, b: Bounds) -> Outcome:
    there = check_time_ratio(runs[0], runs[1], b["max_time_ratio"])
    back = check_time_ratio(runs[1], runs[0], b["max_time_ratio"])
    return back if there.status == "pass" and back.status != "pass" else there


EQUIVALENT = "within ±{equivalence_margin:g} points (TOST, 90% interval)"

KINDS: Mapping[str, Kind] = {
    k.name: k
    for k in (
        Kind(
            "gain",
            1,
            "≥ {min_gain:g} points exact match over the untrained model",
            lambda r, b: check_gain(r[0], b["min_gain"]),
            ("min_gain",),
            per_seed=True,
        ),
        Kind(
            "seed_spread",
            1,
            "max − min trained exact match ≤ {max_seed_spread:g} points",
            lambda r, b: check_seed_spread(r[0], b["max_seed_spread"]),
            ("max_seed_spread",),
        ),
        Kind(
            "finite", 1, "every loss finite, every run scored", lambda r, b: check_finite(r[0]), per_seed=True
        ),
        Kind(
            "equivalent",
            2,
            EQUIVALENT,
            lambda r, b: check_equivalent(r[0], r[1], b["equivalence_margin"]),
            ("equivalence_margin",),
        ),
        Kind(
            "speedup",
            2,
            "lower end of the 95% interval ≥ {min_speedup:g}× per {speedup_per}",
            lambda r, b: check_speedup(r[0], r[1], b["min_speedup"], b["speedup_per"]),
            ("min_speedup",),
            {"speedup_per": "run"},
            {"speedup_per": ("run", "step")},
            cost="time",
        ),
        Kind(
            "time_ratio",
            2,
            "≤ {max_time_ratio:g}× the first setup's train time",
            lambda r, b: check_time_ratio(r[0], r[1], b["max_time_ratio"]),
            ("max_time_ratio",),
            cost="time",
        ),
        Kind(
            "time_ratio_either_way",
            2,
            "either ≤ {max_time_ratio:g}× the other's train time",
            _time_ratio_either_way,
            ("max_time_ratio",),
            cost="time",
        ),
        Kind(
            "memory",
            1,
            "peak VRAM ≤ {vram_budget_gib:g} GiB",
            lambda r, b: check_memory(r[0], b["vram_budget_gib"] * GiB),
            ("vram_budget_gib",),
            per_seed=True,
            cost="memory",
        ),
        Kind(
            "memory_saved",
            2,
            "saved ≥ {min_saving_share:g} × the predicted saving (quantizable_fraction check)",
            lambda r, b: check_memory_saved(
                r[0], r[1], predicted_4bit_saving(r[0][0]), b["min_saving_share"]
            ),
            ("min_saving_share",),
            cost="memory",
        ),
        Kind(
            "vram_ratio",
            2,
            "peak VRAM per card ≤ {max_vram_per_card_ratio:g}× one card's",
            lambda r, b: check_vram_ratio(r[0][0], r[1][0], b["max_vram_per_card_ratio"]),
            ("max_vram_per_card_ratio",),
            per_seed=True,
            cost="memory",
        ),
        Kind(
            "mean_gain_over",
            2,
            "mean ≥ {min_points:+g} points over the first setup",
            lambda r, b: check_mean_gain_over(r[0], r[1], b["min_points"]),
            ("min_points",),
        ),
        Kind(
            "loads_staggered",
            1,
            "no load window starts before the previous one ended",
            lambda r, b: check_loads_staggered(r[0][0]),
            per_seed=True,
        ),
        Kind(
            "contract",
            1,
            "≥ {min_contract:g}% of held-out answers keep the contract",
            lambda r, b: check_contract(r[0][0], b["min_contract"]),
            ("min_contract",),
            per_seed=True,
        ),
        Kind(
            "packages_differ",
            2,
            "some installed package differs",
            lambda r, b: check_packages_differ(r[0][0], r[1][0]),
        ),
    )
}
