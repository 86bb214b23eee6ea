"""The report's and compare's objects as their JSON outputs (harness/report/outputs.py): figures keyed
by metrics.METRICS, conditions as fields, each comparison with its speedups, intervals and tests."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from harness import stats
from harness.report import likeness, metrics, pairs, tables
from harness.report.across import sides_across
from harness.report.claim_table import ClaimResult, evaluate_across_stacks
from harness.report.conditions import Sharing, conditions, timing
from harness.report.conditions import commit as commit_of
from harness.report.groups import ReportGroup, SetupRuns
from harness.report.outputs import (
    ClaimOut,
    ComparisonOut,
    ConditionsOut,
    EquivalenceOut,
    Figure,
    McNemarOut,
    ScorecardOut,
    SetupOut,
    SpeedupOut,
    StacksOut,
)
from harness.report.scorecard import ReportSummary, reference_pairs
from harness.report.settings import public
from harness.results import RunRecord
from harness.run import mfu
from harness.suite.catalogue import Catalogue

TIMING = {"timed (guard)": "timed_guard", "timed, noise seen": "timed_noise_seen", "not timed": "not_timed"}
Runs = Sequence[tuple[RunRecord, Sharing | None]]


def _sharing(found: Sharing | None) -> str:
    if found is None:
        return "unknown"
    if found.others:
        return "shared_devices" if found.devices_known else "shared_host"
    return "alone_guard" if found.guarded else "unknown"


def _steady_steps(records: Sequence[RunRecord]) -> list[list[int]]:
    found = {
        mfu.steady_window(r.train.steps_done) for r in records if r.train and tables.steady(r) is not None
    }
    return [list(w) for w in sorted(found)]


def conditions_out(runs: Runs) -> ConditionsOut:
    """The conditions of these runs (record and its company as `conditions.survey` found it)."""
    records = [r for r, _ in runs]
    found = conditions(runs)
    trained = [r for r in records if r.train is not None]
    return ConditionsOut(
        timing=list(dict.fromkeys(TIMING[timing(r)] for r in records)),  # type: ignore[misc]
        sharing=list(dict.fromkeys(_sharing(s) for _, s in runs)),  # type: ignore[misc]
        runs_at_once=max((s.others + 1 for _, s in runs if s is not None), default=1),
        commits=list(dict.fromkeys(commit_of(r).removesuffix(" (dirty)") for r in records)),
        dirty=any(r.provenance.git.dirty for r in records),
        window=metrics.windows(trained),
        steady_steps=_steady_steps(records),
        marks=found.marks,
        text=found.text,
    )


def setup_conditions(setup: SetupRuns) -> ConditionsOut:
    """As `SetupRuns.conditions`: its ok runs' (all runs when none is ok)."""
    ok = [r for r in setup.runs if r.record.status == "ok"] or list(setup.runs)
    return conditions_out([(r.record, r.sharing) for r in ok])


def _figures(setup: SetupRuns) -> dict[str, Figure]:
    out = {}
    for metric in metrics.setup_metrics([setup]):
        holding = [r for r in setup.ok if metric.getter(r) is not None]
        if found := tables.values(holding, metric.getter):
            window = metrics.windows(holding) if metric.is_windowed else None
            out[metric.key] = Figure(
                mean=stats.mean(found), min=min(found), max=max(found), n=len(found), window=window
            )
    return out


def setup_out(setup: SetupRuns) -> SetupOut:
    return SetupOut(
        experiment=setup.experiment,
        setup=setup.setup,
        is_variant=setup.is_variant,
        runs=len(setup.runs),
        ok=len(setup.ok),
        figures=_figures(setup),
        conditions=setup_conditions(setup),
    )


def _speedup(found: pairs.Speedup | None) -> SpeedupOut | None:
    if found is None:
        return None
    low, high = (found.interval.low, found.interval.high) if found.interval else (None, None)
    return SpeedupOut(
        ratio=found.ratio, ci95_low=low, ci95_high=high, n_reference=found.n_reference, n_setup=found.n_setup
    )


def _mcnemar(found: pairs.Accuracy | None) -> McNemarOut | None:
    if found is None:
        return None
    test = found.test
    return McNemarOut(
        test="exact McNemar",
        exact_match_diff_points=test.diff,
        only_reference_right=test.only_a,
        only_setup_right=test.only_b,
        questions=test.n,
        seeds=list(found.seeds),
        p_value=test.p_value,
    )


def _equivalence(found: pairs.Equivalent) -> EquivalenceOut:
    result = found.result
    return EquivalenceOut(
        margin_points=found.margin,
        is_equivalent=None if result is None else result.is_equivalent,
        diff_points=None if result is None else result.diff,
        ci90_low=None if result is None else result.interval.low,
        ci90_high=None if result is None else result.interval.high,
        p_value=None if result is None else result.p_value,
        paired_seeds=found.paired_seeds,
    )


def comparison_out(ref: SetupRuns, s: SetupRuns, axis: Collection[str] | None = None) -> ComparisonOut:
    """One row of a comparison table (tables.comparison_tables), as fields; `axis`: the settings a host
    decides, when the sides are hosts × stacks (the index's table)."""
    judged = likeness.judge(s, ref, axis)
    is_like = likeness.is_comparable(judged, axis)
    nothing = [] if is_like or judged.axis or judged.settings or axis else [likeness.NOTHING_RECORDED]
    found = tables.pair_figures(ref, s)
    reference = ref.setup if ref.experiment == s.experiment else f"{ref.experiment}/{ref.setup}"
    return ComparisonOut(
        experiment=s.experiment,
        setup=s.setup,
        reference=reference,
        is_like=is_like,
        compared=[public(d) for d in judged.axis],
        differs=[public(d) for d in (*nothing, *judged.differences)],
        speedup_train_time=_speedup(found.train_time),
        speedup_step=_speedup(found.step),
        exact_match=_mcnemar(found.accuracy),
        equivalence=_equivalence(found.equivalence),
    )


def claim_out(result: ClaimResult, groups: Sequence[ReportGroup]) -> ClaimOut:
    """A judged claim, the conditions of each role's runs as their groups' survey found them."""
    by_id = {item.record.run_id: item for group in groups for item in group.runs}
    found = {
        role: [(r, by_id[r.run_id].sharing if r.run_id in by_id else None) for r in records]
        for role, records in result.runs.items()
    }
    return ClaimOut(
        experiment=result.claim.experiment,
        name=result.claim.name,
        setups=result.setups,
        status=result.status,
        bound=public(result.bound),
        measured=public(result.measured),
        value=result.value,
        n={role: len(runs) for role, runs in found.items()},
        conditions={role: conditions_out(runs) for role, runs in found.items() if runs},
        differs=None if result.differs is None else [public(d) for d in result.differs],
    )


def _comparisons(group: ReportGroup) -> list[ComparisonOut]:
    out = []
    for experiment in group.experiments:
        setups = group.setups(experiment)
        for ref, s in [*likeness.nearest_pairs(setups), *reference_pairs(group, experiment, setups)]:
            out.append(comparison_out(ref, s))
    return out


def scorecard_out(
    group: ReportGroup, summary: ReportSummary, claims: Sequence[ClaimResult] | None
) -> ScorecardOut:
    return ScorecardOut(
        host=group.host,
        stack=group.stack,
        platform=summary.platform,
        verdict=summary.verdict,
        path=summary.path,
        claims_judged=summary.claims_judged,
        claims_total=summary.claims_total or 0,
        claims=None if claims is None else [claim_out(c, [group]) for c in claims],
        setups=[setup_out(s) for e in group.experiments for s in group.setups(e)],
        comparisons=_comparisons(group),
    )


def stacks_out(groups: Sequence[ReportGroup], catalogue: Catalogue | None) -> list[StacksOut] | None:
    """The index's cross-stack claims (Exp E), per host and pair of stacks; None: no setup files."""
    judged = evaluate_across_stacks(groups, catalogue)
    if judged is None:
        return None
    return [
        StacksOut(host=a.host, other=a.other, this=a.this, claims=[claim_out(c, groups) for c in a.results])
        for a in judged
    ]


def across_out(groups: Sequence[ReportGroup]) -> list[ComparisonOut]:
    """The index's comparisons of one setup across hosts and stacks (harness.report.across), row by row."""
    return [
        comparison_out(ref, s, likeness.HOST_AXIS).model_copy(update={"across": key})
        for key, sides in sides_across(groups).items()
        for ref, s in likeness.nearest_pairs(sides, likeness.HOST_AXIS)
    ]
