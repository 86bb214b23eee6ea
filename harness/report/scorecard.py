"""One scorecard per host × stack: `reports/<host>/<stack>/scorecard.md`, its charts in `img/`, and a
`summary.json` the index is built from. Same records in → same bytes out (no clock, stable orders)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from harness.findings import Assessment, assess_findings
from harness.json_types import JsonObject
from harness.report import charts, likeness, tables
from harness.report.across import platform_of
from harness.report.claim_table import ClaimResult, claim_counts, claims_table, evaluate_claims
from harness.report.conditions import LEGEND
from harness.report.groups import ReportGroup, SetupRuns
from harness.report.settings import public
from harness.results import slug
from harness.suite.catalogue import Catalogue
from harness.tasks.registry import task_module

SUMMARY_FILE = "summary.json"
STATUS_WORDS = ("failed", "diverged", "killed", "refused")


@dataclass(frozen=True)
class ReportSummary:
    """What the index shows for one scorecard; written beside it as summary.json."""

    host: str
    stack: str
    date: str
    verdict: str
    path: str  # the scorecard, relative to the reports folder
    platform: str = ""  # 'CUDA 13.0', 'ROCm (HIP 7.2.26015)', 'CPU' (summaries written before it: empty)
    claims_judged: int | None = None  # claims that passed or failed here (summaries written before it: None)
    claims_total: int | None = None  # claims in the suite (the catalogue's)


def report_dir(out_dir: Path, host: str, stack: str) -> Path:
    return out_dir / slug(host) / slug(stack)


def _claims_part(claims: Sequence[ClaimResult] | None, total: int | None) -> tuple[str, str]:
    """(head word, claims part) of the verdict: a failed claim is never green, nor one left unjudged. The
    part says how many of the suite's `total` claims were judged (passed or failed), so a PASS on 2 of
    24 does not read as the whole suite's."""
    if claims is None:
        return "INCOMPLETE", "claims not judged (the suite's setup files were not found)"
    if not claims:
        return "NO CLAIMS", f"0 of {total or 0} claims judged: no setup of the suite ran here"
    counts = claim_counts(claims)
    judged = counts["pass"] + counts["fail"]
    words = f"{judged} of {total or len(claims)} claims judged: " + ", ".join(
        f"{counts[s]} {s}" for s in ("fail", "not evaluable", "pass") if counts[s]
    )
    head = "FAIL" if counts["fail"] else "INCOMPLETE" if counts["not evaluable"] else "PASS"
    return head, words


def _checks_part(group: ReportGroup) -> str:
    counts = Counter(v.verdict for r in group.records for v in r.checks.values())
    shown = [
        f"{counts[v]} {word}"
        for v, word in (("fail", "failed"), ("error", "errored"), ("skipped", "skipped"))
        if counts[v]
    ]
    if not counts:
        return "no checks recorded"
    return "checks: " + ", ".join(shown) if shown else f"checks: all {sum(counts.values())} passed"


def verdict_line(
    group: ReportGroup,
    assessments: tuple[Assessment, ...],
    claims: Sequence[ClaimResult] | None,
    total: int | None = None,
) -> str:
    """Claims first: FAIL when one fails or a finding was caught; INCOMPLETE when a claim is not evaluable
    or a check errored; PASS only when every claim passed and nothing else was left open."""
    counts = Counter(r.status for r in group.records)
    n, ok = len(group.records), counts.get("ok", 0)
    others = ", ".join(f"{counts[s]} {s}" for s in STATUS_WORDS if counts.get(s))
    caught = sum(1 for a in assessments if a.result.status == "caught")
    check_errors = sum(1 for r in group.records for v in r.checks.values() if v.verdict == "error")
    head, claims_text = _claims_part(claims, total)
    if caught:
        head = "FAIL"
    elif check_errors and head == "PASS":
        head = "INCOMPLETE"
    parts = [
        head,
        claims_text,
        f"{ok} of {n} runs ok" + (f" ({others})" if others else ""),
        _checks_part(group),
        f"{caught} finding(s) caught" if caught else "no finding caught",
    ]
    return " · ".join(parts)


def templates() -> Environment:
    """The report's Jinja templates (harness/report/templates), rendered as written: no escaping."""
    return Environment(
        loader=PackageLoader("harness.report", "templates"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


# The experiment the others (QLoRA, two cards, backends, …) are judged against: the plain LoRA run.
REFERENCE_EXPERIMENT = "exp_a"


def _model_and_task(setup: SetupRuns) -> tuple[Any, Any]:
    return setup.records[0].setup.model.source, setup.records[0].task


def reference_pairs(group: ReportGroup, experiment: str, setups: Sequence[SetupRuns]) -> list[tables.Pair]:
    """This experiment's setups, each against the Exp A setup of the same model and task on this host and
    stack that is its best reference (likeness.closeness); none for Exp A itself."""
    if experiment == REFERENCE_EXPERIMENT:
        return []
    pairs = []
    for s in setups:
        candidates = [
            r for r in group.setups(REFERENCE_EXPERIMENT) if _model_and_task(s) == _model_and_task(r)
        ]
        if candidates:
            pairs.append((min(candidates, key=lambda r: likeness.closeness(r, s)), s))
    return pairs


def _miss_section(setup: SetupRuns) -> JsonObject | None:
    """The miss analysis of one setup, when its task has one: over the predictions of its ok seeds."""
    loaded = [item for item in setup.runs if item.record.status == "ok" and item.predictions]
    tasks = {item.record.task for item in loaded}
    if not loaded or len(tasks) != 1:
        return None
    analyze_runs = task_module(tasks.pop()).analyze_runs
    if analyze_runs is None:
        return None  # this task has no miss categories
    files = [item.predictions for item in loaded if item.predictions is not None]
    analysis = analyze_runs(files, [f"seed {item.record.seed}" for item in loaded], loaded[0].record)
    return {
        "setup": setup.setup,
        "seeds": ", ".join(str(item.record.seed) for item in loaded),
        "analysis": analysis,
        "table": tables.table(
            analysis.category_rows(shown=10), ["category", "questions", "%", "question indices"]
        ),
    }


def _experiment_context(
    group: ReportGroup, experiment: str, img_dir: Path, made_images: list[Path]
) -> JsonObject:
    setups = group.setups(experiment)
    made = [
        charts.loss_chart(experiment, setups, img_dir / f"{slug(experiment)}-loss.png"),
        charts.memory_chart(experiment, setups, img_dir / f"{slug(experiment)}-memory.png"),
        charts.time_chart(experiment, setups, img_dir / f"{slug(experiment)}-time.png"),
    ]
    made_images.extend(c.path for c in made if c)
    misses = [section for setup in setups if (section := _miss_section(setup)) is not None]
    return {
        "name": experiment,
        "table": tables.experiment_table(setups),
        "marks_note": tables.marks_note(setups),
        "comparison": tables.comparison_tables(likeness.nearest_pairs(setups)),
        "against_reference": tables.comparison_tables(reference_pairs(group, experiment, setups)),
        "charts": [
            {"alt": tables.md_cell(c.alt).replace("]", ")").replace("[", "("), "src": f"img/{c.path.name}"}
            for c in made
            if c
        ],
        "misses": misses,
    }


def remove_stale_images(img_dir: Path, made: Sequence[Path]) -> None:
    """Charts left from an earlier report that this one does not reference (a setup gone, a chart no
    longer drawn) are removed: an image in the folder is one the scorecard shows."""
    keep = {p.name for p in made}
    for path in sorted(img_dir.glob("*.png")) if img_dir.is_dir() else []:
        if path.name not in keep:
            path.unlink()


def render_scorecard(
    group: ReportGroup, out_dir: Path, catalogue: Catalogue | None, benchmarks: Path
) -> ReportSummary:
    """Write the scorecard, its images and summary.json under `out_dir/<host>/<stack>/`; the claims are
    the catalogue's (None: no setup files under `benchmarks`, so none is judged)."""
    target = report_dir(out_dir, group.host, group.stack)
    assessments = assess_findings(group.records)
    made_images: list[Path] = []
    claims = evaluate_claims(group, catalogue)
    total = None if catalogue is None else len(catalogue.claims)
    verdict = verdict_line(group, assessments, claims, total)
    context = {
        "claims": None
        if claims is None
        else claims_table(claims, {i.record.run_id: i.sharing for i in group.runs})
        if claims
        else "",
        "benchmarks": public(str(benchmarks)),
        "host": group.host,
        "stack": group.stack_label,
        "verdict": verdict,
        "date": group.date,
        "n_records": len(group.records),
        "results_hint": f"<results>/{slug(group.stack)}/{slug(group.host)}/",
        "findings_table": tables.findings_table(assessments),
        "registry_table": tables.registry_table(assessments),
        "experiments": [
            _experiment_context(group, e, target / "img", made_images) for e in group.experiments
        ],
        "legend": LEGEND,
        "mfu_convention": tables.MFU_CONVENTION,
        "failures": tables.failures_table(group),
        "provenance": tables.provenance_table(group),
        "ranks": tables.ranks_table(group),
        "peaks": tables.peaks_used_table(group),
        "packages": tables.packages_table(group),
    }
    text = templates().get_template("scorecard.md.j2").render(**context)
    target.mkdir(parents=True, exist_ok=True)
    (target / "scorecard.md").write_text(text, encoding="utf-8")
    remove_stale_images(target / "img", made_images)
    summary = ReportSummary(
        group.host,
        group.stack_label,
        group.date,
        verdict,
        f"{slug(group.host)}/{slug(group.stack)}/scorecard.md",
        platform_of(group.records),
        None if claims is None else sum(1 for c in claims if c.status != "not evaluable"),
        total,
    )
    (target / SUMMARY_FILE).write_text(
        json.dumps(asdict(summary), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return summary
