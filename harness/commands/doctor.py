"""Check whether a timed run can start on this host. One line per check (✓ ✗ –), the fix for each ✗.

Exit 0 when a timed run could start, 2 naming the first blocking ✗. `--json` prints the checks and the
facts they judged (what to attach to an issue). `lorabench bench` runs it before its timed runs; the
images' entrypoint runs it with --untimed (a busy machine does not stop an untimed smoke run).
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from harness.commands._output import add_json_argument
from harness.commands._paths import given_path
from harness.doctor.report import blocked_line, render, render_json, run_doctor


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor", help="check this host before a timed run (exit 2 names what blocks)", description=__doc__
    )
    parser.add_argument(
        "--stack", default=None, help="the stack to verify (default: $LORABENCH_STACK; none: not checked)"
    )
    parser.add_argument(
        "--results",
        type=given_path,
        default=Path("results"),
        help="results folder whose disk is measured (default: results)",
    )
    add_json_argument(parser, "the checks and the facts they judged, for CI and issues")
    parser.add_argument(
        "--untimed", action="store_true", help="a busy machine (the guard) is shown but does not block"
    )
    parser.add_argument("--no-guard", action="store_true", help="skip the guard's 1 s look at the machine")
    parser.add_argument(
        "--settings",
        action="store_true",
        help="list every LORABENCH_* environment variable: its value now or default, who sets it, what it does "
        "(no checks run; exit 2 when a set value cannot be read)",
    )
    parser.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.settings:
        from harness.doctor.environment import render_settings

        return render_settings(as_json=args.json)
    from harness.atomic import folder_or_parent

    # A results "folder" that is a file makes every "a run can start" below untrue. One that cannot be written
    # is left to the run: the images' entrypoint asks the doctor before `report`, whose results are mounted
    # read-only.
    folder_or_parent(args.results, "results folder", "give a folder (--results DIR)")
    diagnosis, facts = run_doctor(
        stack_name=args.stack, results=args.results, guard=not args.no_guard, timed=not args.untimed
    )
    if args.json:
        render_json(diagnosis, facts)
        if diagnosis.blocking:
            print(
                f"lorabench doctor: blocked by {diagnosis.blocking.name}: {diagnosis.blocking.fix}",
                file=sys.stderr,
            )
    else:
        render(diagnosis)
    return diagnosis.exit_status


def gate(results: Path, stack_name: str | None = None) -> tuple[str, str | None]:
    """What bench asks while its suite starts: the doctor's screen (bench shows it on stderr in one write,
    pytest printing beside it), and the line naming what blocks every run, or None. The guard is left to
    each timed phase (it refuses and records the reading itself)."""
    diagnosis, _ = run_doctor(stack_name=stack_name, results=results, guard=False)
    screen = io.StringIO()
    render(diagnosis, screen)
    return screen.getvalue(), None if diagnosis.blocking is None else blocked_line(diagnosis.blocking)
