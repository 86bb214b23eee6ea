"""The suite's claims judged on one host × stack's records: the same claims (the setup files' `[claims]`
tables, `harness.suite.catalogue`) and the same judgments (`harness.suite.claims`) as the suite.

A claim reads its setups' records on this host and stack, paired by seed where it pairs (seeds not run
for every setup are left out and named). A run that did not finish ok fails the claims that read it. A
time claim of a timed experiment reads guarded runs only; on others it is "not evaluable".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.report.conditions import Sharing, conditions
from harness.report.groups import ReportGroup
from harness.report.likeness import COST_SETTINGS, cost_mismatch
from harness.report.settings import differences, file_settings
from harness.report.tables import table
from harness.results import RunRecord
from harness.suite.catalogue import Catalogue, Claim, is_cost_claim, judge, load_catalogue
from harness.suite.claims import ClaimStatus, Outcome, runs_not_ok, timing_guarded

# Where `lorabench report` finds the suite's setup files when not told: the suite `lorabench bench` runs.
DEFAULT_BENCHMARKS = Path("benchmarks")
BUILT_IN_SETUPS = "setups"  # the built-in setups' folder under the suite's folder


def default_benchmarks() -> Path:
    """The suite's folder: `benchmarks/` where lorabench runs (a checkout's root), else the one beside
    this lorabench's code (an editable install run from your own folder)."""
    here = DEFAULT_BENCHMARKS
    return here if here.is_dir() else Path(__file__).resolve().parents[2] / DEFAULT_BENCHMARKS


RESULT_WORDS: Mapping[ClaimStatus, str] = {
    "pass": "pass",
    "fail": "**FAIL**",
    "not evaluable": "*not evaluable*",
}


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    status: ClaimStatus
    measured: str
    bound: str
    setups: str
    differs: tuple[str, ...] | None  # settings that differ between the claim's two setups (None: one setup)
    value: Any = None  # the figure judged (per seed: seed → figure), for `report --json`
    runs: Mapping[str, Sequence[RunRecord]] = field(default_factory=dict)  # role → the records it read


def _records(group: ReportGroup, key: str | None) -> list[RunRecord]:
    """The suite's setup's records: runs of the same name with other settings (overrides) are not it."""
    setup = group.suite_setup(key)
    return sorted(setup.records, key=lambda r: r.seed) if setup else []


def setup_references(catalogue: Catalogue | None) -> dict[str, dict[str, str]]:
    """ "experiment/setup" → the setup file's own settings, for every setup file of the catalogue (none
    without one): which runs of a setup name are the suite's setup."""
    if catalogue is None:
        return {}
    return {setup.key: file_settings(setup.fields) for _, setup in sorted(catalogue.setups.items())}


def _aggregate(outcomes: Sequence[tuple[int, Outcome]]) -> Outcome:
    statuses = {o.status for _, o in outcomes}
    status: ClaimStatus = (
        "fail" if "fail" in statuses else "not evaluable" if "not evaluable" in statuses else "pass"
    )
    # A check that names its run already says the seed; the others get it in front.
    texts = [
        o.measured if re.search(rf"\bseed {seed}\b", o.measured) else f"seed {seed}: {o.measured}"
        for seed, o in outcomes
    ]
    return Outcome(status, "; ".join(texts), {str(seed): o.value for seed, o in outcomes})


def _judge(claim: Claim, runs: Mapping[str, list[RunRecord]]) -> Outcome:
    used = [r for records in runs.values() for r in records]
    if (bad := runs_not_ok(used)) is not None:
        return bad
    if claim.per_seed:
        seeds = sorted({r.seed for r in used})
        return _aggregate(
            [
                (seed, judge(claim, {role: [r for r in rs if r.seed == seed] for role, rs in runs.items()}))
                for seed in seeds
            ]
        )
    outcome = judge(claim, runs)
    if claim.timed and not all(timing_guarded(r) for r in used):
        unguarded = ", ".join(
            sorted({f"{r.experiment}/{r.setup_name}" for r in used if not timing_guarded(r)})
        )
        return Outcome(
            "not evaluable",
            (
                f"runs of {unguarded} were not timed under the quiet-machine guard (`lorabench run --timed`), which "
                f"the suite requires for a time claim; from them: {outcome.measured}"
            ),
            outcome.value,
        )
    return outcome


def _same_mode_variant(
    claim: Claim, group: ReportGroup, catalogue: Catalogue, found: Mapping[str, list[RunRecord]]
) -> tuple[dict[str, list[RunRecord]], str] | None:
    """For a time or memory claim whose two setups ran in different compile modes: the records with one
    role's runs replaced by a run of its own setup that changed recipe.compile only, to the other role's
    mode (e.g. `--set recipe.compile=none`), and a note naming it; None when there is no such run."""
    if not is_cost_claim(claim) or len(found) != 2 or not all(found.values()):
        return None
    (a, runs_a), (b, runs_b) = found.items()
    if not cost_mismatch(runs_a, runs_b):
        return None
    for role, other in ((a, b), (b, a)):
        key = catalogue.key(claim.setups[role])
        suite = group.suite_setup(key)
        if suite is None:
            continue
        experiment, name = key.split("/", 1)
        for variant in group.setups(experiment):
            if not variant.is_variant or not variant.setup.startswith(f"{name} ("):
                continue
            changed = {d.split(":", 1)[0] for d in differences(suite.records, variant.records)} - {
                "lorabench commit"
            }
            if changed <= set(COST_SETTINGS) and not cost_mismatch(variant.records, found[other]):
                note = f" ({role}: `{variant.setup}`, its setup run in the other's compile mode)"
                return {**found, role: sorted(variant.records, key=lambda r: r.seed)}, note
    return None


def _evaluate(claim: Claim, group: ReportGroup, catalogue: Catalogue) -> ClaimResult:
    if claim.across_stacks:
        return _evaluate_runs(claim, None, catalogue)
    found = {role: _records(group, catalogue.key(path)) for role, path in claim.setups.items()}
    if (swapped := _same_mode_variant(claim, group, catalogue, found)) is not None:
        return _evaluate_runs(claim, swapped[0], catalogue, swapped[1])
    return _evaluate_runs(claim, found, catalogue)


def _common_seeds(runs: Mapping[str, list[RunRecord]]) -> tuple[dict[str, list[RunRecord]], str]:
    """The runs of the seeds run for every setup, and a note naming the seeds left out."""
    seed_sets = [{r.seed for r in rs} for rs in runs.values()]
    common = set.intersection(*seed_sets)
    left_out = sorted(set.union(*seed_sets) - common)
    note = f" (seeds {', '.join(map(str, left_out))} left out: not run for every setup)" if left_out else ""
    return {role: [r for r in rs if r.seed in common] for role, rs in runs.items()}, note


def _differs(
    claim: Claim, runs: Mapping[str, list[RunRecord]], names: Sequence[str]
) -> tuple[list[str] | None, str | None]:
    """The settings a two-setup claim's runs differ in, and why a cost claim cannot compare them (or None)."""
    files = list(dict.fromkeys(claim.setups.values()))
    if len(files) != 2:
        return None, None
    first, second = (next(rs for role, rs in runs.items() if claim.setups[role] == path) for path in files)
    if is_cost_claim(claim) and (mismatch := cost_mismatch(first, second)):
        return differences(first, second), (
            f"compares {names[0]} and {names[-1]} runs made in different compile modes ({'; '.join(mismatch)}): "
            "CUDA graphs keep memory pools and change the step time, so the figure would measure the compile "
            "mode; run both setups with the same recipe.compile"
        )
    return differences(first, second), None


def _evaluate_runs(
    claim: Claim, found: Mapping[str, list[RunRecord]] | None, catalogue: Catalogue, which: str = ""
) -> ClaimResult:
    """The claim on the records found for each role (None: a cross-stack claim asked of one scorecard);
    `which`: a note on which runs a role read when they are not its setup's plain runs."""
    keys = {role: catalogue.key(path) for role, path in claim.setups.items()}
    names = list(dict.fromkeys(keys.values()))
    bound = claim.bound_text() + f" (`{claim.bound_file.name}`)"

    def result(
        status: ClaimStatus,
        measured: str,
        differs: Sequence[str] | None = None,
        value: Any = None,
        runs: Mapping[str, Sequence[RunRecord]] | None = None,
    ) -> ClaimResult:
        return ClaimResult(
            claim,
            status,
            measured,
            bound,
            " vs ".join(names),
            None if differs is None else tuple(differs),
            value,
            dict(runs or found or {}),
        )

    if found is None:
        return result(
            "not evaluable",
            "compares two stacks of this host; a scorecard holds one (the index judges it "
            "when `lorabench report` is given both stacks' records)",
        )
    if missing := [keys[role] for role, rs in found.items() if not rs]:
        return result(
            "not evaluable", f"no records of {', '.join(dict.fromkeys(missing))} on this host and stack"
        )
    runs, note = _common_seeds(found)
    if not any(runs.values()):
        return result("not evaluable", f"no seed was run for every setup{note}")
    differs, mismatch = _differs(claim, runs, names)
    if mismatch:
        return result("not evaluable", mismatch, differs, runs=runs)
    outcome = _judge(claim, runs)
    return result(outcome.status, outcome.measured + note + which, differs, outcome.value, runs)


def load_setups(benchmarks: Path, setups: Sequence[Path] = ()) -> Catalogue | None:
    """The catalogue of the suite's built-in setups (`benchmarks/setups`) and the folders `setups` (a
    user's own); None when the built-in folder is not there and no folder was given (nothing to judge)."""
    built_in = benchmarks / BUILT_IN_SETUPS
    folders = [built_in] if built_in.is_dir() else []
    folders += [f for f in setups if f.resolve() not in {b.resolve() for b in folders}]
    return load_catalogue(folders) if folders else None


def evaluate_claims(group: ReportGroup, catalogue: Catalogue | None) -> tuple[ClaimResult, ...] | None:
    """Every claim of each experiment that has records here (of a setup that declares one of its claims);
    None without a catalogue (so nothing can be judged)."""
    if catalogue is None:
        return None
    present = {f"{r.experiment}/{r.setup_name}" for r in group.records}
    shown = {
        name
        for name, files in catalogue.experiments().items()
        if any(catalogue.key(f) in present for f in files)
    }
    return tuple(
        _evaluate(claim, group, catalogue) for claim in catalogue.claims if claim.experiment in shown
    )


@dataclass(frozen=True)
class AcrossStacks:
    """The cross-stack claims (Exp E) for one host, judged on two of its stacks' records."""

    host: str
    other: str  # the reference stack (a claim's first role)
    this: str
    results: tuple[ClaimResult, ...]


def _across(claim: Claim, other: ReportGroup, this: ReportGroup, catalogue: Catalogue) -> ClaimResult:
    (first, first_file), (second, second_file) = claim.setups.items()
    found = {
        first: _records(other, catalogue.key(first_file)),
        second: _records(this, catalogue.key(second_file)),
    }
    return _evaluate_runs(claim, found, catalogue)


def evaluate_across_stacks(
    groups: Sequence[ReportGroup], catalogue: Catalogue | None
) -> list[AcrossStacks] | None:
    """For every host with a cross-stack claim's setup on two or more stacks, each pair of its stacks
    (sorted by name, the first as the reference), judged like a scorecard's claims; None without a catalogue."""
    if catalogue is None:
        return None
    claims = [c for c in catalogue.claims if c.across_stacks]
    keys = {catalogue.key(path) for c in claims for path in c.setups.values()}
    found: list[AcrossStacks] = []
    for host in sorted({g.host for g in groups}):
        having = [
            g
            for g in groups
            if g.host == host and {f"{r.experiment}/{r.setup_name}" for r in g.records} & keys
        ]
        for i, other in enumerate(having):
            for this in having[i + 1 :]:
                results = tuple(_across(claim, other, this, catalogue) for claim in claims)
                found.append(AcrossStacks(host, other.stack, this.stack, results))
    return found


def _marks(result: ClaimResult, sharing: Mapping[str, Sharing | None]) -> str:
    """A cost claim's marks per role (conditions.LEGEND), so its figure carries its runs' conditions."""
    if not is_cost_claim(result.claim) or not result.runs:
        return "–"
    parts = []
    for role, records in result.runs.items():
        marks = conditions([(r, sharing.get(r.run_id)) for r in records]).marks if records else ""
        parts.append(f"{role}: {marks or 'none'}")
    return "; ".join(parts)


def claims_table(results: Sequence[ClaimResult], sharing: Mapping[str, Sharing | None] | None = None) -> str:
    """The claims; `sharing`: each record's company by run id (`conditions.survey`), for the marks on the
    figures of cost claims (time, memory)."""
    rows = [
        [
            r.claim.experiment,
            r.claim.name,
            r.setups,
            r.bound,
            r.measured,
            RESULT_WORDS[r.status],
            "–" if r.differs is None else "; ".join(r.differs) or "nothing",
            _marks(r, sharing or {}),
        ]
        for r in results
    ]
    return table(
        rows,
        [
            "experiment",
            "claim",
            "setups",
            "bound",
            "measured",
            "result",
            "settings the setups differ in",
            "marks (cost claims)",
        ],
    )


def claim_counts(results: Sequence[ClaimResult]) -> dict[ClaimStatus, int]:
    return {
        status: sum(1 for r in results if r.status == status) for status in ("fail", "not evaluable", "pass")
    }
