"""pytest plugin for `benchmarks/`: options, markers, host skips, the claim cases and the run fixtures.

Load it from `benchmarks/conftest.py` with `pytest_plugins = ["harness.suite.plugin"]`. A test that asks
for `lorabench_claim` is parametrized with one case per claim of every setup file (`harness.suite.cases`:
benchmarks/test_setups.py) and judges it with `lorabench_judge`. Records come through
`lorabench_run(setup_file, seed)`; the run cache (`harness.suite.cache`) decides whether that trains or
re-reads a record, so a second `pytest benchmarks` re-asserts without re-training.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Generator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import pytest

from harness import settings
from harness.config import DATA_ENV, SetupConfig, parse_override
from harness.cpuinfo import usable_cores
from harness.errors import ConfigError, UserError
from harness.gpu import mps
from harness.results import RunRecord, record_path
from harness.run.launch import prewarm_trainer
from harness.stack_name import default_stack
from harness.suite.cache import DEFAULT_RERUN
from harness.suite.cases import CaseRuns, ClaimCase, collect_cases, judge_case, params, skip_reason
from harness.suite.catalogue import Catalogue, load_catalogue
from harness.suite.claims import NotEvaluable
from harness.suite.host import HostCapabilities, detect_capabilities, missing_for_setup
from harness.suite.host_gate import accept_arguments
from harness.suite.progress import Mode, ProgressView, Sink, followed_run
from harness.suite.runner import FollowRun, RunResult, SuiteRunner, SuiteSettings, shown
from harness.suite.setups import BenchSetup
from harness.terminal import fit

DEFAULT_SEEDS = "3407,42,1234"
SETUPS_FOLDER = "setups"  # the built-in setups, beside the test module that asks for lorabench_claim
PUBLISHED = "reports/results"
STACK_ENV = settings.STACK.name
DATA_SUFFIXES = (".jsonl", ".json", ".parquet")
RUN_FIXTURES = frozenset({"lorabench_run", "lorabench_record"})
MARKERS = {
    "gpu": "gpu: needs at least one GPU (CUDA or ROCm)",
    "multi_gpu": "multi_gpu(n=2): needs n GPUs of one host; under xdist its run takes them all (its siblings wait)",
    "cpu_ok": "cpu_ok: finishes on a CPU-only host (others skip there)",
    "slow": "slow: trains a real model (minutes to hours); deselect with -m 'not slow'",
    "timed": "timed: its runs are timed: quiet-machine guard, host-wide lock, never reuses an untimed record",
}

SETTINGS_KEY = pytest.StashKey[SuiteSettings]()
RUNNER_KEY = pytest.StashKey[SuiteRunner]()
CAPS_KEY = pytest.StashKey[HostCapabilities]()
MPS_KEY = pytest.StashKey[mps.Mps]()
MPS_PIPE = "lorabench_mps_pipe"  # the key a worker finds the controller's MPS pipe under (its workerinput)
CATALOGUES_KEY = pytest.StashKey[dict[tuple[Path, ...], Catalogue]]()


class RunFixture(Protocol):
    def __call__(
        self, setup_file: str | Path, seed: int, overrides: Mapping[str, object] | None = None
    ) -> RunRecord: ...


class RecordFixture(Protocol):
    def __call__(
        self, setup_file: str | Path, seed: int, *, stack: str, overrides: Mapping[str, object] | None = None
    ) -> RunRecord: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lorabench", "lorabench benchmark suite")
    _add_source_options(group)
    _add_run_options(group)
    _add_bench_options(group)
    _add_view_options(group)


def _add_source_options(group: pytest.OptionGroup) -> None:
    """What runs: the setups, seeds, model, data and overrides."""
    group.addoption(
        "--lorabench-setups",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of setup files (*.toml with [claims]) whose claims are the cases (repeatable; "
        f"default: the {SETUPS_FOLDER}/ folder beside the test module)",
    )
    group.addoption(
        "--lorabench-seeds",
        default=DEFAULT_SEEDS,
        metavar="N,N,…",
        help=f"comma-separated seeds every case runs with (default: {DEFAULT_SEEDS})",
    )
    group.addoption(
        "--lorabench-model",
        default=None,
        metavar="SOURCE",
        help="model.source for every setup: preset, hub id, local folder or .gguf (default: each setup's own)",
    )
    group.addoption(
        "--lorabench-data",
        default=settings.DATA.get(),
        metavar="SOURCE",
        help=f"data.source for every setup: hub dataset id or local .jsonl/.json/.parquet "
        f"(default: ${DATA_ENV} if set, else each setup's own)",
    )
    group.addoption(
        "--lorabench-set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a setup field in every setup, e.g. recipe.steps=20 (repeatable; counts in the fingerprint)",
    )


def _add_run_options(group: pytest.OptionGroup) -> None:
    """Where records live, which are reused, and how runs are made."""
    group.addoption(
        "--lorabench-stack",
        default=None,
        metavar="NAME",
        help=f"stack name runs are recorded and looked up under (default: ${STACK_ENV}, else the pinned stack "
        "installed here, else the environment named by torch and its runtime, e.g. venv-torch2.11.0-cuda13.0)",
    )
    group.addoption(
        "--lorabench-other-stack",
        default=None,
        metavar="NAME",
        help="stack a cross-stack claim (Exp E) compares against; its records must already be in the results folder",
    )
    group.addoption(
        "--lorabench-results",
        default="results",
        metavar="DIR",
        help="results folder records are read from and written to (default: results)",
    )
    group.addoption(
        "--lorabench-published",
        default=PUBLISHED,
        metavar="DIR",
        help="published (committed) records: read, never written; one whose fingerprint matches stands in "
        f"for a run (default: {PUBLISHED}; an empty value reads none)",
    )
    group.addoption(
        "--lorabench-rerun",
        nargs="?",
        const="all",
        default=DEFAULT_RERUN,
        choices=("no", "failed", "all"),
        help="which cached records run again: failed = any status but ok (killed, failed, refused, diverged), "
        "so an interrupted suite resumes; all (the flag alone) = every one; no = reuse every record "
        f"(default: {DEFAULT_RERUN})",
    )
    group.addoption(
        "--lorabench-allow-noisy",
        action="store_true",
        default=False,
        help="timed runs on a busy machine are recorded (marked untimed) instead of refused",
    )
    group.addoption(
        "--lorabench-inline",
        action="store_true",
        default=False,
        help="train in the pytest process instead of a child process (debugging)",
    )


def _add_bench_options(group: pytest.OptionGroup) -> None:
    """What `lorabench bench` passes: the MPS server for shared GPUs, the host checks' verdict file, the warm
    trainers it started."""
    group.addoption(
        "--lorabench-mps",
        action="store_true",
        default=False,
        help="under pytest-xdist on CUDA, start a CUDA MPS server for the session's runs that share a GPU "
        "(their kernels then run at once; a run alone on its GPU stays a plain process); the host's own "
        "server is used where it runs one. `lorabench bench` asks for it when it seats several workers on a GPU",
    )
    group.addoption(
        "--lorabench-host-checks",
        default=None,
        metavar="FILE",
        help="the file `lorabench bench` writes the host checks' verdict into while pytest starts; each run "
        "that trains waits for it (harness/suite/host_gate.py)",
    )
    group.addoption(
        "--lorabench-warm-pool",
        default=None,
        metavar="DIR",
        help="the folder of warm trainer servers `lorabench bench` started before pytest, one per xdist worker; "
        "each worker adopts its own instead of starting one (harness/run/warm_pool.py)",
    )


def _add_view_options(group: pytest.OptionGroup) -> None:
    """How a training run's progress is shown."""
    group.addoption(
        "--lorabench-progress",
        default="auto",
        choices=("auto", "live", "lines", "off"),
        help="progress of runs that train, shown past pytest's capture: live (one status line rewritten in "
        "place), lines (a line per phase and every --lorabench-progress-every seconds: CI logs), off; "
        "auto = live on a terminal, lines otherwise, off with -s (the trainer then prints its own) (default: auto)",
    )
    group.addoption(
        "--lorabench-progress-every",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="in lines mode, seconds between progress lines within a phase (default: 30)",
    )


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS.values():
        config.addinivalue_line("markers", line)
    settings = settings_from_config(config)
    config.stash[SETTINGS_KEY] = settings
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    config.stash[RUNNER_KEY] = SuiteRunner(
        settings, worker=worker, follow=progress_follower(config, settings, worker)
    )
    config.pluginmanager.register(RunLog(), "lorabench-runlog")
    if settings.host_checks is not None and not hasattr(config, "workerinput"):
        accept_arguments(settings.host_checks)  # bench shows the host checks' screen now
    controller = not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None)
    if controller and config.getoption("lorabench_mps"):
        start_mps(config)
    if worker and settings.warm_pool is None:  # bench's pool: a GPU host (bench seats no CPU workers)
        share_the_cores(config.stash[RUNNER_KEY])
    if worker and not settings.inline:
        # An xdist worker (`lorabench bench` starts them on GPU hosts) starts its warm fork server with itself:
        # the trainers' imports then overlap the worker's start, collection and lookups. A worker whose runs
        # are all reused ends it unused.
        prewarm_trainer(settings.warm_pool)


def share_the_cores(runner: SuiteRunner) -> None:
    """A CPU host's xdist workers (`-n k`, which the user asked for: bench seats none there) each compute on
    their share of the cores, they and every trainer they start, before the warm server inherits this
    process's environment; the records say it (provenance.environment). OMP_NUM_THREADS the user set stays."""
    threads = runner.spread.cpu_threads(usable_cores())
    if threads is None or "OMP_NUM_THREADS" in os.environ:
        return
    os.environ["OMP_NUM_THREADS"] = str(threads)  # torch is not imported yet here: it reads this when it is


def start_mps(config: pytest.Config) -> None:
    """The controller's CUDA MPS server for its workers' shared runs (harness/gpu/mps.py), said in one line."""
    server, line = mps.start()
    print(f"lorabench: {line}", file=sys.stderr, flush=True)
    if server is not None:
        config.stash[MPS_KEY] = server


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, before a worker starts: it learns the controller's MPS pipe (workers parse their own options)."""
    if (server := node.config.stash.get(MPS_KEY, None)) is not None:
        node.workerinput[MPS_PIPE] = str(server.pipe)


def pytest_unconfigure(config: pytest.Config) -> None:
    if (server := config.stash.get(MPS_KEY, None)) is not None:
        server.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """A claim the records cannot judge (`NotEvaluable`: one seed for a spread, a number a record lacks)
    is skipped with its reason: it neither passed nor failed, as the scorecard says."""
    try:
        return (yield)
    except NotEvaluable as exc:
        pytest.skip(str(exc))


def _check_overrides(overrides: tuple[str, ...], problems: list[str]) -> None:
    """Parse each `--lorabench-set` now, so a malformed one is named before any run starts."""
    for text in overrides:
        try:
            parse_override(text)
        except ConfigError as exc:
            problems.append(f"--lorabench-set: {exc.problems[0]}")


def _resolve_data(data: str | None, here: Path, problems: list[str]) -> str | None:
    """`--lorabench-data` as an absolute path when it names a file (one missing is a problem); a hub
    dataset id is passed on unchanged."""
    if data and (data.endswith(DATA_SUFFIXES) or (here / data).exists()):
        if not (here / data).is_file():
            problems.append(
                f"--lorabench-data: no such file {data!r} (from the option or ${DATA_ENV}); "
                "give an existing .jsonl/.json/.parquet file or a hub dataset id"
            )
        data = str((here / data).resolve())
    return data


def _published_dir(option: str | None, here: Path, results: Path) -> Path | None:
    """The folder of published records to read too; None when there is none there or it is the
    results folder itself (nothing more to read)."""
    published = (here / option).resolve() if option else None
    if published is not None and (not published.is_dir() or published == results.resolve()):
        published = None  # none there, or the results folder itself: nothing more to read
    return published


def settings_from_config(config: pytest.Config) -> SuiteSettings:
    """The options, checked together; any misuse is a `pytest.UsageError` that names the fix."""
    here = config.invocation_params.dir
    problems: list[str] = []
    seeds = _parse_seeds(config.getoption("lorabench_seeds"), problems)
    overrides = tuple(config.getoption("lorabench_set"))
    _check_overrides(overrides, problems)
    data = _resolve_data(config.getoption("lorabench_data"), here, problems)
    model = config.getoption("lorabench_model")
    if model and (here / model).exists():
        model = str((here / model).resolve())
    results = here / config.getoption("lorabench_results")
    if results.exists() and not results.is_dir():
        problems.append(f"--lorabench-results: {results} is a file; give a folder")
    published = _published_dir(config.getoption("lorabench_published"), here, results)
    stack = config.getoption("lorabench_stack")
    stack = default_stack() if stack is None else stack
    other = config.getoption("lorabench_other_stack")
    if other and other == stack:
        problems.append(
            f"--lorabench-other-stack: {other!r} is the stack under test; name the stack to compare against"
        )
    setups = tuple((here / folder).resolve() for folder in config.getoption("lorabench_setups"))
    problems += [
        f"--lorabench-setups: {f} is not a folder; give a folder of setup .toml files"
        for f in setups
        if not f.is_dir()
    ]
    every = config.getoption("lorabench_progress_every")
    if every < 0:
        problems.append(f"--lorabench-progress-every: {every} is negative; give seconds >= 0, e.g. 30")
    if problems:
        raise pytest.UsageError("lorabench options:\n  " + "\n  ".join(problems))
    return SuiteSettings(
        stack=stack,
        seeds=seeds,
        results_dir=results.resolve(),
        published_dir=published,
        model=model,
        data=data,
        overrides=overrides,
        allow_noisy=config.getoption("lorabench_allow_noisy"),
        rerun=config.getoption("lorabench_rerun"),
        inline=config.getoption("lorabench_inline"),
        quiet=config.getoption("capture") != "no",
        other_stack=other,
        progress=config.getoption("lorabench_progress"),
        progress_every_s=every,
        mps_pipe=getattr(config, "workerinput", {}).get(MPS_PIPE),
        setups=setups,
        host_checks=here / checks if (checks := config.getoption("lorabench_host_checks")) else None,
        warm_pool=here / pool if (pool := config.getoption("lorabench_warm_pool")) else None,
    )


def progress_follower(config: pytest.Config, settings: SuiteSettings, worker: str | None) -> FollowRun:
    """How the runner shows a training run's progress: through the terminal, past the capture."""
    sink = terminal_sink(config, worker)

    def follow(label: str, header: str, more_runs: int = 0) -> AbstractContextManager[ProgressView | None]:
        mode = progress_mode(config, settings, worker)
        return followed_run(label, sink, mode, settings.progress_every_s, header, more_runs)

    return follow


def progress_mode(config: pytest.Config, settings: SuiteSettings, worker: str | None) -> Mode:
    if settings.progress != "auto":
        return settings.progress
    if not settings.quiet:
        return "off"  # -s: the trainer child writes its own progress to the terminal
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return "live" if reporter is not None and worker is None and reporter.isatty() else "lines"


def terminal_sink(config: pytest.Config, worker: str | None) -> Sink:
    """Writes progress lines to the terminal while pytest captures the test: capture is suspended for
    each write, as pytest's own live logging does. An xdist worker has no terminal of its own: it writes
    to the stderr it was started with (the controller's), one lasting line at a time."""
    transient_shown = False

    def write(text: str, transient: bool) -> None:
        nonlocal transient_shown
        capman = config.pluginmanager.get_plugin("capturemanager")
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            if reporter is None or worker is not None:
                if not transient:
                    print(f"[{worker}] {text}" if worker else text, file=sys.__stderr__, flush=True)
                return
            # Fitted to a terminal: a status line shortened by words, a lasting one wrapped, never cut
            # mid-number (80 columns cut the estimate at "(20.65 s/"); a pipe or a CI log gets it whole.
            tty = reporter.isatty()
            first, *more = fit(text, reporter._tw.fullwidth - 1, transient=transient) if tty else [text]
            if transient or transient_shown:
                if not transient_shown:
                    reporter.ensure_newline()
                reporter.rewrite(first, erase=True)
                if not transient:
                    reporter.write("\n")
            else:
                reporter.write_line(first)
            for line in more:
                reporter.write_line(line)
            reporter.flush()
        transient_shown = transient

    return write


def _parse_seeds(text: str, problems: list[str]) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in parts if not p.lstrip("-").isdigit()]
    if bad or not parts:
        problems.append(
            f"--lorabench-seeds: {text!r} is not a list of integers; give e.g. --lorabench-seeds={DEFAULT_SEEDS}"
        )
        return ()
    seeds = tuple(int(p) for p in parts)
    if len(set(seeds)) != len(seeds):
        problems.append(f"--lorabench-seeds: {text!r} repeats a seed; give each seed once")
    return seeds


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    settings = metafunc.config.stash[SETTINGS_KEY]
    if "lorabench_seed" in metafunc.fixturenames:
        metafunc.parametrize("lorabench_seed", settings.seeds, ids=[f"seed{s}" for s in settings.seeds])
    if "lorabench_claim" in metafunc.fixturenames:
        folders = settings.setups or (metafunc.definition.path.parent / SETUPS_FOLDER,)
        metafunc.parametrize(
            "lorabench_claim", params(collect_cases(catalogue(metafunc.config, folders), settings.seeds))
        )


def catalogue(config: pytest.Config, folders: tuple[Path, ...]) -> Catalogue:
    """The claims of the setup files in `folders`, read once a session; a bad file stops the collection
    with its one line (field, value, fix)."""
    known = config.stash.setdefault(CATALOGUES_KEY, {})
    if folders not in known:
        try:
            known[folders] = load_catalogue(folders)
        except UserError as exc:
            pytest.fail(str(exc), pytrace=False)
    return known[folders]


def capabilities(config: pytest.Config) -> HostCapabilities:
    if CAPS_KEY not in config.stash:
        config.stash[CAPS_KEY] = detect_capabilities()
    return config.stash[CAPS_KEY]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, at collection, what this host cannot run, naming what is missing."""
    for item in items:
        if item.get_closest_marker("skip"):
            continue  # the module's own reason (e.g. "not implemented yet") says more than the host's
        reason = _host_skip_reason(config, item)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


def _host_skip_reason(config: pytest.Config, item: pytest.Item) -> str | None:
    multi = item.get_closest_marker("multi_gpu")
    wants_gpu = item.get_closest_marker("gpu") is not None
    runs = bool(RUN_FIXTURES & set(getattr(item, "fixturenames", ())))
    if not (multi or wants_gpu or runs):
        return None
    caps = capabilities(config)
    if multi:
        needed = int(multi.kwargs.get("n", multi.args[0] if multi.args else 2))
        if reason := caps.missing_gpus(needed):
            return f"multi_gpu: {reason}"
    if wants_gpu and (reason := caps.missing_gpus(1)):
        return f"gpu: {reason}"
    if runs and caps.gpu_count == 0 and item.get_closest_marker("cpu_ok") is None:
        return "needs a GPU: not marked cpu_ok, and this host has torch.cuda.device_count() == 0"
    return None


@pytest.fixture(scope="session")
def lorabench_settings(pytestconfig: pytest.Config) -> SuiteSettings:
    return pytestconfig.stash[SETTINGS_KEY]


@pytest.fixture(scope="session")
def lorabench_seeds(lorabench_settings: SuiteSettings) -> tuple[int, ...]:
    return lorabench_settings.seeds


@pytest.fixture
def lorabench_setup(request: pytest.FixtureRequest) -> Callable[[str | Path], BenchSetup]:
    """`lorabench_setup("setups/exp_a.toml")`: the setup file (path relative to the test module, or absolute), read once."""
    runner = request.config.stash[RUNNER_KEY]

    def load(setup_file: str | Path) -> BenchSetup:
        path = (request.path.parent / setup_file).resolve()
        try:
            return runner.bench_setup(path)
        except UserError as exc:
            pytest.fail(str(exc), pytrace=False)

    return load


@pytest.fixture
def lorabench_run(
    request: pytest.FixtureRequest, lorabench_setup: Callable[[str | Path], BenchSetup]
) -> RunFixture:
    """`lorabench_run(setup_file, seed, overrides=None) -> RunRecord`, session-cached and cached on disk.

    Skips when the host cannot run the setup; fails when the record's status is not ok."""
    runner = request.config.stash[RUNNER_KEY]
    timed = request.node.get_closest_marker("timed") is not None

    def run(setup_file: str | Path, seed: int, overrides: Mapping[str, object] | None = None) -> RunRecord:
        setup = _resolve(runner, lorabench_setup(setup_file), seed, overrides)
        missing = missing_for_setup(setup, capabilities(request.config))
        if missing:
            pytest.skip(f"{setup.experiment}/{setup.name}: " + "; ".join(missing))
        try:
            result = runner.run(setup, timed=timed)
        except UserError as exc:
            refused = str(exc)  # failed below, outside the handler: one line, no chained exception shown
        else:
            request.node.user_properties.append(("lorabench_run", result.line()))
            return _ok_or_fail(result)
        # Refused before it started (bad data, a full results folder, a host the checks blocked): no record.
        pytest.fail(f"{setup.experiment}/{setup.name} seed {seed}: not started: {refused}", pytrace=False)

    return run


@pytest.fixture
def lorabench_record(
    request: pytest.FixtureRequest, lorabench_setup: Callable[[str | Path], BenchSetup]
) -> RecordFixture:
    """`lorabench_record(setup_file, seed, stack=NAME)`: a record of another stack on this host; never trains."""
    runner = request.config.stash[RUNNER_KEY]

    def read(
        setup_file: str | Path, seed: int, *, stack: str, overrides: Mapping[str, object] | None = None
    ) -> RunRecord:
        setup = _resolve(runner, lorabench_setup(setup_file), seed, overrides)
        record, path = runner.cached(setup, stack)
        if record is None:
            pytest.skip(
                f"no record of {setup.experiment}/{setup.name} seed {seed} on stack {stack!r} for this host "
                f"at {shown(path)}: run the suite on stack {stack!r} first"
            )
        return _ok_or_fail(RunResult(record, path, "reused"))

    return read


@pytest.fixture
def lorabench_record_file(request: pytest.FixtureRequest) -> Callable[[RunRecord], Path]:
    """`lorabench_record_file(record) -> Path`: where this suite keeps a record (its adapter and predictions
    lie beside it), e.g. for a setup that scores another run's adapter (`eval.adapter`)."""
    runner = request.config.stash[RUNNER_KEY]
    return lambda record: record_path(runner.settings.results_dir, record)


@pytest.fixture
def lorabench_judge(
    request: pytest.FixtureRequest,
    lorabench_run: RunFixture,
    lorabench_record: RecordFixture,
    lorabench_record_file: Callable[[RunRecord], Path],
) -> Callable[[ClaimCase], Any]:
    """`lorabench_judge(case) -> figure`: the case's claim judged on the records of its setups (trained or
    reused); skips, before any run, a case this session or host cannot judge, naming what is missing."""
    runner = request.config.stash[RUNNER_KEY]
    settings = runner.settings
    runs = CaseRuns(
        load=runner.bench_setup,
        run=lambda path, seed, overrides: lorabench_run(path, seed, overrides),
        other=lambda path, seed: lorabench_record(path, seed, stack=settings.other_stack or ""),
        record_file=lorabench_record_file,
    )

    def judge(case: ClaimCase) -> Any:
        if reason := skip_reason(case, settings, runner.bench_setup):
            pytest.skip(reason)
        seeds = case.seeds(settings)
        for path in dict.fromkeys(
            case.claim.setups.values()
        ):  # what this host lacks first, before hours of a reference
            setup = _resolve(runner, runner.bench_setup(path), seeds[0], None)
            if missing := missing_for_setup(setup, capabilities(request.config)):
                pytest.skip(f"{setup.experiment}/{setup.name}: " + "; ".join(missing))
        return judge_case(case, seeds, runs)

    return judge


def _resolve(
    runner: SuiteRunner, bench: BenchSetup, seed: int, overrides: Mapping[str, object] | None
) -> SetupConfig:
    try:
        return runner.resolve(bench, seed, list((overrides or {}).items()))
    except UserError as exc:
        pytest.fail(str(exc), pytrace=False)


def _ok_or_fail(result: RunResult) -> RunRecord:
    record = result.record
    if record.status != "ok":
        pytest.fail(
            f"{record.experiment}/{record.setup_name} seed {record.seed}: run {record.status}: {record.reason} "
            f"(record: {shown(result.path)}; it runs again in the next session unless --lorabench-rerun=no)",
            pytrace=False,
        )
    return record


class RunLog:
    """Collects the run lines from test reports (reports reach the xdist controller, so every worker's
    runs are seen) and prints them after the tests."""

    def __init__(self) -> None:
        self.lines: dict[str, None] = {}  # ordered, deduplicated

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.lines.update(dict.fromkeys(str(v) for k, v in report.user_properties if k == "lorabench_run"))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.lines:
            return
        terminalreporter.write_sep("-", "lorabench runs")
        for line in self.lines:
            terminalreporter.write_line(line)
        counts = {
            how: sum(line.startswith(how) for line in self.lines) for how in ("trained", "re-ran", "reused")
        }
        published = sum(line.startswith("reused") and "[published" in line for line in self.lines)
        terminalreporter.write_line(
            f"lorabench: {counts['trained']} trained, {counts['re-ran']} re-ran, {counts['reused']} reused from cache"
            + (f" ({published} of them published records)" if published else "")
        )
