"""The machine-readable outputs of `lorabench report --json` and `lorabench compare --json`, as pydantic
models, and their published JSON Schemas (`harness/report/schemas/*.json`; the run record's are
harness/record_schema.py's).

`--json` means the same in every command: the output on stdout, as JSON, instead of the human text.
Paths in them are relative or cut to their last part (`harness.report.settings.public`), as in reports.
Regenerate the schemas after a change with `python -m harness.report.outputs` (a test checks they match).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness import stats
from harness.report import tables
from harness.report.claim_table import ClaimResult
from harness.report.conditions import Conditions, conditions
from harness.report.groups import ReportGroup, SetupRuns
from harness.report.scorecard import ReportSummary
from harness.report.settings import public

SCHEMAS = Path(__file__).resolve().parent / "schemas"
REPORT_FORMAT = "lorabench-report/1"
COMPARE_FORMAT = "lorabench-compare/1"


class Output(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConditionsOut(Output):
    """The conditions a set of runs' figures were measured under (harness/report/conditions.py)."""

    timing: str = Field(description="timed (guard) / timed, noise seen / not timed, every value its runs had")
    sharing: str = Field(
        description="alone (guard), one of k runs at once (on the same devices or on the host), or not known"
    )
    commit: str = Field(description="lorabench commit(s), '(dirty)' when the tree had uncommitted changes")
    window: str = Field(description="the steps the steady figures read ('steps 31–300') or 'whole run'")
    marks: str = Field(description="the marks tables and charts show: † ×k ×k? ?")


class Figure(Output):
    mean: float
    min: float
    max: float
    n: int = Field(description="ok runs that hold the figure")


class SetupOut(Output):
    experiment: str
    setup: str = Field(description="the setup's name, or a variant's: 'name (setting=value, …)'")
    is_variant: bool = Field(
        description="runs of the setup name with other settings than the suite's setup file"
    )
    runs: int
    ok: int
    figures: dict[str, Figure] = Field(description="metric → mean, min, max and n over ok runs")
    conditions: ConditionsOut


class ClaimOut(Output):
    experiment: str
    name: str
    setups: str
    status: Literal["pass", "fail", "not evaluable"]
    bound: str
    measured: str
    value: Any = Field(
        None, description="the figure judged (per seed: seed → figure); null when not evaluable"
    )
    n: dict[str, int] = Field(description="role → runs read")
    conditions: dict[str, ConditionsOut] = Field(description="role → the conditions of the runs read")
    differs: list[str] | None = Field(
        description="settings the claim's two setups differ in; null: one setup"
    )


class ScorecardOut(Output):
    host: str
    stack: str
    platform: str
    verdict: str
    path: str = Field(description="the scorecard, relative to the reports folder")
    claims_judged: int | None
    claims_total: int
    claims: list[ClaimOut] | None = Field(description="null: the suite's setup files were not found")
    setups: list[SetupOut]


class ReportOut(Output):
    format: Literal["lorabench-report/1"] = REPORT_FORMAT
    scorecards: list[ScorecardOut]
    missing_platforms: list[str] = Field(description="a line per platform no record comes from yet")


class SideOut(Output):
    paths: list[str]
    records: int
    host_kinds: str
    stacks: str


class ChangeOut(Output):
    setup: str
    metric: str
    old: float
    new: float
    ratio: float | None
    n_old: int
    n_new: int
    test: str
    p_value: float | None
    significant: bool
    regression: bool
    conditions_old: ConditionsOut
    conditions_new: ConditionsOut


class MissingOut(Output):
    setup: str
    metric: str
    side: Literal["OLD", "NEW"] = Field(description="the side that lacks the metric")
    why: str


class CompareOut(Output):
    format: Literal["lorabench-compare/1"] = COMPARE_FORMAT
    old: SideOut
    new: SideOut
    unlike: list[str] = Field(
        description="what makes the sides unlike (host kind, stack, settings); empty: like"
    )
    allowed_unlike: bool
    changes: list[ChangeOut]
    missing: list[MissingOut]
    unmatched: list[str]
    regressions: int
    exit_status: int


# The run record's schemas, one per format, are harness/record_schema.py's.
PUBLISHED: dict[str, type[BaseModel]] = {"report": ReportOut, "compare": CompareOut}


def schema_text(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(mode="serialization")
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write_schemas(folder: Path = SCHEMAS) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in PUBLISHED.items():
        path = folder / f"{name}.schema.json"
        path.write_text(schema_text(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_schemas():
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path.name)


# --- from the report's objects -------------------------------------------------------------------


def conditions_out(found: Conditions) -> ConditionsOut:
    return ConditionsOut(
        timing=found.timing,
        sharing=found.sharing,
        commit=found.commit,
        window=found.window,
        marks=found.marks,
    )


def _figures(setup: SetupRuns) -> dict[str, Figure]:
    task_getters = {c.label: tables.column_getter(c) for c in tables.task_columns([setup])}
    getters = {
        "baseline exact match %": tables.baseline_em,
        "trained exact match %": tables.trained_em,
        "gain (points)": tables.gain,
        **task_getters,
        "train time (s)": tables.train_seconds,
        "step (s, steady)": tables.step_seconds,
        "peak VRAM (GiB)": tables.peak_vram_gib,
        "tokens/s (steady)": tables.tokens_per_s,
        "MFU % (steady)": tables.mfu_percent,
    }
    out = {}
    for name, getter in getters.items():
        if found := tables.values(setup.ok, getter):
            out[name] = Figure(mean=stats.mean(found), min=min(found), max=max(found), n=len(found))
    return out


def setup_out(setup: SetupRuns) -> SetupOut:
    return SetupOut(
        experiment=setup.experiment,
        setup=setup.setup,
        is_variant=setup.is_variant,
        runs=len(setup.runs),
        ok=len(setup.ok),
        figures=_figures(setup),
        conditions=conditions_out(setup.conditions),
    )


def claim_out(result: ClaimResult, group: ReportGroup) -> ClaimOut:
    by_id = {item.record.run_id: item for item in group.runs}
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
        conditions={role: conditions_out(conditions(runs)) for role, runs in found.items() if runs},
        differs=None if result.differs is None else [public(d) for d in result.differs],
    )


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
        claims=None if claims is None else [claim_out(c, group) for c in claims],
        setups=[setup_out(s) for e in group.experiments for s in group.setups(e)],
    )
