"""`lorabench report`: one Markdown scorecard per host × stack from run records, and reports/README.md.
Each scorecard judges the suite's claims on its records, with the bounds of `benchmarks/setups/*.toml`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.report.claim_table import DEFAULT_BENCHMARKS
from harness.report.pipeline import write_reports


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report", help="render scorecards (one per host × stack) and the reports index", description=__doc__
    )
    parser.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS", help="results folders or record files"
    )
    parser.add_argument("-o", "--output", type=Path, default=Path("reports"), metavar="DIR",
                        help="reports folder (default: reports)")  # fmt: skip
    parser.add_argument("--benchmarks", type=Path, default=DEFAULT_BENCHMARKS, metavar="DIR",
                        help="the suite's folder, whose setups/*.toml [claims] tables hold the bounds the claims "
                             f"are judged against (default: {DEFAULT_BENCHMARKS})")  # fmt: skip
    parser.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    summaries, index = write_reports(args.results, args.output, args.benchmarks)
    for s in summaries:
        print(f"{args.output / s.path}: {s.verdict}")
    print(f"index: {index}")
    return 0
