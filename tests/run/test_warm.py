"""The warm trainer (harness.run.warm) with real processes on the tiny model: the runs of one process are
forked from one server that imported the stack once, train as a spawned trainer does, find a dead server
replaced by a spawn, and leave nothing running when their parent is SIGKILLed."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Generator
from pathlib import Path

import psutil
import pytest
from faultlib import cli_args, find_trainers, started_run, wait_for_steps

from harness.config import SetupConfig, load_setup
from harness.run import launch, warm, warm_pool
from harness.run.parent import RunOptions, run_setup


def tiny_setup(model: Path, data: Path, *extra: str):
    return load_setup(None, [
        f"model.source={model}", f"data.source={data}", "data.test_size=4", "recipe.steps=3", "recipe.batch_size=4",
        "eval.max_new_tokens=4", "checks.smoke.first_loss_max=20", "checks.smoke.steps=2", *extra,
    ])  # fmt: skip


@pytest.fixture
def tiny(tiny_model_dir: Path, sql_rows_file: Path) -> SetupConfig:
    return tiny_setup(tiny_model_dir, sql_rows_file)


@pytest.fixture
def no_server() -> Generator[None]:
    warm.close_server()
    yield
    warm.close_server()


def test_runs_of_one_process_are_forked_from_one_server_and_train_as_a_spawned_one(
    tiny: SetupConfig, tmp_path: Path, no_server: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    forked = [run_setup(tiny, RunOptions(tmp_path / f"w{i}", quiet=True))[0] for i in (1, 2)]
    [server] = warm._servers
    assert server.forked == 2 and server.process.poll() is None
    assert [r.status for r in forked] == ["ok", "ok"], [r.reason for r in forked]

    monkeypatch.setattr(launch, "forkable", lambda _setup: False)  # as torchrun, unsloth or systemd-run is
    spawned, _ = run_setup(tiny, RunOptions(tmp_path / "s", quiet=True))
    assert spawned.status == "ok", spawned.reason
    assert spawned.train and forked[0].train and forked[1].train
    assert spawned.train.loss == forked[0].train.loss == forked[1].train.loss
    assert server.forked == 2, "a run the server cannot fork is spawned"


def test_a_dead_server_is_replaced_by_a_spawn(tiny: SetupConfig, tmp_path: Path, no_server: None) -> None:
    assert run_setup(tiny, RunOptions(tmp_path / "a", quiet=True))[0].status == "ok"
    [server] = warm._servers
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait()

    record, _ = run_setup(tiny, RunOptions(tmp_path / "b", quiet=True))
    assert record.status == "ok", record.reason
    assert server.forked == 1 and not warm._servers  # spawned; the next run starts a new server


@pytest.mark.parametrize("trainer_state", ["running", "stopped"])
def test_a_sigkilled_parent_takes_the_server_and_its_trainer_along(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path, trainer_state: str
) -> None:
    """A running trainer's lifeline ends it; a stopped one (as one hung before its lifeline started, which
    a memory cap once caused) is killed by the server, which watches its socket while it waits."""
    results = tmp_path / "results"
    args = cli_args(tiny_model_dir, sql_rows_file, results, steps=100_000)
    with started_run(tmp_path, args) as parent:
        wait_for_steps(results, 3, parent)
        [trainer] = find_trainers(tmp_path)  # the forked child carries a spawned one's command line
        [server] = [p for p in psutil.Process(parent.pid).children() if "harness.run.warm" in p.cmdline()]
        assert trainer.ppid() == server.pid
        if trainer_state == "stopped":
            trainer.suspend()
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        _, alive = psutil.wait_procs([server, trainer], timeout=15)
        assert not alive, f"outlived their SIGKILLed parent: {alive}"


def test_a_run_under_a_memory_cap_is_spawned(
    tiny: SetupConfig, tmp_path: Path, no_server: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork starts with the server's imports, which RLIMIT_DATA would count: a cap measures a fresh trainer."""
    monkeypatch.setenv("LORABENCH_MEM_CAP", "20g")
    record, _ = run_setup(tiny, RunOptions(tmp_path, quiet=True))
    assert record.status == "ok", record.reason
    assert not warm._servers


def test_a_forked_trainer_ends_as_a_spawned_one_leaving_no_scratch_folder(
    tiny: SetupConfig, tmp_path: Path, no_server: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fork ends with os._exit, which skips the exit handlers a spawned trainer's interpreter runs; the
    Trainer's scratch folder is removed by one (54 were left in /tmp by one run of the tests before)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    record, _ = run_setup(tiny, RunOptions(tmp_path / "r", quiet=True))
    assert record.status == "ok", record.reason
    assert warm._servers and warm._servers[0].forked == 1
    assert not list(scratch.glob("lorabench-trainer-*"))


def test_a_server_started_before_the_first_run_forks_it(
    tiny: SetupConfig, tmp_path: Path, no_server: None
) -> None:
    """What a suite's xdist worker does (harness.suite.plugin): its server starts with it, in the environment
    its untimed runs will have, and the first run finds it instead of starting another."""
    launch.prewarm_trainer()
    [server] = warm._servers
    record, _ = run_setup(tiny, RunOptions(tmp_path / "w", quiet=True))
    assert record.status == "ok", record.reason
    assert warm._servers == [server], "the run's environment differs from the one the server was started in"
    assert server.forked == 1


def test_the_fork_warning_about_library_threads_is_silenced_and_no_other() -> None:
    """Python 3.12's warning at a fork of a multi-threaded process (its text, as it prints it) is silenced
    around the server's fork; other deprecation warnings there still show."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with warm.forking_with_library_threads():
            warnings.warn(
                "This process (pid=1088) is multi-threaded, use of fork() may lead to deadlocks in the child.",
                DeprecationWarning,
                stacklevel=1,
            )
            warnings.warn("something else is deprecated", DeprecationWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["something else is deprecated"]


def test_a_worker_adopts_the_server_bench_started_for_it(
    tiny: SetupConfig, tmp_path: Path, no_server: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench's pool (harness.run.warm_pool): gw0 finds the server started for it, forks its run from it, and
    the server, bench's child, ends on its own when its worker lets go of it."""
    pool = launch.start_trainer_pool(tmp_path / "pool", 1, dict(os.environ))
    assert pool is not None
    try:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")  # what xdist tells a worker; no import reads it
        launch.prewarm_trainer(pool.folder)
        [server] = warm._servers
        assert server.process is None, "the worker started a server of its own"
        record, _ = run_setup(tiny, RunOptions(tmp_path / "w", quiet=True))
        assert record.status == "ok", record.reason
        assert warm._servers == [server] and server.forked == 1
        warm.close_server()
        assert pool.process.wait(timeout=30) == 0
    finally:
        pool.close()


def test_one_pool_process_imports_the_stack_once_and_serves_every_worker(
    tmp_path: Path, no_server: None
) -> None:
    """Two workers' servers from one process: it imports the stack, forks gw1's server and serves gw0 itself;
    both say ready to their worker, and bench's close ends them both (the forked one is in its group)."""
    pool = launch.start_trainer_pool(tmp_path / "pool", 2, dict(os.environ))
    assert pool is not None
    try:
        top = pool.process
        assert top is not None
        workers = [socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(2)]
        for sock, name in zip(workers, ("gw0", "gw1"), strict=True):
            sock.connect(str(pool.folder / f"{name}.sock"))
        for sock in workers:
            assert warm.receive(sock)[0] == {"ready": True}
        group = [p for p in psutil.process_iter() if _group_of(p) == top.pid]
        assert len(group) == 2, "the first worker's server and one fork"
    finally:
        pool.close()
    _, alive = psutil.wait_procs(group, timeout=30)  # a zombie is ended, left to whoever adopted it to reap
    assert all(p.status() == psutil.STATUS_ZOMBIE for p in alive), "a forked server outlived bench's close"


def _group_of(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except OSError:
        return None


def test_a_pool_server_no_worker_adopts_ends_with_bench(tmp_path: Path, no_server: None) -> None:
    """One for another environment is not adopted (the worker starts its own, as without a pool); it waits,
    imports done, until bench closes the pool or dies: here bench's end of its socket pair closes."""
    pool = launch.start_trainer_pool(tmp_path / "pool", 1, {**os.environ, "HF_HOME": str(tmp_path / "hf")})
    assert pool is not None
    try:
        assert not warm_pool.adopt(pool.folder, "gw0", launch.trainer_env(1))
        assert pool.process.poll() is None
        pool.owners[0].close()
        assert pool.process.wait(timeout=60) == 0
    finally:
        pool.close()
