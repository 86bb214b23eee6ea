"""`lorabench bench`: the benchmark suite (`pytest benchmarks`), then the report; exit status = the suite's."""

from __future__ import annotations

import argparse
import importlib.util
import signal
import subprocess
import sys
from pathlib import Path

DEFAULT_SUITE = Path("benchmarks")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="run the benchmark suite (pytest benchmarks/), then render the report",
        description=__doc__,
        epilog="Everything after the options goes to pytest, e.g. `lorabench bench -- -k exp_a -x` "
        "or `lorabench bench -- --lorabench-seeds=42`; see `pytest benchmarks --help`, group lorabench.",
    )
    parser.add_argument(
        "--results", type=Path, default=Path("results"), help="results folder (default: results)"
    )
    parser.add_argument("--no-report", action="store_true", help="run the suite only")
    parser.add_argument("--reports", type=Path, default=Path("reports"), help="where the scorecards go (default: reports)")
    parser.add_argument(
        "pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST ARGS", help="passed to pytest"
    )
    parser.set_defaults(func=cmd_bench)


def pytest_command(pytest_args: list[str], results: Path) -> list[str]:
    args = pytest_args[1:] if pytest_args[:1] == ["--"] else list(pytest_args)
    # With no test path given, the suite is benchmarks/ (a path is any argument naming an existing file or folder).
    if not any(Path(a.split("::", 1)[0]).exists() for a in args if not a.startswith("-")):
        args.append(str(DEFAULT_SUITE))
    return [sys.executable, "-m", "pytest", f"--lorabench-results={results}", *args]


def run_suite(command: list[str], grace_s: float = 60.0) -> tuple[int, bool]:
    """Run pytest to its end; (exit status, whether Ctrl-C came).

    Ctrl-C in a terminal reaches pytest as well (one process group): it stops the run it is in, writes
    that run's record as killed and exits. Killing it at once (what `subprocess.run` does) lost that
    record, so this waits; pytest gets SIGINT from here only when it has not ended after `grace_s`
    (the interrupt was sent to this process alone)."""
    process = subprocess.Popen(command)
    interrupted = False
    timeout: float | None = None
    while True:
        try:
            return process.wait(timeout=timeout), interrupted
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            timeout = None
        except KeyboardInterrupt:
            interrupted, timeout = True, grace_s


def cmd_bench(args: argparse.Namespace) -> int:
    from harness.commands.doctor import (
        gate,  # the host checks first: exit 2 names what blocks (lorabench doctor)
    )

    if blocked := gate(args.results):
        return blocked
    command = pytest_command(args.pytest_args, args.results)
    print("lorabench bench: " + " ".join(command[1:]), flush=True)
    status, interrupted = run_suite(command)
    if interrupted:
        print(f"lorabench bench: interrupted; records so far are in {args.results} (run it again to resume)", file=sys.stderr)
        return 130
    if args.no_report:
        return status
    if importlib.util.find_spec("harness.commands.report") is None:
        print(
            f"lorabench bench: the report step is not available in this lorabench yet; records are in {args.results}"
        )
        return status
    from harness.cli import main

    report_status = main(["report", str(args.results), "-o", str(args.reports)])
    return status or report_status
