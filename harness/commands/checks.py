"""`lorabench checks`: the silent-bug checks alone — preflight, a smoke of the first steps, dead adapters.

The same setup options as `lorabench run`. It runs the run's own recipe (`harness.run.recipe`) in this
process for the smoke's steps with eval off, and prints what every check found (as JSON on stdout with
`--json`; `-o DIR` also writes checks.json there); nothing is recorded. Any task and backend a run takes.
Exit code 1 when a check fails or errors, or the run stopped; 0 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from harness.commands._output import add_output_arguments, check_output_folder, write_outputs
from harness.commands.run import add_setup_arguments, setup_overrides
from harness.config import SetupConfig, load_setup
from harness.errors import UserError

if TYPE_CHECKING:
    from harness.run.outcome import Outcome

FAILING = ("fail", "error")
DETAIL_WIDTH = 110


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "checks",
        help="run the silent-bug checks (preflight, smoke steps, dead adapters) without a run",
        description="Run the silent-bug checks of a setup (preflight, smoke steps, dead adapters) "
        "without a full run.",
    )
    add_setup_arguments(parser)
    add_output_arguments(parser, "checks.json (every verdict with its evidence)")
    parser.set_defaults(func=cmd_checks)


def checks_setup(setup: SetupConfig) -> SetupConfig:
    """The setup as the checks run it: training for the smoke's steps only, nothing evaluated."""
    if setup.eval.adapter is not None:
        raise UserError(
            f"eval.adapter: {setup.eval.adapter!r} scores an adapter without training, so there is nothing to "
            "check; drop eval.adapter to check the training of this setup"
        )
    recipe = setup.recipe.model_copy(update={"steps": setup.checks.smoke.steps})
    return setup.model_copy(
        update={"recipe": recipe, "eval": setup.eval.model_copy(update={"enabled": False})}
    )


def run_checks(setup: SetupConfig) -> Outcome:
    """The one recipe, in this process, in a scratch folder; its outcome carries every check's verdict."""
    from harness.run.child import execute_plan
    from harness.run.plan import RunPlan

    with tempfile.TemporaryDirectory(prefix="lorabench-checks-") as work_dir:
        return execute_plan(RunPlan(setup=checks_setup(setup), work_dir=Path(work_dir)))


def render_table(outcome: Outcome) -> str:
    verdicts = outcome.checks
    width = max([len("check"), *map(len, verdicts)])
    lines = [f"{'check'.ljust(width)}  verdict  detail"]
    for name, verdict in verdicts.items():
        detail = (
            verdict.detail
            if len(verdict.detail) <= DETAIL_WIDTH
            else verdict.detail[: DETAIL_WIDTH - 1] + "…"
        )
        lines.append(f"{name.ljust(width)}  {verdict.verdict.ljust(7)}  {detail}")
    if outcome.status != "ok":
        lines.append(f"run {outcome.status}: {outcome.reason}")
    return "\n".join(lines)


def cmd_checks(args: argparse.Namespace) -> int:
    setup = load_setup(args.config, setup_overrides(args))
    check_output_folder(args.output, ["checks.json"])
    # The trainer prints its log lines on stdout; with --json, stdout carries the JSON alone.
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        outcome = run_checks(setup)
    if outcome.status == "failed" and not outcome.checks:
        raise UserError(outcome.reason or "the checks could not start")  # e.g. data or model not found
    payload = json.dumps(
        {name: v.model_dump(mode="json") for name, v in outcome.checks.items()}, indent=1, default=str
    )
    write_outputs(args.output, {"checks.json": payload})
    print(payload if args.json else render_table(outcome))
    failing = any(v.verdict in FAILING for v in outcome.checks.values())
    return 1 if failing or outcome.status != "ok" else 0
