"""Render one Markdown scorecard per host × stack from run records, and the index README.md.
Each scorecard judges the suite's claims on its records: those `benchmarks/setups/*.toml` declare, and
those of your own setup files (`--setups DIR`), beside them.

`-o DIR` is the reports folder it writes (scorecards, charts, the index; default `reports-local/`, untracked,
so the committed `reports/` is written only when asked for with `-o reports`); `--json` prints every
scorecard's claims (status, numbers, n, conditions), setups (figures keyed `train_time_s`, `mfu_pct`, …,
conditions as fields) and comparisons (speedups with their 95% intervals, McNemar, TOST) as JSON on stdout
instead of the summary lines (schema: harness/report/schemas/report-2.schema.json); a refusal prints
{"error", "exit_code"} (error-1.schema.json). Charts no scorecard shows any more are
removed from its img/ folder. To publish, render into a fresh folder, review it, copy it over `reports/`,
then render once into `reports/` itself to drop charts left there:
  lorabench report reports/results -o /tmp/r && cp -r /tmp/r/. reports/ && lorabench report reports/results -o reports
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.commands._paths import given_path
from harness.errors import UserError
from harness.report.claim_table import BUILT_IN_SETUPS, DEFAULT_BENCHMARKS, default_benchmarks
from harness.report.pipeline import build_reports


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="render scorecards (one per host × stack) and the reports index",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "results", nargs="+", type=given_path, metavar="RESULTS", help="results folders or record files"
    )
    parser.add_argument(
        "-o",
        "--output",
        type=given_path,
        default=Path("reports-local"),
        metavar="DIR",
        help="reports folder (default: reports-local, untracked; `-o reports` re-renders the committed reports)",
    )
    parser.add_argument(
        "--benchmarks",
        type=given_path,
        metavar="DIR",
        help="the suite's folder, whose setups/*.toml [claims] tables hold the bounds the claims "
        f"are judged against (default: {DEFAULT_BENCHMARKS}/ here, else the one beside lorabench's code)",
    )
    parser.add_argument(
        "--setups",
        type=given_path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of your own setup files (*.toml with [claims]) judged beside the suite's "
        "(repeatable; `lorabench bench --setups DIR` passes its folder here)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the scorecards' claims and setups as JSON on stdout (the files are written as usual)",
    )
    parser.set_defaults(func=cmd_report)


def suite_folder(given: Path | None) -> Path:
    """The suite's folder the claims come from: the one given, which must hold setups/, or the default (here,
    else beside the code), said in a line where it has none: its scorecards then judge no claim."""
    if given is not None and not (given / BUILT_IN_SETUPS).is_dir():
        raise UserError(
            f"--benchmarks {given}: no {BUILT_IN_SETUPS}/ folder in it; give the suite's folder (a checkout's benchmarks/)"
        )
    found = given or default_benchmarks()
    if not (found / BUILT_IN_SETUPS).is_dir():
        print(
            f"lorabench report: no suite setup files at {found / BUILT_IN_SETUPS}: the claims are not judged; "
            "run it in a checkout or give --benchmarks DIR",
            file=sys.stderr,
        )
    return found


def cmd_report(args: argparse.Namespace) -> int:
    from harness.atomic import check_writable_dir

    check_writable_dir(args.output, "-o/--output", "give a folder the reports may be written in (-o DIR)")
    benchmarks = suite_folder(args.benchmarks)
    summaries, index, out = build_reports(args.results, args.output, benchmarks, args.setups)
    if args.json:
        print(out.model_dump_json(indent=2))
        return 0
    for s in summaries:
        print(f"{args.output / s.path}: {s.verdict}")
    print(f"index: {index}")
    return 0
