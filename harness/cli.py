"""`lorabench` command line. Each subcommand lives in `harness/commands/<name>.py` and exposes
`register(subparsers)`, which adds its parser and sets `func` to a `cmd_<name>(args) -> int` handler.
New commands need no edit here."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from harness import __version__, commands
from harness.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lorabench", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"lorabench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"harness.commands.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"lorabench {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"lorabench {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
