"""`lorabench compare OLD NEW`: per setup and metric the ratio new/old, whether the change is
significant, and regressions flagged; `--fail-on-regression` exits 1 when there is one."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.report.compare import MetricChange, compare_records
from harness.report.groups import load_records
from harness.report.tables import table


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare", help="compare two result sets metric by metric", description=__doc__
    )
    parser.add_argument("old", type=Path, metavar="OLD", help="results folder or record file (the reference)")
    parser.add_argument("new", type=Path, metavar="NEW", help="results folder or record file (the candidate)")
    parser.add_argument(
        "--fail-on-regression", action="store_true", help="exit with status 1 when a metric regressed"
    )
    parser.add_argument("--tolerance", type=float, default=0.02, metavar="FRACTION",
                        help="relative change a cost metric (time, memory, throughput) may make before a significant "
                             "worsening counts as a regression (default: 0.02)")  # fmt: skip
    parser.set_defaults(func=cmd_compare)


def render(changes: list[MetricChange]) -> str:
    rows = [
        [c.setup, c.metric, f"{c.old:.2f}", f"{c.new:.2f}", "–" if c.ratio is None else f"{c.ratio:.3f}",
         f"{c.n_old} / {c.n_new}", c.method, "–" if c.p_value is None else f"{c.p_value:.3g}",
         "yes" if c.is_significant else "no", "REGRESSION" if c.is_regression else ""]
        for c in changes
    ]  # fmt: skip
    return table(
        rows, ["setup", "metric", "old", "new", "new/old", "n old / new", "test", "p", "significant", ""]
    )


def cmd_compare(args: argparse.Namespace) -> int:
    if args.tolerance < 0:
        raise UserError(f"--tolerance must be ≥ 0, got {args.tolerance}")
    old, new = load_records([args.old]), load_records([args.new])
    for side, loaded, path in (("OLD", old, args.old), ("NEW", new, args.new)):
        if not loaded:
            raise UserError(f"{side} {path}: no run records (seed-*.json) found")
    changes, unmatched = compare_records(old, new, tolerance=args.tolerance)
    if not changes:
        raise UserError("no setup has numbers on both sides; compare results of the same setups")
    print(render(changes))
    for line in unmatched:
        print(f"not compared: {line}")
    regressions = [c for c in changes if c.is_regression]
    print(f"{len(regressions)} regression(s) in {len(changes)} metric(s)")
    return 1 if regressions and args.fail_on_regression else 0
