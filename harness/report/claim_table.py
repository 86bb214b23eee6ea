"""The suite's claims judged on one host × stack's records: the same claims (`harness.suite.catalogue`),
the same judgments (`harness.suite.claims`), the bounds from the same setup files' `[claims]` tables.

The records a claim reads are its setups' records on this host and stack, every seed found, paired by
seed where a claim pairs: seeds not run for every setup of a claim are left out and named. As in the
suite, a run that did not finish ok fails the claims that read it. A time claim of a timed experiment
is judged on runs timed under the quiet-machine guard only (the suite never reuses an untimed record
for one); on others it is "not evaluable" and shows the unguarded figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, UserError
from harness.report.conditions import Sharing, conditions
from harness.report.groups import ReportGroup
from harness.report.likeness import COST_SETTINGS, cost_mismatch
from harness.report.settings import differences, file_settings
from harness.report.tables import table
from harness.results import RunRecord
from harness.suite.catalogue import CLAIMS, EXPERIMENTS, Claim, is_cost_claim, judge
from harness.suite.claims import ClaimStatus, Outcome, runs_not_ok, timing_guarded
from harness.suite.setups import BenchSetup, load_bench_setup

# Where `lorabench report` finds the suite's setup files when not told: the suite `lorabench bench` runs.
DEFAULT_BENCHMARKS = Path("benchmarks")
RESULT_WORDS: Mapping[ClaimStatus, str] = {"pass": "pass", "fail": "**FAIL**", "not evaluable": "*not evaluable*"}


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


class _SetupFiles:
    """The suite's setup files under one benchmarks folder, each read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._loaded: dict[str, BenchSetup | str] = {}

    def get(self, name: str) -> BenchSetup | str:
        """The setup, or why it cannot be read."""
        if name not in self._loaded:
            try:
                self._loaded[name] = load_bench_setup(self.root / name)
            except (ConfigError, UserError, OSError) as exc:
                self._loaded[name] = f"{self.root / name}: {exc}"
        return self._loaded[name]

    def key(self, name: str) -> str | None:
        setup = self.get(name)
        return None if isinstance(setup, str) else f"{setup.fields.get('experiment')}/{setup.fields.get('name')}"


def _records(group: ReportGroup, key: str | None) -> list[RunRecord]:
    """The suite's setup's records: runs of the same name with other settings (overrides) are not it."""
    setup = group.suite_setup(key)
    return sorted(setup.records, key=lambda r: r.seed) if setup else []


def setup_references(benchmarks: Path) -> dict[str, dict[str, str]]:
    """"experiment/setup" → the setup file's own settings, for every setup file of the suite (none
    without the suite's folder): which runs of a setup name are the suite's setup."""
    files = _SetupFiles(benchmarks)
    out: dict[str, dict[str, str]] = {}
    for path in sorted((benchmarks / "setups").glob("*.toml")) if (benchmarks / "setups").is_dir() else []:
        setup = files.get(f"setups/{path.name}")
        if isinstance(setup, BenchSetup):
            out[f"{setup.fields.get('experiment')}/{setup.fields.get('name')}"] = file_settings(setup.fields)
    return out


def _aggregate(outcomes: Sequence[tuple[int, Outcome]]) -> Outcome:
    statuses = {o.status for _, o in outcomes}
    status: ClaimStatus = "fail" if "fail" in statuses else "not evaluable" if "not evaluable" in statuses else "pass"
    # A check that names its run already says the seed; the others get it in front.
    texts = [o.measured if re.search(rf"\bseed {seed}\b", o.measured) else f"seed {seed}: {o.measured}" for seed, o in outcomes]
    return Outcome(status, "; ".join(texts), {str(seed): o.value for seed, o in outcomes})


def _judge(claim: Claim, runs: Mapping[str, list[RunRecord]], bounds: Mapping[str, Any]) -> Outcome:
    used = [r for records in runs.values() for r in records]
    if (bad := runs_not_ok(used)) is not None:
        return bad
    if claim.per_seed:
        seeds = sorted({r.seed for r in used})
        return _aggregate([
            (seed, judge(claim, {role: [r for r in rs if r.seed == seed] for role, rs in runs.items()}, bounds))
            for seed in seeds
        ])  # fmt: skip
    outcome = judge(claim, runs, bounds)
    if claim.timed and not all(timing_guarded(r) for r in used):
        unguarded = ", ".join(sorted({f"{r.experiment}/{r.setup_name}" for r in used if not timing_guarded(r)}))
        return Outcome("not evaluable", (
            f"runs of {unguarded} were not timed under the quiet-machine guard (`lorabench run --timed`), which "
            f"the suite requires for a time claim; from them: {outcome.measured}"
        ), outcome.value)  # fmt: skip
    return outcome


def _same_mode_variant(
    claim: Claim, group: ReportGroup, files: _SetupFiles, found: Mapping[str, list[RunRecord]]
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
        key = files.key(claim.setups[role])
        suite = group.suite_setup(key)
        if key is None or suite is None:
            continue
        experiment, name = key.split("/", 1)
        for variant in group.setups(experiment):
            if not variant.is_variant or not variant.setup.startswith(f"{name} ("):
                continue
            changed = {d.split(":", 1)[0] for d in differences(suite.records, variant.records)} - {"lorabench commit"}
            if changed <= set(COST_SETTINGS) and not cost_mismatch(variant.records, found[other]):
                note = f" ({role}: `{variant.setup}`, its setup run in the other's compile mode)"
                return {**found, role: sorted(variant.records, key=lambda r: r.seed)}, note
    return None


def _evaluate(claim: Claim, group: ReportGroup, files: _SetupFiles) -> ClaimResult:
    if claim.cross_stack:
        return _evaluate_runs(claim, None, files)
    found = {role: _records(group, files.key(name)) for role, name in claim.setups.items()}
    if (swapped := _same_mode_variant(claim, group, files, found)) is not None:
        return _evaluate_runs(claim, swapped[0], files, swapped[1])
    return _evaluate_runs(claim, found, files)


def _evaluate_runs(
    claim: Claim, found: Mapping[str, list[RunRecord]] | None, files: _SetupFiles, which: str = ""
) -> ClaimResult:
    """The claim on the records found for each role (None: a cross-stack claim asked of one scorecard);
    `which`: a note on which runs a role read when they are not its setup's plain runs."""
    keys = {role: files.key(name) for role, name in claim.setups.items()}
    names = list(dict.fromkeys(k or claim.setups[role] for role, k in keys.items()))
    bound_setup = files.get(claim.bound_file)
    bounds = bound_setup.claims if isinstance(bound_setup, BenchSetup) else {}
    try:
        bound = claim.bound_text(bounds) + f" (`{Path(claim.bound_file).name}`)"
    except (KeyError, ValueError):
        bound = f"`{Path(claim.bound_file).name}` [claims] lacks {', '.join(claim.required)}"

    def result(status: ClaimStatus, measured: str, differs: Sequence[str] | None = None, value: Any = None,
               runs: Mapping[str, Sequence[RunRecord]] | None = None) -> ClaimResult:  # fmt: skip
        return ClaimResult(claim, status, measured, bound, " vs ".join(names),
                           None if differs is None else tuple(differs), value, dict(runs or found or {}))  # fmt: skip

    unreadable = [files.get(name) for name in dict.fromkeys([*claim.setups.values(), claim.bound_file])]
    if problems := [p for p in unreadable if isinstance(p, str)]:
        return result("not evaluable", "; ".join(problems))
    if found is None:
        return result("not evaluable", "compares two stacks of this host; a scorecard holds one (the index judges it "
                      "when `lorabench report` is given both stacks' records)")  # fmt: skip
    runs = dict(found)
    if missing := [keys[role] for role, rs in runs.items() if not rs]:
        return result("not evaluable", f"no records of {', '.join(dict.fromkeys(str(m) for m in missing))} on this host and stack")
    seed_sets = [{r.seed for r in rs} for rs in runs.values()]
    common = set.intersection(*seed_sets)
    left_out = sorted(set.union(*seed_sets) - common)
    note = f" (seeds {', '.join(map(str, left_out))} left out: not run for every setup)" if left_out else ""
    if not common:
        return result("not evaluable", f"no seed was run for every setup{note}")
    runs = {role: [r for r in rs if r.seed in common] for role, rs in runs.items()}
    roles = list(dict.fromkeys(claim.setups.values()))
    differs: list[str] | None = None
    if len(roles) == 2:
        first, second = (next(rs for role, rs in runs.items() if claim.setups[role] == name) for name in roles)
        differs = differences(first, second)
        if is_cost_claim(claim) and (mismatch := cost_mismatch(first, second)):
            return result("not evaluable", (
                f"compares {names[0]} and {names[-1]} runs made in different compile modes ({'; '.join(mismatch)}): "
                "CUDA graphs keep memory pools and change the step time, so the figure would measure the compile "
                "mode; run both setups with the same recipe.compile"), differs, runs=runs)  # fmt: skip
    outcome = _judge(claim, runs, bounds)
    return result(outcome.status, outcome.measured + note + which, differs, outcome.value, runs)


def evaluate_claims(group: ReportGroup, benchmarks: Path) -> tuple[ClaimResult, ...] | None:
    """Every claim of each experiment that has records here (one of the setups it owns); None when the
    suite's setup files are not at `benchmarks` (so nothing can be judged)."""
    if not (benchmarks / "setups").is_dir():
        return None
    files = _SetupFiles(benchmarks)
    present = {f"{r.experiment}/{r.setup_name}" for r in group.records}
    shown = {e.name for e in EXPERIMENTS if any(files.key(s) in present for s in e.setups)}
    return tuple(_evaluate(claim, group, files) for claim in CLAIMS if claim.experiment in shown)


@dataclass(frozen=True)
class AcrossStacks:
    """The cross-stack claims (Exp E) for one host, judged on two of its stacks' records."""

    host: str
    other: str  # the reference stack (role "other")
    this: str
    results: tuple[ClaimResult, ...]


def evaluate_across_stacks(groups: Sequence[ReportGroup], benchmarks: Path) -> list[AcrossStacks] | None:
    """For every host with a cross-stack claim's setup on two or more stacks, each pair of its stacks
    (sorted by name, the first as the reference), judged like a scorecard's claims; None without the
    suite's setup files."""
    if not (benchmarks / "setups").is_dir():
        return None
    files = _SetupFiles(benchmarks)
    claims = [c for c in CLAIMS if c.cross_stack]
    keys = {files.key(name) for c in claims for name in c.setups.values()}
    found: list[AcrossStacks] = []
    hosts = sorted({g.host for g in groups})
    for host in hosts:
        having = [g for g in groups if g.host == host and {f"{r.experiment}/{r.setup_name}" for r in g.records} & keys]
        for i, other in enumerate(having):
            for this in having[i + 1 :]:
                results = tuple(
                    _evaluate_runs(claim, {"other": _records(other, files.key(claim.setups["other"])),
                                           "this": _records(this, files.key(claim.setups["this"]))}, files)
                    for claim in claims
                )  # fmt: skip
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
        [r.claim.experiment, r.claim.name, r.setups, r.bound, r.measured, RESULT_WORDS[r.status],
         "–" if r.differs is None else "; ".join(r.differs) or "nothing", _marks(r, sharing or {})]
        for r in results
    ]  # fmt: skip
    return table(rows, ["experiment", "claim", "setups", "bound", "measured", "result", "settings the setups differ in",
                        "marks (cost claims)"])  # fmt: skip


def claim_counts(results: Sequence[ClaimResult]) -> dict[ClaimStatus, int]:
    return {status: sum(1 for r in results if r.status == status) for status in ("fail", "not evaluable", "pass")}
