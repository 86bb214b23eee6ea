"""`lorabench` command line. Each subcommand lives in `harness/commands/<name>.py` and exposes
`register(subparsers)`, which adds its parser and sets `func` to a `cmd_<name>(args) -> int` handler.
New commands need no edit here; a module whose name starts with `_` is shared code, not a command.

Errors: a user mistake (UserError) or an environment fault (OSError: a full disk, a read-only folder)
prints one line naming the thing and the fix, and exits 2; anything else is a lorabench bug: one line,
exit 1. `--debug` (anywhere on the line) shows the traceback as well."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib
import pkgutil
import sys
import traceback

from harness import __version__, commands, settings
from harness.errors import UserError, describe_os_error
from harness.run.bytecode import cache_this_process

DESCRIPTION = (
    "Benchmark LoRA fine-tuning of small language models: train, evaluate and score each setup, check that "
    "training learned and caught no silent bug, time runs only on a quiet machine, and render scorecards. "
    "Start with `lorabench doctor`, then `lorabench bench`; `lorabench COMMAND --help` explains each command."
)
DEBUG_HELP = "show the traceback behind an error"
EPILOG = (
    "Environment: every LORABENCH_* variable is declared in harness/settings.py; `lorabench doctor --settings` "
    "lists them with their values now, defaults and meanings."
)


def command_names() -> list[str]:
    """The commands, one module each in harness/commands (a name starting with `_` is shared code)."""
    names = (info.name for info in pkgutil.iter_modules(commands.__path__))
    return sorted(name for name in names if not name.startswith("_"))


def named_command(argv: list[str], names: list[str]) -> str | None:
    """The command `argv` names (its first word that is not an option), if it is one of `names` and no
    top-level help is asked for before it (`lorabench --help run` lists every command)."""
    for word in argv:
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word if word in names else None
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `argv` naming a command, only that command's module is imported: each
    module imports what its command needs (the report's scorecard stack, the run's setup and trainer
    launch), ~0.5 s for all of them on a 2-core EPYC, which every `lorabench` call paid before."""
    parser = argparse.ArgumentParser(prog="lorabench", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"lorabench {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = command_names()
    named = named_command(argv or [], names)
    for name in [named] if named else names:
        importlib.import_module(f"harness.commands.{name}").register(subparsers)
    for subparser in subparsers.choices.values():
        # SUPPRESS: a subcommand without --debug leaves the top-level flag's value alone.
        subparser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    with contextlib.suppress(UserError):  # a LORABENCH_CACHE that does not read: the command using it says so
        # Where this Python may not write bytecode and none was installed (the lent H200's image), the
        # command's own imports and its processes' are compiled once into lorabench's cache, not at each start.
        cache_this_process(settings.CACHE.value())
    if argv is None:
        # This process is the command (the `lorabench` script, `python -m harness.cli`): its end skips the
        # interpreter's last garbage collection over every module's objects (0.24 s of `lorabench report`'s
        # exit here, 0.04 s without; on an H200 bench's output closed 0.5-0.7 s after its last line). Every
        # atexit handler still runs (logging's flush, temporary folders' removal): a freeze stops no code,
        # only the collection of the objects that exist then.
        atexit.register(gc.freeze)
        argv = sys.argv[1:]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        # No command is a user mistake like any other: the usage, then one `error:` line, exit 2.
        parser.print_usage(sys.stderr)
        print("lorabench: error: no command given; `lorabench --help` lists the commands", file=sys.stderr)
        return 2
    debug = args.debug
    for retired in settings.retired_set():
        print(f"lorabench: warning: {retired}", file=sys.stderr)
    prefix = f"lorabench {args.command}: error:"
    as_json = getattr(args, "json", False)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        _traceback_if(debug)
        return _refused(prefix, str(exc), 2, as_json)
    except OSError as exc:
        _traceback_if(debug)
        return _refused(prefix, describe_os_error(exc), 2, as_json)
    except KeyboardInterrupt:
        print(f"lorabench {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        _traceback_if(debug)
        first = str(exc).splitlines()[0][:300] if str(exc) else ""
        hint = "" if debug else "; run again with --debug for the traceback, and please report it"
        return _refused(
            f"lorabench {args.command}: internal error:", f"{type(exc).__name__}: {first}{hint}", 1, as_json
        )


def _refused(prefix: str, message: str, status: int, as_json: bool) -> int:
    """The line on stderr; with `--json` (every command that has it) the same refusal as JSON on stdout too
    (`lorabench-error/1`), so a program reading stdout learns why."""
    print(f"{prefix} {message}", file=sys.stderr)
    if as_json:
        from harness.commands._output import print_refusal

        print_refusal(message, status)
    return status


def _traceback_if(debug: bool) -> None:
    if debug:
        traceback.print_exc()


if __name__ == "__main__":
    sys.exit(main())
