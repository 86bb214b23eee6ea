"""What the index shows across scorecards, from the records one `lorabench report` was given (e.g. every
CI runner's artifact): each scorecard's platform, the same setup on several hosts or stacks side by side,
and the claims that compare two stacks of one host (Exp E).

Compared, never pooled: a record stands in only for its own fingerprint (setup + stack + host), so each
row is one host × stack's own runs, and a comparison names both sides and every setting they differ in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.report import likeness, tables
from harness.report.claim_table import claims_table, evaluate_across_stacks
from harness.report.groups import ReportGroup, SetupRuns
from harness.results import RunRecord
from harness.suite.catalogue import Catalogue

RUNTIMES = {"hip": "ROCm", "cuda": "CUDA", "cpu": "CPU"}


def platform_of(records: Sequence[RunRecord]) -> str:
    """The GPU platform the records ran on, from their provenance: 'CUDA 13.0', 'ROCm (HIP 7.2.26015)', 'CPU'."""
    seen: dict[str, None] = {}
    for record in records:
        host = record.provenance.host
        runtime = str(host.runtime or "cpu")
        version = host.runtime_version
        name = RUNTIMES.get(runtime, runtime)
        if version and runtime == "hip":
            name = f"{name} (HIP {version})"
        elif version:
            name = f"{name} {version}"
        seen[name] = None
    return " / ".join(seen) or "unknown"


def origin_key(group: ReportGroup) -> tuple[str, str, str]:
    return platform_of(group.records), group.stack, group.host


@dataclass(frozen=True)
class SetupAcross:
    """One setup found on several host × stack groups: a table of each side's numbers and a comparison
    of each against the first (by platform, stack, host)."""

    setup: str  # experiment/setup
    origins: tuple[str, ...]
    table: str
    comparison: tables.Comparisons


def _labelled(group: ReportGroup, setup: SetupRuns) -> SetupRuns:
    platform, stack, host = origin_key(group)
    return SetupRuns(setup.experiment, f"{host} · {stack} ({platform})", setup.runs, setup.is_variant)


def sides_across(groups: Sequence[ReportGroup]) -> dict[str, list[SetupRuns]]:
    """ "experiment/setup" → its runs on each host × stack group (by platform, stack, host), for every setup
    whose records come from two or more groups; each side named by its group."""
    found: dict[str, list[SetupRuns]] = {}
    for group in sorted(groups, key=origin_key):
        for experiment in group.experiments:
            for setup in group.setups(experiment):
                found.setdefault(f"{experiment}/{setup.setup}", []).append(_labelled(group, setup))
    return {key: sides for key, sides in sorted(found.items()) if len(sides) > 1}


def setups_across(groups: Sequence[ReportGroup]) -> list[SetupAcross]:
    """Every setup whose records come from two or more host × stack groups."""
    out = []
    for key, sides in sides_across(groups).items():
        out.append(
            SetupAcross(
                key,
                tuple(s.setup for s in sides),
                tables.experiment_table(sides),
                tables.comparison_tables(
                    likeness.nearest_pairs(sides, likeness.HOST_AXIS), likeness.HOST_AXIS, "host × stack"
                ),
            )
        )
    return out


def stacks_across(groups: Sequence[ReportGroup], catalogue: Catalogue | None) -> list[dict[str, str]] | None:
    """The cross-stack claims judged per host and pair of stacks, for the index template."""
    judged = evaluate_across_stacks(groups, catalogue)
    if judged is None:
        return None
    sharing = {i.record.run_id: i.sharing for g in groups for i in g.runs}
    return [
        {"host": a.host, "other": a.other, "this": a.this, "table": claims_table(a.results, sharing)}
        for a in judged
    ]
