"""Train and evaluate one setup with one seed, from data to a result record."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from harness import catalog, settings
from harness.commands._output import add_json_argument
from harness.commands._paths import given_path
from harness.config import DATA_ENV, Override, load_setup, read_config_file
from harness.errors import UserError
from harness.guard import GuardConfig, load_guard_config
from harness.provenance import default_stack
from harness.run.start import run_on_hosts
from harness.run.supervisor import RunOptions, summary_line

EXIT_CODES = {"ok": 0, "refused": 3}


def add_setup_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by every command that builds a setup (run, checks)."""
    parser.add_argument(
        "config", nargs="?", type=given_path, help="setup file (.toml or .yaml); flags override it"
    )
    parser.add_argument(
        "--model", help="model.source: a preset (smollm2-135m), hub id, local folder or .gguf file"
    )
    own_data = ", ".join(f"{name}: {catalog.default_source(name)}" for name in catalog.task_names())
    parser.add_argument(
        "--data",
        help=f"data.source: hub dataset id or local .jsonl/.json/.parquet; default ${DATA_ENV} if set, "
        f"else the config's, else the task's own ({own_data})",
    )
    parser.add_argument("--seed", type=int, help="recipe.seed")
    parser.add_argument("--steps", type=int, help="recipe.steps")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override any setup field, e.g. --set lora.rank=8 --set eval.limit=50 (repeatable)",
    )


def setup_overrides(args: argparse.Namespace) -> list[Override]:
    """The setup's fields from outside its file, in order (a later one wins): $LORABENCH_DATA unless the
    file names its data, then the flags, then every `--set`."""
    overrides: list[Override] = []
    section = read_config_file(args.config).get("data") if args.config and args.config.is_file() else None
    # A malformed `data` (e.g. `data = "x.jsonl"`) is left to validation, which names the fix.
    config_sets_data = isinstance(section, dict) and bool(section.get("source"))
    if (data := settings.DATA.get()) and not config_sets_data:
        overrides.append(("data.source", data))
    set_fields = {text.partition("=")[0].strip() for text in args.overrides if "=" in text}
    for flag, field in (
        ("model", "model.source"),
        ("data", "data.source"),
        ("seed", "recipe.seed"),
        ("steps", "recipe.steps"),
    ):
        value = getattr(args, flag)
        if value is not None:
            if field in set_fields:
                # Before issue 39 the `--set` won without a word: `--seed 1 --set recipe.seed=2` ran seed 2.
                raise UserError(f"--{flag} {value} and --set {field}=… both set {field}; give it once")
            overrides.append((field, value))
    return overrides + args.overrides


def stack_name(text: str) -> str:
    """--stack: a stack's name is a folder of the results (results/<stack>/…): `--stack ""` filed runs
    under unknown/ before issue 39."""
    try:
        return settings.stack_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="train and evaluate one setup with one seed; write its record", description=__doc__
    )
    add_setup_arguments(parser)
    parser.add_argument(
        "--results", type=given_path, default=Path("results"), help="results folder (default: results)"
    )
    parser.add_argument(
        "--stack",
        default=None,
        type=stack_name,
        help="stack name recorded with the run (default: $LORABENCH_STACK, else the pinned stack installed "
        "here, else the environment named by torch and its runtime, e.g. venv-torch2.11.0-cuda13.0)",
    )
    parser.add_argument(
        "--timed", action="store_true", help="a timed run: the quiet-machine guard must pass first"
    )
    parser.add_argument(
        "--allow-noisy",
        action="store_true",
        help="with --timed: record the run even if the machine is busy, marked untimed",
    )
    parser.add_argument(
        "--guard-config",
        type=given_path,
        help="file with a [guard] section of thresholds (see harness/guard/config.py)",
    )
    parser.add_argument("--quiet", action="store_true", help="phase lines only, no step progress (CI logs)")
    add_json_argument(parser, "the record and where it was written")
    parser.add_argument(
        "--inline", action="store_true", help="train in this process instead of a child (debugging)"
    )
    parser.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    if args.allow_noisy and not args.timed:
        raise UserError(
            "--allow-noisy overrules the guard of a timed run; add --timed, or leave --allow-noisy out"
        )
    setup = load_setup(args.config, setup_overrides(args))
    options = RunOptions(
        results_dir=args.results,
        stack=default_stack() if args.stack is None else args.stack,
        timed=args.timed,
        allow_noisy=args.allow_noisy,
        quiet=args.quiet,
        isolate=not args.inline,
        guard=load_guard_config(args.guard_config) if args.guard_config else GuardConfig(),
    )
    # With --json, stdout carries the JSON alone: what the run prints there goes to stderr.
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        record, path = run_on_hosts(setup, options)
    if args.json:
        print(json.dumps({"path": str(path), "record": record.model_dump(mode="json")}, indent=2))
    else:
        print(summary_line(record, path))
    return EXIT_CODES.get(record.status, 1)
