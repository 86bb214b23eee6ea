"""`lorabench guard`: the quiet-machine readings now, as a table or JSON."""

from __future__ import annotations

import argparse
import json

from harness.commands._output import add_json_argument
from harness.commands._paths import given_path

EXIT_NOISY = 3


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "guard",
        help="print the quiet-machine readings now (exit 0 quiet, 3 noisy)",
        description="Watch the machine for the guard's window and print every reading against its limit. "
        "Exit 0 when a timed run could start now, 3 when it would be refused.",
    )
    add_json_argument(parser, "the verdict and every reading")
    parser.add_argument(
        "--config",
        type=given_path,
        metavar="FILE",
        help="TOML or YAML file whose [guard] section sets the thresholds (default: built-in thresholds)",
    )
    parser.set_defaults(func=cmd_guard)


def _quantity(value: float | None, unit: str) -> str:
    from harness.guard.verdict import format_bytes

    if value is None:
        return ""
    if unit in ("B", "B/s"):
        return format_bytes(value) + unit[1:]
    return f"{value:.0f} {unit}"


def cmd_guard(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from harness.guard import GuardConfig, load_guard_config, precheck

    config = load_guard_config(args.config) if args.config else GuardConfig()
    verdict = precheck(config)
    if args.json:
        print(json.dumps(verdict.to_dict(), indent=2))
    else:
        rows = [
            (
                "ok" if r.ok else "NOISY",
                r.name,
                _quantity(r.value, r.unit),
                _quantity(r.limit, r.unit),
                r.detail,
            )
            for r in verdict.readings
        ]
        print(tabulate(rows, headers=["", "reading", "value", "limit", "detail"]))
        print()
        if verdict.host_view is not None:
            from harness.guard.hostview import HostView

            view = HostView(**{k: v for k, v in verdict.host_view.items() if k != "sees_host"})
            print(f"view: {view.describe()}")
        print(verdict.reason or "quiet: a timed run may start")
    return 0 if verdict.ok else EXIT_NOISY
