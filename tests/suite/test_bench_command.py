"""`lorabench bench` runs the suite in a real pytest process; its exit status follows the claims."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.commands.bench import pytest_command, start_suite, suite_environment, wait_suite
from harness.run.launch import start_trainer_pool
from harness.run.lifeline import identity
from harness.suite.host_gate import HostBlocked, await_host_gate, open_host_gate

REPO = Path(__file__).resolve().parents[2]


def bench_command(bench_args: tuple[str, ...]) -> list[str]:
    """`lorabench bench` over the tiny benchmark's module, its records in `results`."""
    suite_args = [a for a in bench_args if not a.startswith("--lorabench-results")]
    return [
        sys.executable,
        "-m",
        "harness.cli",
        "bench",
        "--results",
        "results",
        "test_claims.py",
        *suite_args,
    ]


def test_exit_status_follows_the_claims(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], write_cached: Callable[..., Path],
    bench_args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the child imports this worktree's harness
    command = bench_command(bench_args)

    setup = bench_dir(min_gain=20.0)
    write_cached(setup, pytester.path / "results", baseline=10.0, trained=40.0)  # gain 30: holds
    passed = pytester.run(*command)
    assert passed.ret == 0, passed.stdout.str()
    passed.stdout.fnmatch_lines(["reused  exp_t/tiny seed 3407: ok → *", "*1 passed*",
                                 "lorabench bench: scorecards from results (yours)"])  # fmt: skip

    write_cached(setup, pytester.path / "results", baseline=10.0, trained=25.0)  # gain 15: fails
    failed = pytester.run(*command)
    assert failed.ret == 1
    failed.stdout.fnmatch_lines(
        ["*gain below 20 points: exp_t/tiny seed 3407: 10.0 → 25.0 (gain +15.0)*", "*1 failed*"]
    )
    # The scorecard is rendered whatever the suite's verdict (its claims table is test_own_benchmark.py's).
    failed.stdout.fnmatch_lines(
        ["lorabench bench: scorecards from results (yours)", "reports-local/*/teststack/scorecard.md: *"]
    )


def test_arguments_pytest_refuses_end_bench_in_a_line_without_a_scorecard(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], write_cached: Callable[..., Path],
    bench_args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    write_cached(bench_dir(min_gain=20.0), pytester.path / "results", baseline=10.0, trained=40.0)
    refused = pytester.run(*bench_command(bench_args), "--no-such-pytest-option")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*unrecognized arguments: --no-such-pytest-option*",
                                  "lorabench bench: pytest refused its arguments *"])  # fmt: skip
    assert "scorecards from" not in refused.stdout.str()
    # The host checks' twenty lines are not shown under pytest's one (they waited for its arguments' fate).
    assert "lorabench doctor:" not in refused.stderr.str()


def test_a_blocked_host_stops_the_suite_before_its_run_trains(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    # bench runs the host checks while pytest starts; the tiny case, which would train, waits for their
    # verdict. A ROCm container's demand on this CPU host blocks: the case never trains, no record.
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("LORABENCH_REQUIRE_GPU", "rocm")
    bench_dir(min_gain=-100.0)
    done = pytester.run(*bench_command(bench_args))
    output = done.stdout.str() + done.stderr.str()
    assert done.ret == 2, output[-3000:]
    assert "lorabench bench: stopped: the host checks found it blocked by GPU runtime" in output
    assert (
        "lorabench doctor: blocked by GPU runtime" in output
    )  # their screen, once pytest took its arguments
    assert "Traceback" not in output
    assert not list((pytester.path / "results").rglob("seed-3407.json"))


def test_a_run_stops_waiting_when_bench_is_killed_before_its_host_checks_end(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    # kill -9 of bench while its checks run: pytest, its child, goes on; the tiny case must neither train
    # nor wait out the gate's limit. A `docker` that answers nothing holds the checks (15 s per question).
    stand_ins = pytester.path / "bin"
    stand_ins.mkdir()
    (stand_ins / "docker").write_text("#!/bin/sh\nexec sleep 20\n")
    (stand_ins / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{stand_ins}:{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    bench_dir(min_gain=-100.0)
    bench = subprocess.Popen(bench_command(bench_args), cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)  # fmt: skip
    assert bench.stdout is not None
    lines = []
    for line in bench.stdout:
        lines.append(line)
        if "test session starts" in line:
            break
    bench.kill()
    bench.wait()
    output = "".join(lines) + bench.stdout.read()  # to pytest's end: it holds the pipe
    assert f"lorabench bench (pid {bench.pid}) ended before its host checks did" in output, output[-3000:]
    assert "lorabench doctor:" not in output  # the checks never finished
    assert not list((pytester.path / "results").rglob("seed-3407.json"))


@pytest.mark.parametrize("same_environment", [True, False])
def test_an_xdist_worker_trains_with_the_warm_server_bench_started_for_it(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch, same_environment: bool,
) -> None:  # fmt: skip
    # What bench does on a GPU host, on this CPU one: the pool started before pytest, one worker. It adopts
    # the server started for it (which then ends with the worker, before bench closes the pool); one started
    # in another environment it leaves alone and starts its own: the same record either way.
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    bench_dir(min_gain=-100.0)
    env = suite_environment()
    folder = Path(tempfile.mkdtemp(prefix="lorabench-bench-"))  # as bench's: short enough for a socket's name
    pool = start_trainer_pool(
        folder / "warm", 1, env if same_environment else {**env, "HF_HOME": "elsewhere"}
    )
    assert pool is not None
    try:
        command = pytest_command(
            [*bench_args, "-n", "1", "test_claims.py"], Path("results"), warm_pool=pool.folder
        )
        done = subprocess.run(
            command, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        assert "trained exp_t/tiny seed 3407: ok" in done.stdout
        if same_environment:  # adopted: it ended with its worker
            assert pool.process.wait(timeout=30) == 0
        else:  # waiting for a worker, or for bench to close the pool
            assert pool.process.poll() is None
    finally:
        pool.close()
        shutil.rmtree(folder)


def test_the_host_gate_says_go_blocked_or_nothing(tmp_path: Path) -> None:
    verdict = tmp_path / "host-checks"
    with pytest.raises(HostBlocked, match="no verdict from the host checks"):
        await_host_gate(verdict, limit_s=0.1)
    open_host_gate(verdict, None)
    await_host_gate(verdict, limit_s=0.1)
    open_host_gate(verdict, "blocked by GPU runtime: no GPU; fix: …")
    with pytest.raises(HostBlocked, match=r"^blocked by GPU runtime: no GPU"):
        await_host_gate(verdict, limit_s=0.1)


@pytest.mark.parametrize("reaped", [True, False])
def test_a_run_stops_waiting_for_a_writer_that_ended(tmp_path: Path, reaped: bool) -> None:
    # bench's identity beside the verdict; a process ended (reaped, or a zombie not yet reaped) writes nothing.
    writer = subprocess.Popen(["sleep", "30"])
    verdict = tmp_path / "host-checks"
    (tmp_path / "host-checks.writer").write_text(identity(writer.pid))
    with pytest.raises(HostBlocked, match="no verdict"):
        await_host_gate(verdict, limit_s=0.7)  # alive: it waits to the limit
    writer.kill()
    if reaped:
        writer.wait()
    else:
        while Path(f"/proc/{writer.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            pass
    with pytest.raises(
        HostBlocked, match=rf"lorabench bench \(pid {writer.pid}\) ended before its host checks"
    ):
        await_host_gate(verdict, limit_s=60)
    writer.wait()


def test_suite_folder_is_the_default_path() -> None:
    assert pytest_command([], Path("r"))[-3:] == [
        "--lorabench-results=r",
        "--lorabench-published=reports/results",
        "benchmarks",
    ]
    assert pytest_command(["--", "-k", "exp_a"], Path("r"))[-3:] == ["-k", "exp_a", "benchmarks"]
    here = str(Path(__file__))
    assert pytest_command([f"{here}::test_suite_folder_is_the_default_path"], Path("r"))[-1].startswith(here)
    # Your setups folder: the suite's cases are its claims (--lorabench-setups), the suite is still benchmarks/.
    assert pytest_command([], Path("r"), setups=[Path("mine")])[-2:] == [
        "--lorabench-setups=mine",
        "benchmarks",
    ]


def _installed_plugin(site: Path, marker: Path) -> None:
    """A pytest plugin installed as a distribution does it (an entry point in group pytest11) that leaves
    `marker` behind when pytest imports it, as jaxtyping's imported torch."""
    info = site / "noisy_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "noisy_plugin.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: noisy-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nnoisy = noisy_plugin\n")


@pytest.mark.parametrize(("autoload", "imported"), [(None, False), ("", True)])
def test_the_suite_loads_the_plugins_it_names_not_every_installed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, autoload: str | None, imported: bool
) -> None:
    # The suite's own pytest, for real: collection only, over benchmarks/. With PYTEST_DISABLE_PLUGIN_AUTOLOAD
    # set empty (yours to set), the environment's plugins load as in a plain pytest.
    marker = tmp_path / "imported"
    _installed_plugin(tmp_path / "site", marker)
    monkeypatch.setenv("PYTHONPATH", f"{REPO}:{tmp_path / 'site'}")
    monkeypatch.chdir(REPO)
    if autoload is None:
        monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    else:
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", autoload)
    command = pytest_command(["--", "-q", "--collect-only", "-k", "exp_a"], tmp_path / "r", workers=2)
    status, _ = wait_suite(start_suite(command))
    assert status == 0  # xdist's -n is known with autoload off: loaded by name
    assert marker.exists() is imported


def test_no_command_module_imports_the_cli() -> None:
    # harness.cli imports every command to build its parser: a command importing it back is a cycle.
    import ast

    for module in sorted((REPO / "harness" / "commands").glob("*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "harness.cli" not in imported, module.name


def test_make_bench_passes_pytest_arguments_and_folders_through() -> None:
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    shown = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(REPO), "bench", "PYTEST_ARGS=--lorabench-seeds=42 -x", "RESULTS=/tmp/r", "REPORTS=/tmp/p"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert (
        shown.stdout.strip()
        .splitlines()[-1]
        .endswith("lorabench bench --results /tmp/r --reports /tmp/p -- -m cpu_ok --lorabench-seeds=42 -x")
    )
    # By default your runs go to untracked folders, never into the committed reports/ (issue 29).
    plain = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(REPO), "bench"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert (
        plain.stdout.strip()
        .splitlines()[-1]
        .endswith("lorabench bench --results results --reports reports-local -- -m cpu_ok")
    )
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "results/x", "reports-local/x"],
                             capture_output=True, text=True)  # fmt: skip
    assert ignored.stdout.split() == ["results/x", "reports-local/x"]
    mine = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(REPO), "bench", "SETUPS=my-setups"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert (
        mine.stdout.strip()
        .splitlines()[-1]
        .endswith("lorabench bench --results results --reports reports-local --setups my-setups -- -m cpu_ok")
    )


def test_the_reports_imports_are_made_in_a_thread_the_report_waits_for() -> None:
    """bench.preload_report imports matplotlib and the tasks' modules beside the suite; the report step
    waits for that thread before it forks its chart drawers. A fresh interpreter: this one may have them."""
    script = (
        "import sys\n"
        "from harness.commands import bench\n"
        "assert 'matplotlib.figure' not in sys.modules\n"
        "bench.preload_report()\n"
        "[thread] = bench._preloading\n"
        "thread.join(120)\n"
        "print('matplotlib.figure' in sys.modules, 'harness.tasks.sql.task' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=180
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
