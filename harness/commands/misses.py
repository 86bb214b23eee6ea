"""Analyse the misses across runs: which questions every run gets right, gets wrong, or splits on; within
them the fixes, style-only differences and bad-gold candidates."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tabulate import tabulate

from harness import catalog
from harness.commands._output import add_output_arguments, write_outputs
from harness.commands._paths import given_path
from harness.config import DATA_ENV
from harness.errors import UserError
from harness.results import RunRecord, load_record
from harness.tasks.registry import MissReport, task_module

_PREDICTIONS_SUFFIX = ".predictions.jsonl"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "misses",
        help="miss analysis across runs: always right, mixed, always wrong; fixes, style, bad-gold candidates",
        description=__doc__,
    )
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        type=given_path,
        help="a *.predictions.jsonl file, or a run record seed-N.json with seed-N.predictions.jsonl beside it",
    )
    parser.add_argument(
        "--data",
        metavar="FILE",
        help=f"a local copy of the runs' data, when the path their record names is not here (default ${DATA_ENV}); "
        "used only when its split hash matches the record's",
    )
    add_output_arguments(parser, "misses.json (the analysis)")
    parser.set_defaults(func=cmd_misses)


def predictions_path(path: Path) -> Path:
    """The predictions file for a RUN argument: itself, or the one beside a `seed-N.json` record."""
    if path.name.endswith(_PREDICTIONS_SUFFIX):
        return path
    if path.suffix == ".json":
        beside = path.with_name(path.stem + _PREDICTIONS_SUFFIX)
        if not beside.is_file():
            raise UserError(
                f"RUN {path}: no {beside.name} beside the record; pass the predictions file itself"
            )
        return beside
    raise UserError(f"RUN {path}: expected a *{_PREDICTIONS_SUFFIX} file or a run record *.json")


def _record_beside(path: Path) -> RunRecord | None:
    record_file = path.with_name(path.name.removesuffix(_PREDICTIONS_SUFFIX) + ".json")
    if not record_file.is_file():
        return None
    try:
        return load_record(record_file)
    except (UserError, ValueError):
        return None


def render_table(analysis: MissReport) -> str:
    table = analysis.category_rows(shown=8, empty="-")
    lines = [
        f"{len(analysis.labels)} run(s), {analysis.n_questions} questions in every run"
        + (
            f" ({analysis.n_not_in_every_run} more not in every run, left out)"
            if analysis.n_not_in_every_run
            else ""
        ),
        tabulate(table, headers=["category", "questions", "%", "indices"]),
        "the first three rows partition the questions (all questions); the rows after it overlap them and each other",
    ]
    if not analysis.rows_resolved:
        lines.append(
            f"test rows not at hand (no record beside the predictions, or its data is elsewhere: --data or ${DATA_ENV}): answers agree by text only"
        )
    return "\n".join(lines)


def cmd_misses(args: argparse.Namespace) -> int:
    paths = [predictions_path(p) for p in args.runs]
    seen: dict[Path, Path] = {}
    for given, path in zip(args.runs, paths, strict=True):
        if (first := seen.setdefault(path.resolve(), given)) is not given:
            raise UserError(
                f"RUN {given}: the same run as {first}; each run counts once (agreement across runs would be inflated)"
            )
    record = _record_beside(paths[0])
    # Predictions alone (no record beside them) are taken for the default task's, as a setup naming none.
    task_name = record.task if record is not None else catalog.default_task()
    analyze_runs = task_module(task_name).analyze_runs
    if analyze_runs is None:
        having = [name for name in catalog.task_names() if task_module(name).analyze_runs is not None]
        raise UserError(
            f"RUN {args.runs[0]}: task {task_name!r} has no miss analysis (tasks with one: {', '.join(having)})"
        )
    analysis = analyze_runs(paths, [str(p) for p in paths], record, args.data)
    data = json.dumps(analysis.to_dict(), indent=2)
    write_outputs(args.output, {"misses.json": data})
    print(data if args.json else render_table(analysis))
    return 0
