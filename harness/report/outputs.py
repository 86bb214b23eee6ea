"""The machine-readable outputs of `lorabench report --json` and `lorabench compare --json`, and the
refusal either prints in `--json` mode, as pydantic models, and their published JSON Schemas, one file per
output and format version (`harness/report/schemas/<name>-<version>.schema.json`; the run record's are
harness/record_schema.py's).

`--json` means the same in every command: the output on stdout, as JSON, instead of the human text.
Figures are keyed by one vocabulary (harness/report/metrics.py: `train_time_s`, `mfu_pct`, …), numbers
are numbers, and conditions are fields (`timing`, `sharing`, `window`, …), with the prose the tables
show beside them in `text`. Paths are relative or cut to their last part, as in reports.
Regenerate the schemas after a change with `python -m harness.report.outputs` (a test checks they match).

Format history: report 1 and compare 1 keyed figures by their table labels ("train time (s)") and
gave conditions as prose; 2 keys them as metrics.METRICS and adds the report's comparisons.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.report.metrics import METRICS

SCHEMAS = Path(__file__).resolve().parent / "schemas"
REPORT_FORMAT = "lorabench-report/2"
COMPARE_FORMAT = "lorabench-compare/2"
ERROR_FORMAT = "lorabench-error/1"
METRIC_KEYS = ", ".join(m.key for m in METRICS)

Timing = Literal["timed_guard", "timed_noise_seen", "not_timed"]
Sharing = Literal["alone_guard", "shared_devices", "shared_host", "unknown"]
WindowField = Literal["steady", "whole", "mixed"]


class Output(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConditionsOut(Output):
    """The conditions a set of runs' figures were measured under (harness/report/conditions.py); each
    list holds every value its runs had."""

    timing: list[Timing] = Field(
        description="timed under the quiet-machine guard, timed with noise seen, or not"
    )
    sharing: list[Sharing] = Field(
        description="alone (timed under the guard, nothing overlapping), beside other runs on the same devices "
        "or somewhere on the host, or unknown (untimed, no overlapping record)"
    )
    runs_at_once: int = Field(
        description="the most runs that ran at the same time as one of these, itself included"
    )
    commits: list[str] = Field(description="lorabench commits (7 hex digits)")
    dirty: bool = Field(description="a run's tree had uncommitted changes")
    window: WindowField | None = Field(
        description="where tokens_per_s and mfu_pct are read: the steady steps, the whole run (no steady step "
        "time recorded), or mixed over runs; null: no run trained"
    )
    steady_steps: list[list[int]] = Field(description="[first, last] steady step of each window read")
    marks: str = Field(description="the marks tables and charts show: † ×k ×k? ?")
    text: str = Field(description="the conditions in words, as the tables show them")


class Figure(Output):
    mean: float
    min: float
    max: float
    n: int = Field(description="ok runs that hold the figure")
    window: WindowField | None = Field(None, description="tokens_per_s and mfu_pct: where it is read")


class SetupOut(Output):
    experiment: str
    setup: str = Field(description="the setup's name, or a variant's: 'name (setting=value, …)'")
    is_variant: bool = Field(
        description="runs of the setup name with other settings than the suite's setup file"
    )
    runs: int
    ok: int
    figures: dict[str, Figure] = Field(
        description=f"metric key → mean, min, max and n over ok runs; keys: {METRIC_KEYS}, and the task's own "
        "scores (each task names its own, with the unit in the name)"
    )
    conditions: ConditionsOut


class SpeedupOut(Output):
    ratio: float = Field(description="reference mean / setup mean: above 1, the setup is faster")
    ci95_low: float | None = Field(description="seeded 95% bootstrap interval; null with one run on a side")
    ci95_high: float | None
    n_reference: int
    n_setup: int


class McNemarOut(Output):
    test: Literal["exact McNemar"]
    exact_match_diff_points: float = Field(description="setup − reference, over the paired questions")
    only_reference_right: int
    only_setup_right: int
    questions: int
    seeds: list[int]
    p_value: float


class EquivalenceOut(Output):
    test: Literal["TOST"] = "TOST"
    margin_points: float
    is_equivalent: bool | None = Field(description="null: fewer than 2 seeds run on both sides")
    diff_points: float | None
    ci90_low: float | None
    ci90_high: float | None
    p_value: float | None
    paired_seeds: int


class ComparisonOut(Output):
    experiment: str
    across: str | None = Field(
        None, description="across hosts × stacks: the setup compared, 'experiment/setup'; null in a scorecard"
    )
    setup: str
    reference: str = Field(description="the setup it is compared against ('exp_a/…' for the Exp A reference)")
    is_like: bool = Field(description="only the compared settings differ, under the same conditions")
    compared: list[str] = Field(description="the settings compared, 'key: setup's vs reference's'")
    differs: list[str] = Field(description="every other difference (settings; conditions); empty when like")
    speedup_train_time: SpeedupOut | None
    speedup_step: SpeedupOut | None
    exact_match: McNemarOut | None = Field(description="null: no paired predictions")
    equivalence: EquivalenceOut


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
    claims_judged: int | None = Field(description="claims passed or failed here; null: not judged")
    claims_total: int = Field(description="claims in the suite")
    claims: list[ClaimOut] | None = Field(description="null: the suite's setup files were not found")
    setups: list[SetupOut]
    comparisons: list[ComparisonOut] = Field(description="the scorecard's comparison tables, row by row")


class StacksOut(Output):
    """The cross-stack claims judged on one host's two stacks, as the index shows them."""

    host: str
    other: str = Field(description="the stack the claims' first setup ran on")
    this: str = Field(description="the stack the claims' second setup ran on")
    claims: list[ClaimOut]


class ReportOut(Output):
    format: Literal["lorabench-report/2"] = REPORT_FORMAT
    scorecards: list[ScorecardOut]
    across: list[ComparisonOut] = Field(
        description="the index's comparisons of one setup across hosts × stacks (its key in `across`); setup "
        "and reference name 'host · stack (platform)'"
    )
    stacks: list[StacksOut] | None = Field(
        description="cross-stack claims per host and pair of stacks; null: the suite's setup files were not found"
    )
    missing_platforms: list[str] = Field(description="a line per platform no record comes from yet")


class SideOut(Output):
    paths: list[str]
    records: int
    host_kinds: list[str]
    stacks: list[str]


class ChangeOut(Output):
    setup: str
    metric: str = Field(description=f"the metric key: one of {METRIC_KEYS}")
    old: float
    new: float
    ratio: float | None = Field(description="new / old; null when old is 0")
    n_old: int
    n_new: int
    test: str = Field(description="exact McNemar, Welch's t-test, or why none ran")
    p_value: float | None
    significant: bool
    regression: bool
    window_old: WindowField | None = Field(description="tokens_per_s and mfu_pct: where OLD's figure is read")
    window_new: WindowField | None
    windows_differ: bool = Field(
        description="steady steps against the whole run: not the same quantity, so never tested nor a regression"
    )
    conditions_old: ConditionsOut
    conditions_new: ConditionsOut


class MissingOut(Output):
    setup: str
    metric: str = Field(description="the metric key")
    side: Literal["OLD", "NEW"] = Field(description="the side that lacks the metric")
    why: str


class CompareOut(Output):
    format: Literal["lorabench-compare/2"] = COMPARE_FORMAT
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


class ErrorOut(Output):
    """What a command prints on stdout in `--json` mode when it refuses (the same line goes to stderr)."""

    format: Literal["lorabench-error/1"] = ERROR_FORMAT
    error: str = Field(description="the refusal: what is wrong, the value, the fix")
    exit_code: int = Field(
        description="the command's exit status (2: a user mistake or an environment fault)"
    )


# name → (model, format version): harness/report/schemas/<name>-<version>.schema.json
PUBLISHED: dict[str, tuple[type[BaseModel], int]] = {
    "report": (ReportOut, 2),
    "compare": (CompareOut, 2),
    "error": (ErrorOut, 1),
}


def schema_path(name: str, folder: Path = SCHEMAS) -> Path:
    return folder / f"{name}-{PUBLISHED[name][1]}.schema.json"


def schema_text(model: type[BaseModel]) -> str:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **model.model_json_schema(mode="serialization"),
    }
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write_schemas(folder: Path = SCHEMAS) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (model, _) in PUBLISHED.items():
        path = schema_path(name, folder)
        path.write_text(schema_text(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_schemas():
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path.name)
