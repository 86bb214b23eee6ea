"""Compare two result sets, OLD and NEW: per setup and metric the ratio new/old, whether the change is
significant, and regressions flagged; `--fail-on-regression` exits 1 when there is one, or when a
metric one side has is missing on the other (a run that ended without it).

The sides must be like (as pyperf and asv check machines): the same host kind and stack, and the same
settings for each setup on both; otherwise compare names each difference and exits 2, unless
`--allow-unlike` asks for the comparison anyway (then every row is marked unlike). A side whose runs of
a setup did not finish (killed, failed) or hold no compared metric is refused with that reason (exit 2).
Tokens/s and MFU read over the steady steps on one side and over the whole run on the other (a record
without a steady step time) are flagged, and neither tested nor counted as a regression.

`--json` prints the comparison as JSON on stdout, its metrics keyed as `lorabench report --json` keys
them (schema: harness/report/schemas/compare-2.schema.json); a refusal prints {"error", "exit_code"}
(error-1.schema.json). `-o DIR` also writes the comparison as compare.md and compare.json into DIR.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.commands._output import add_output_arguments, check_output_folder, write_outputs
from harness.commands._paths import given_path
from harness.errors import UserError
from harness.report.compare import (
    MetricChange,
    MissingMetric,
    by_setup,
    compare_records,
    missing_metrics,
    sides_unlike,
    unfinished,
)
from harness.report.groups import LoadedRecord, SetupRuns, load_records
from harness.report.metrics import BY_KEY
from harness.report.outputs import ChangeOut, CompareOut, MissingOut, SideOut
from harness.report.settings import public
from harness.report.tables import table
from harness.report.to_json import setup_conditions


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare two result sets metric by metric",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "old", type=given_path, metavar="OLD", help="results folder or record file (the reference)"
    )
    parser.add_argument(
        "new", type=given_path, metavar="NEW", help="results folder or record file (the candidate)"
    )
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit with status 1 when a metric regressed or is missing on one side",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.02,
        metavar="FRACTION",
        help="relative change a cost metric (time, memory, throughput) may make before a significant "
        "worsening counts as a regression (default: 0.02)",
    )
    parser.add_argument(
        "--allow-unlike",
        action="store_true",
        help="compare sides of different host kinds, stacks or settings anyway (rows marked unlike)",
    )
    add_output_arguments(parser, "compare.md and compare.json")
    parser.set_defaults(func=cmd_compare)


WHERE = {
    "steady": "the steady steps",
    "whole": "the whole run",
    "mixed": "the steady steps of some runs and the whole run of others",
    None: "–",
}


def _metric_cell(c: MetricChange) -> str:
    label = BY_KEY[c.metric].label
    if c.windows_differ:
        return f"{label} ({c.windows[0]} vs {c.windows[1]})"
    return f"{label} ({c.windows[0]})" if c.windows[0] else label


def render(changes: list[MetricChange], unlike: bool = False) -> str:
    rows = [
        [
            c.setup,
            _metric_cell(c),
            f"{c.old:.2f}",
            f"{c.new:.2f}",
            "–" if c.ratio is None else f"{c.ratio:.3f}",
            f"{c.n_old} / {c.n_new}",
            c.method,
            "–" if c.p_value is None else f"{c.p_value:.3g}",
            "yes" if c.is_significant else "no",
            "REGRESSION" if c.is_regression else "",
        ]
        for c in changes
    ]
    first = "setup (unlike sides)" if unlike else "setup"
    return table(
        rows, [first, "metric", "old", "new", "new/old", "n old / new", "test", "p", "significant", ""]
    )


def _side(paths: Path, loaded: tuple[LoadedRecord, ...]) -> SideOut:
    kinds = sorted({str(i.record.provenance.host.kind or i.record.host) for i in loaded})
    return SideOut(
        paths=[public(str(paths))],
        records=len(loaded),
        host_kinds=kinds,
        stacks=sorted({i.record.stack for i in loaded}),
    )


def _load_sides(
    args: argparse.Namespace,
) -> tuple[tuple[LoadedRecord, ...], tuple[LoadedRecord, ...], list[str]]:
    """Both sides' records and how they are unlike; refuses empty sides, and unlike ones unless allowed."""
    old, new = load_records([args.old]), load_records([args.new])
    for side, loaded, path in (("OLD", old, args.old), ("NEW", new, args.new)):
        if not loaded:
            raise UserError(f"{side} {path}: no run records (seed-*.json) found")
    # One run on both sides compares it with itself: "0 regressions" would be said of no change at all.
    both = sorted({r.path.resolve() for r in old} & {r.path.resolve() for r in new})
    if both:
        more = f" and {len(both) - 1} more" if len(both) > 1 else ""
        raise UserError(
            f"OLD and NEW hold the same run ({public(str(both[0]))}{more}): a run compared with itself shows no "
            "change; give the results before and after the change as two folders"
        )
    if nothing := unfinished(old, new):
        raise UserError(
            f"nothing to compare: {'; '.join(public(n) for n in nothing)}; compare runs that finished "
            "(`lorabench run` again for the missing side)"
        )
    unlike = sides_unlike(old, new)
    if unlike and not args.allow_unlike:
        raise UserError(
            f"OLD and NEW are unlike ({'; '.join(public(u) for u in unlike)}): their figures would measure these "
            "differences, not the change; compare runs of one host kind, stack and settings, or pass --allow-unlike"
        )
    return old, new, unlike


def _change_out(c: MetricChange, before: dict[str, SetupRuns], after: dict[str, SetupRuns]) -> ChangeOut:
    return ChangeOut(
        setup=c.setup,
        metric=c.metric,
        old=c.old,
        new=c.new,
        ratio=c.ratio,
        n_old=c.n_old,
        n_new=c.n_new,
        test=c.method,
        p_value=c.p_value,
        significant=c.is_significant,
        regression=c.is_regression,
        window_old=c.windows[0],
        window_new=c.windows[1],
        windows_differ=c.windows_differ,
        conditions_old=setup_conditions(before[c.setup]),
        conditions_new=setup_conditions(after[c.setup]),
    )


def _summary_text(
    changes: list[MetricChange], out: CompareOut, missing: list[MissingMetric], unmatched: list[str]
) -> str:
    lines = [render(changes, bool(out.unlike))] if changes else []
    if out.unlike:
        lines.append(f"unlike sides, compared as asked (--allow-unlike): {'; '.join(out.unlike)}")
    lines += [
        f"window: {c.setup}: {BY_KEY[c.metric].label} is read over {WHERE[c.windows[0]]} on OLD and "
        f"{WHERE[c.windows[1]]} on NEW (a side lacks train.step_s): not one quantity, not tested"
        for c in changes
        if c.windows_differ
    ]
    lines += [f"missing: {m.setup}: {BY_KEY[m.metric].label} on {m.side} ({m.why})" for m in missing]
    lines += [f"not compared: {line}" for line in unmatched]
    lines.append(
        f"{out.regressions} regression(s) in {len(changes)} metric(s)"
        + (f", {len(missing)} metric(s) missing on one side" if missing else "")
    )
    return "\n".join(lines)


def cmd_compare(args: argparse.Namespace) -> int:
    if args.tolerance < 0:
        raise UserError(f"--tolerance must be ≥ 0, got {args.tolerance}")
    check_output_folder(args.output, ["compare.md", "compare.json"])
    old, new, unlike = _load_sides(args)
    changes, unmatched = compare_records(old, new, tolerance=args.tolerance)
    missing = missing_metrics(old, new)
    if not changes and not missing:
        raise UserError("no setup has numbers on both sides; compare results of the same setups")
    before, after = by_setup(old, "OLD"), by_setup(new, "NEW")
    regressions = [c for c in changes if c.is_regression]
    failing = bool(regressions or missing) and args.fail_on_regression
    out = CompareOut(
        old=_side(args.old, old),
        new=_side(args.new, new),
        unlike=[public(u) for u in unlike],
        allowed_unlike=bool(unlike),
        unmatched=unmatched,
        regressions=len(regressions),
        exit_status=1 if failing else 0,
        changes=[_change_out(c, before, after) for c in changes],
        missing=[MissingOut(setup=m.setup, metric=m.metric, side=m.side, why=m.why) for m in missing],  # type: ignore[arg-type]
    )
    text = _summary_text(changes, out, missing, unmatched)
    write_outputs(args.output, {"compare.md": text, "compare.json": out.model_dump_json(indent=2)})
    print(out.model_dump_json(indent=2) if args.json else text)
    return out.exit_status
