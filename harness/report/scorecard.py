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
from harness.report import charts, tables
from harness.report.groups import ReportGroup, SetupRuns
from harness.report.miss_section import miss_section
from harness.results import slug

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


def report_dir(out_dir: Path, host: str, stack: str) -> Path:
    return out_dir / slug(host) / slug(stack)


def verdict_line(group: ReportGroup, assessments: tuple[Assessment, ...]) -> str:
    counts = Counter(r.status for r in group.records)
    n, ok = len(group.records), counts.get("ok", 0)
    others = ", ".join(f"{counts[s]} {s}" for s in STATUS_WORDS if counts.get(s))
    n_setups = sum(len(group.setups(e)) for e in group.experiments)
    complete = sum(
        1 for e in group.experiments for s in group.setups(e) if s.runs and len(s.ok) == len(s.runs)
    )
    caught = sum(1 for a in assessments if a.result.status == "caught")
    parts = [
        f"{ok} of {n} runs ok" + (f" ({others})" if others else ""),
        f"{complete} of {n_setups} setups ok on every seed",
        f"{caught} finding(s) caught" if caught else "no finding caught",
    ]
    return " · ".join(parts)


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("harness.report", "templates"), undefined=StrictUndefined, keep_trailing_newline=True,
        trim_blocks=True, lstrip_blocks=True, autoescape=False,
    )  # fmt: skip


# The experiment the others (QLoRA, two cards, backends, …) are judged against: the plain LoRA run.
REFERENCE_EXPERIMENT = "exp_a"


def _model_and_task(setup: SetupRuns) -> tuple[Any, Any]:
    first = setup.records[0].setup
    return (first.get("model") or {}).get("source"), first.get("task", "sql")


def _against_reference(group: ReportGroup, experiment: str, setups: Sequence[SetupRuns]) -> dict[str, str] | None:
    """This experiment's setups against Exp A's setup of the same model and task, on this host and stack."""
    if experiment == REFERENCE_EXPERIMENT:
        return None
    for reference in group.setups(REFERENCE_EXPERIMENT):
        same = [s for s in setups if _model_and_task(s) == _model_and_task(reference)]
        if same:
            return {"reference": reference.setup, "table": tables.comparison_table(same, reference=reference) or ""}
    return None


def _experiment_context(group: ReportGroup, experiment: str, img_dir: Path) -> dict[str, Any]:
    setups = group.setups(experiment)
    made = [
        charts.loss_chart(experiment, setups, img_dir / f"{slug(experiment)}-loss.png"),
        charts.memory_chart(experiment, setups, img_dir / f"{slug(experiment)}-memory.png"),
        charts.time_chart(experiment, setups, img_dir / f"{slug(experiment)}-time.png"),
    ]
    misses = []
    for setup in setups:
        section = miss_section(setup)
        if section is not None:
            ceiling = section.analysis.estimated_exact_match_ceiling
            misses.append({
                "setup": section.setup, "seeds": ", ".join(map(str, section.seeds)), "analysis": section.analysis,
                "ceiling": "–" if ceiling is None else f"{ceiling:.1f}%", "table": section.render(),
            })  # fmt: skip
    return {
        "name": experiment,
        "table": tables.experiment_table(setups),
        "comparison": tables.comparison_table(setups),
        "against_reference": _against_reference(group, experiment, setups),
        "reference": setups[0].setup,
        "charts": [
            {"alt": tables.md_cell(c.alt).replace("]", ")").replace("[", "("), "src": f"img/{c.path.name}"}
            for c in made
            if c
        ],
        "misses": misses,
    }


def render_scorecard(group: ReportGroup, out_dir: Path) -> ReportSummary:
    """Write the scorecard, its images and summary.json under `out_dir/<host>/<stack>/`."""
    target = report_dir(out_dir, group.host, group.stack)
    assessments = assess_findings(group.records)
    verdict = verdict_line(group, assessments)
    context = {
        "host": group.host, "stack": group.stack, "verdict": verdict, "date": group.date,
        "n_records": len(group.records), "results_hint": f"<results>/{slug(group.stack)}/{slug(group.host)}/",
        "findings_table": tables.findings_table(assessments),
        "registry_table": tables.registry_table(assessments),
        "experiments": [_experiment_context(group, e, target / "img") for e in group.experiments],
        "failures": tables.failures_table(group), "provenance": tables.provenance_table(group),
        "peaks": tables.peaks_used_table(group), "packages": tables.packages_table(group),
    }  # fmt: skip
    text = _environment().get_template("scorecard.md.j2").render(**context)
    target.mkdir(parents=True, exist_ok=True)
    (target / "scorecard.md").write_text(text, encoding="utf-8")
    summary = ReportSummary(
        group.host, group.stack, group.date, verdict, f"{slug(group.host)}/{slug(group.stack)}/scorecard.md"
    )
    (target / SUMMARY_FILE).write_text(
        json.dumps(asdict(summary), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return summary
