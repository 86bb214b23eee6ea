"""`lorabench misses`: which questions every run gets right, gets wrong, or splits on; within them the
fixes, style-only differences and bad-gold candidates."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tabulate import tabulate

from harness.config import DATA_ENV
from harness.errors import UserError
from harness.results import load_record
from harness.tasks.sql.data import SqlExample
from harness.tasks.sql.misses import (
    ALL_QUESTIONS,
    MissAnalysis,
    analyze_misses,
    category_rows,
    load_predictions,
)
from harness.tasks.sql.resolve import record_test_rows

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
        type=Path,
        help="a *.predictions.jsonl file, or a run record seed-N.json with seed-N.predictions.jsonl beside it",
    )
    parser.add_argument(
        "--data",
        metavar="FILE",
        help=f"a local copy of the runs' data, when the path their record names is not here (default ${DATA_ENV}); "
        "used only when its split hash matches the record's",
    )
    parser.add_argument("--json", action="store_true", help="print the analysis as JSON instead of a table")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="also write the analysis as JSON to FILE")
    parser.set_defaults(func=cmd_misses)


def predictions_path(path: Path) -> Path:
    """The predictions file for a RUN argument: itself, or the one beside a `seed-N.json` record."""
    if path.name.endswith(_PREDICTIONS_SUFFIX):
        return path
    if path.suffix == ".json":
        beside = path.with_name(path.stem + _PREDICTIONS_SUFFIX)
        if not beside.is_file():
            raise UserError(f"RUN {path}: no {beside.name} beside the record; pass the predictions file itself")
        return beside
    raise UserError(f"RUN {path}: expected a *{_PREDICTIONS_SUFFIX} file or a run record *.json")


def _test_rows(paths: list[Path], data: str | None) -> tuple[SqlExample, ...] | None:
    """The test rows the first run was scored on, through the record beside its predictions."""
    record_file = paths[0].with_name(paths[0].name.removesuffix(_PREDICTIONS_SUFFIX) + ".json")
    if not record_file.is_file():
        return None
    try:
        record = load_record(record_file)
    except (UserError, ValueError):
        return None
    return record_test_rows(record, data)


def render_table(analysis: MissAnalysis) -> str:
    n = analysis.n_questions
    table = category_rows(analysis, shown=8, empty="-")
    lines = [
        f"{len(analysis.labels)} run(s), {n} questions in every run"
        + (f" ({analysis.n_not_in_every_run} more not in every run, left out)" if analysis.n_not_in_every_run else ""),
        tabulate(table, headers=["category", "questions", "%", "indices"]),
        f"the first three rows partition the questions ({ALL_QUESTIONS}); the rows after it overlap them and each other",
    ]
    if not analysis.rows_resolved:
        lines.append(f"test rows not at hand (no record beside the predictions, or its data is elsewhere: --data or ${DATA_ENV}): answers agree by text only")
    return "\n".join(lines)


def cmd_misses(args: argparse.Namespace) -> int:
    paths = [predictions_path(p) for p in args.runs]
    runs = [load_predictions(p) for p in paths]
    test_rows = _test_rows(paths, args.data)
    analysis = analyze_misses(runs, labels=[str(p) for p in paths], test_rows=test_rows)
    data = json.dumps(analysis.to_dict(), indent=2)
    if args.output is not None:
        args.output.write_text(data + "\n", encoding="utf-8")
    print(data if args.json else render_table(analysis))
    return 0
