"""Run the benchmark suite (`pytest benchmarks`), then render the report. The exit status is the suite's.

`--setups DIR` runs your own benchmark instead of the built-in experiments: every setup file in DIR
(`*.toml`: a setup, its `[claims.NAME]` and `[suite]` tables; README "Add your own benchmark"), its claims
judged as pytest cases, and the scorecard shows them beside the built-in experiments' claims.

Your runs are yours: records go to `results/` and scorecards to `reports-local/` (both untracked), never
into the committed `reports/`. The committed records (`reports/results/`) are read as published results:
one whose fingerprint matches stands in for a run, and the scorecard is rendered from both folders.
`lorabench publish` is the separate, explicit step that copies records into `reports/results/`.

On GPUs the suite's cases run side by side (pytest-xdist, harness/suite/placement.py): 3 workers per CUDA GPU,
whose shared runs go through one CUDA MPS server the suite starts (harness/gpu/mps.py), one per ROCm GPU,
each pinned to its GPU; a CPU host runs one seed at a time. `-- -n N` (or `-p no:xdist`) chooses instead
(add `--lorabench-mps` for the server). Each worker's warm trainer server (harness/run/warm_pool.py) is
started here before pytest, so the trainer stack's imports run while pytest and its workers start. Exp A's
suite on one H200, warm: 35.6-44.2 s on three machines (95.5 s when its seeds ran one after another); every
figure, machine by machine, is in docs/measurements.md.

The host checks (`lorabench doctor`'s, without the guard) run while pytest and its workers start, and each
run that trains waits for their verdict (harness/suite/host_gate.py): a host they block exits 2, no run
started.

The suite's pytest loads the plugins it names (xdist; its own through benchmarks/conftest.py), not every
plugin the environment installed: the same suite whatever else is installed (the H200's image brings
eight: coverage, timeouts, hypothesis, jaxtyping's torch import), and its workers collected in 1.7 s
there against 2.1-2.2 s. Name yours with `-- -p NAME`, or set PYTEST_DISABLE_PLUGIN_AUTOLOAD empty to
load them all."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.commands._output import add_json_argument, print_refusal
from harness.commands._paths import given_path
from harness.errors import UserError
from harness.suite.catalogue import load_catalogue
from harness.suite.host_gate import arguments_settled, expect_host_gate, open_host_gate
from harness.suite.placement import asks_for_workers, shares_gpus, workers_for_host

DEFAULT_RESULTS = Path("results")
DEFAULT_PUBLISHED = Path("reports/results")
DEFAULT_REPORTS = Path("reports-local")
PYTEST_USAGE_ERROR = 4  # pytest.ExitCode.USAGE_ERROR, without importing pytest into every command


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="run the benchmark suite (pytest benchmarks/), then render the report",
        description=__doc__,
        epilog="Everything after the options goes to pytest, e.g. `lorabench bench -- -k exp_a -x` "
        "or `lorabench bench -- --lorabench-seeds=42`; see `pytest benchmarks --help`, group lorabench.",
    )
    parser.add_argument(
        "--results",
        type=given_path,
        default=DEFAULT_RESULTS,
        help=f"your results folder (default: {DEFAULT_RESULTS})",
    )
    parser.add_argument(
        "--published",
        type=given_path,
        default=DEFAULT_PUBLISHED,
        help=f"published records, read only: they stand in where their fingerprint matches (default: {DEFAULT_PUBLISHED})",
    )
    parser.add_argument(
        "--setups",
        type=given_path,
        action="append",
        default=[],
        metavar="DIR",
        help="run the setup files in DIR (your own benchmark: model, data, recipe, [claims]) instead of the "
        "built-in experiments; repeatable",
    )
    parser.add_argument("--no-report", action="store_true", help="run the suite only")
    parser.add_argument(
        "--reports",
        type=given_path,
        default=DEFAULT_REPORTS,
        help=f"where the scorecards go (default: {DEFAULT_REPORTS})",
    )
    add_json_argument(
        parser, "the scorecards as `lorabench report --json` prints them; pytest's output goes to stderr"
    )
    parser.add_argument(
        "pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST ARGS", help="passed to pytest"
    )
    parser.set_defaults(func=cmd_bench)


def pytest_command(
    pytest_args: list[str],
    results: Path,
    published: Path = DEFAULT_PUBLISHED,
    setups: Sequence[Path] = (),
    workers: int = 0,
    mps: bool = False,
    host_checks: Path | None = None,
    warm_pool: Path | None = None,
) -> list[str]:
    """The suite's pytest command; `workers` (pytest-xdist's -n) unless the user chose theirs, and with
    `mps` a CUDA MPS server for the workers that share a GPU (harness/gpu/mps.py)."""
    args = pytest_args[1:] if pytest_args[:1] == ["--"] else list(pytest_args)
    if workers and not asks_for_workers(args):
        args = ["-n", str(workers), *(["--lorabench-mps"] if mps else []), *args]
    # With no test path given, the suite is benchmarks/ (a path is any argument naming an existing file or folder).
    if not any(Path(a.split("::", 1)[0]).exists() for a in args if not a.startswith("-")):
        from harness.report.claim_table import default_benchmarks

        args.append(str(default_benchmarks()))
    folders = [f"--lorabench-setups={folder}" for folder in setups]
    if host_checks is not None:
        folders.append(f"--lorabench-host-checks={host_checks}")
    if warm_pool is not None:
        folders.append(f"--lorabench-warm-pool={warm_pool}")
    xdist = [] if "no:xdist" in args else ["-p", "xdist"]  # by its entry point's name, with autoload off
    return [
        sys.executable,
        "-m",
        "pytest",
        *xdist,
        f"--lorabench-results={results}",
        f"--lorabench-published={published}",
        *folders,
        *args,
    ]


def report_sources(published: Path, results: Path) -> list[Path]:
    """The folders the scorecard reads: the published records, then yours (those that exist)."""
    same = published.exists() and results.exists() and published.resolve() == results.resolve()
    return [p for p in ([published] if not same else []) + [results] if p.is_dir()]


def suite_environment() -> dict[str, str]:
    """The suite's environment: pytest's plugin autoload off (see the module's docstring) unless you set
    PYTEST_DISABLE_PLUGIN_AUTOLOAD yourself (empty: autoload on)."""
    return {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **os.environ}


def start_suite(command: list[str], *, to_stderr: bool = False) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, stdout=sys.stderr if to_stderr else None, env=suite_environment())


def wait_suite(
    process: subprocess.Popen[bytes], grace_s: float = 60.0, *, interrupted: bool = False
) -> tuple[int, bool]:
    """Wait for pytest's end; (exit status, whether Ctrl-C came).

    Ctrl-C in a terminal reaches pytest as well (one process group): it stops the run it is in, writes
    that run's record as killed and exits. Killing it at once (what `subprocess.run` does) lost that
    record, so this waits; pytest gets SIGINT from here only when it has not ended after `grace_s`
    (the interrupt was sent to this process alone)."""
    timeout: float | None = grace_s if interrupted else None
    while True:
        try:
            return process.wait(timeout=timeout), interrupted
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            timeout = None
        except KeyboardInterrupt:
            interrupted, timeout = True, grace_s


def checked_suite(
    process: subprocess.Popen[bytes], verdict: Path, checks: Callable[[], tuple[str, str | None]]
) -> tuple[int, bool, str | None]:
    """The host `checks` run here while pytest starts (its runs wait for the verdict before they train);
    (exit status, whether Ctrl-C came, the line naming what blocks). Their screen is shown unless pytest
    has already refused its arguments: its one-line error would sit above twenty lines about the host."""
    blocked: str | None = None
    try:
        screen, blocked = checks()
        open_host_gate(verdict, blocked)
        arguments_settled(verdict, lambda: process.poll() is not None)
        if process.poll() != PYTEST_USAGE_ERROR:
            sys.stderr.write(screen)
            sys.stderr.flush()
    except KeyboardInterrupt:  # it reached pytest too, which stops its runs and writes their records
        _unfinished(verdict)
        return (*wait_suite(process, interrupted=True), None)
    except BaseException:  # a failure of the checks themselves, or a verdict that could not be written
        _unfinished(verdict)
        stop_suite(process)
        raise
    return (*wait_suite(process), blocked)  # blocked: each run that would train fails at the gate, in a line


def _unfinished(verdict: Path) -> None:
    # Where even this cannot be written (a full disk), the runs stop waiting once bench has ended.
    with contextlib.suppress(OSError):
        open_host_gate(verdict, "blocked: the host checks did not finish")


def stop_suite(process: subprocess.Popen[bytes]) -> None:
    """pytest stopped as Ctrl-C stops it (when the host checks broke: its runs fail at the gate)."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    wait_suite(process, interrupted=True)


def report_step(args: argparse.Namespace) -> int:
    """The scorecards from the published records and yours, your setups' claims beside the built-in ones."""
    while _preloading:
        _preloading.pop().join()
    sources = report_sources(args.published, args.results)
    as_json = getattr(args, "json", False)
    notes = sys.stderr if as_json else sys.stdout  # with --json, stdout carries the JSON alone
    if not sources:
        print(f"lorabench bench: no records in {args.results} or {args.published}: no scorecard", file=notes)
        return 0
    print(
        "lorabench bench: scorecards from "
        + " and ".join(f"{p} ({'published' if p == args.published else 'yours'})" for p in sources),
        file=notes,
        flush=True,
    )
    report = argparse.Namespace(
        results=sources,
        output=args.reports,
        benchmarks=None,  # the report finds the suite as bench did
        setups=args.setups,
        json=as_json,
    )
    from harness.commands.report import cmd_report  # here: 0.4 s of imports bench's start need not wait for

    try:
        return cmd_report(report)
    except UserError as exc:  # the suite's status stands; the report's problem is said in one line
        print(f"lorabench bench: report: {exc}", file=sys.stderr)
        if as_json:
            print_refusal(f"report: {exc}", 2)
        return 2


_preloading: list[threading.Thread] = []


def preload_report() -> None:
    """The report's imports (matplotlib, the tasks' scoring modules) in a thread while the suite trains, so
    the scorecards after it do not wait for them; a failed import is met again, and said, by the report.
    The report waits for the thread first: it forks to draw, and a fork amid an import could leave the
    child a module lock no thread will release."""

    def imports() -> None:
        with contextlib.suppress(Exception):
            import harness.commands.report  # ruff: ignore[unused-import]
            from harness.catalog import load_task, task_names
            from harness.report.charts import preload

            preload()
            for name in task_names():
                load_task(name)

    thread = threading.Thread(target=imports, name="lorabench-report-imports", daemon=True)
    thread.start()
    _preloading.append(thread)


def suite_step(args: argparse.Namespace) -> tuple[int, bool, str | None]:
    """pytest over the suite, the host checks run here meanwhile; (exit status, whether Ctrl-C came, the
    line naming what blocks). One worker per GPU, k per GPU on CUDA (harness/suite/placement.py), those k
    through one MPS server, each adopting a warm trainer started here before pytest (harness/run/warm_pool.py);
    a CPU host runs one seed at a time."""
    from harness.commands.doctor import gate  # the host checks: what blocks every run (lorabench doctor)
    from harness.gpu.facts import collect_gpus
    from harness.run.launch import start_trainer_pool  # here: every command's parser imports this module

    gpus = collect_gpus()
    workers = 0 if asks_for_workers(args.pytest_args) else workers_for_host(gpus)
    with tempfile.TemporaryDirectory(prefix="lorabench-bench-") as folder:
        verdict = Path(folder) / "host-checks"
        expect_host_gate(verdict)
        pool = start_trainer_pool(Path(folder) / "warm", workers, suite_environment())
        command = pytest_command(
            args.pytest_args,
            args.results,
            args.published,
            args.setups,
            workers,
            shares_gpus(gpus, workers),
            host_checks=verdict,
            warm_pool=pool.folder if pool else None,
        )
        print(
            "lorabench bench: " + " ".join(command[1:]),
            file=sys.stderr if args.json else sys.stdout,
            flush=True,
        )
        if not args.no_report:
            preload_report()
        try:
            return checked_suite(
                start_suite(command, to_stderr=args.json), verdict, lambda: gate(args.results)
            )
        finally:
            if pool is not None:
                pool.close()


def cmd_bench(args: argparse.Namespace) -> int:
    from harness.doctor.report import BLOCKED

    load_catalogue(args.setups)  # your setup files first: a mistake is one line and exit 2, before any run
    from harness.run.inputs import check_results_dir  # the run's own check (12.7 ms more to import)

    check_results_dir(args.results, None)
    # In a checkout (a container's mounted folders are no checkout: there `reports` may be the host's
    # reports-local/), writing into the committed folders is said out loud.
    in_checkout = Path(".git").exists()
    if in_checkout and (
        args.reports.resolve() == Path("reports").resolve()
        or args.results.resolve() == DEFAULT_PUBLISHED.resolve()
    ):
        print(
            "lorabench bench: writing into the committed reports/ folder; that replaces published results "
            "(`lorabench publish` copies chosen records there instead)",
            file=sys.stderr,
        )
    status, interrupted, blocked = suite_step(args)
    if blocked is not None:
        print(f"lorabench bench: stopped: the host checks found it {blocked}", file=sys.stderr)
        return BLOCKED
    if interrupted:
        print(
            f"lorabench bench: interrupted; records so far are in {args.results} (run it again to resume: "
            "a stopped seed continues from its last checkpoint)",
            file=sys.stderr,
        )
        return 130
    if status == PYTEST_USAGE_ERROR:  # nothing ran: a scorecard of old records would bury pytest's line
        print(
            "lorabench bench: pytest refused its arguments (its error is above): no run started, no scorecard; "
            "what follows `--` goes to pytest as it is (`pytest --help` lists its options)",
            file=sys.stderr,
        )
        return status
    if args.no_report:
        return status
    report_status = report_step(args)  # rendered whatever the suite's verdict: a failed claim shows there
    return status or report_status
