"""Multi-node runs for real on one machine: two `lorabench run` processes (two torchrun agents) meeting
through a c10d rendezvous on 127.0.0.1, gloo on the CPU, a tiny model. See nodeslib for the setting."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Generator
from pathlib import Path

import psutil
import pytest
from nodeslib import ROOT, records, start_pair, stop_all, wait_for

from harness.config import load_setup
from harness.locks import exclusive_lock
from harness.results import load_record
from harness.run.parent import RunOptions, run_setup

TINY = ("--steps", "6", "--quiet", "--set", "data.test_size=6", "--set", "recipe.batch_size=4",
        "--set", "eval.max_new_tokens=6", "--set", "checks.smoke.first_loss_max=20", "--set", "checks.smoke.steps=5")  # fmt: skip


def tiny_args(model: Path, data: Path, *extra: str) -> tuple[str, ...]:
    return ("--model", str(model), "--data", str(data), *TINY, "--set", "nodes=2", *extra)


def test_two_nodes_on_loopback_train_one_run_and_the_record_names_both(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    started = time.monotonic()
    a, b = start_pair(tmp_path, tiny_args(tiny_model_dir, sql_rows_file))
    try:
        assert a.wait() == 0, a.output()[-3000:]
        assert b.wait() == 0, b.output()[-3000:]
    finally:
        stop_all(a, b)
    wall = time.monotonic() - started
    # One record, on the lead; the other node ends with the same status line and names where it is.
    (path,) = records(a.results)
    assert records(b.results) == []
    assert a.output().splitlines()[-1].startswith("ok | adhoc/adhoc seed 3407")
    assert b.output().splitlines()[-1] == a.output().splitlines()[-1]
    assert "node 1: the record was written on the lead node" in b.output()
    record = load_record(path)
    assert record.status == "ok", record.reason

    # Every node and every rank named: host, rank, device, load window, peak memory.
    hostname = socket.gethostname()
    assert [(n.node, n.hostname, n.host, n.status) for n in record.nodes] == [
        (0, hostname, record.host, "ok"), (1, hostname, record.host, "ok")
    ]  # fmt: skip
    assert sorted(r for n in record.nodes for r in n.ranks) == [0, 1] and all(
        len(n.ranks) == 1 for n in record.nodes
    )
    assert [r.rank for r in record.ranks] == [0, 1]
    assert {r.node for r in record.ranks} == {0, 1}
    for rank in record.ranks:
        assert rank.hostname == hostname and rank.device == "cpu" and rank.local_rank == 0
        assert rank.load_window is not None and rank.load_window[1] > rank.load_window[0] >= 0
        assert rank.peak_rss_bytes and rank.peak_rss_bytes > 50 * 2**20
        assert rank.node == next(n.node for n in record.nodes if rank.rank in n.ranks)
    assert record.timings.load_windows == [r.load_window for r in record.ranks]

    # What a one-node record shows, a two-node record shows too: checks, losses, scores.
    assert record.train.steps_done == 6 and len(record.train.loss) == 6
    assert {record.checks[c].verdict for c in ("smoke", "mask_audit", "dead_adapters")} == {"pass"}
    assert record.trained.n == 6 and record.baseline.n == 6 and record.predictions_file
    assert record.setup.nodes == 2 and record.guard == {"timed": False}

    # Both nodes trained: the tokens the Trainer counts over every process are twice one process's.
    one = load_setup(None, ["nodes=1", f"model.source={tiny_model_dir}", f"data.source={sql_rows_file}", "recipe.steps=6",
                            "data.test_size=6", "recipe.batch_size=4", "eval.enabled=false", "checks.preflight=false",
                            "checks.smoke.enabled=false"])  # fmt: skip
    single, _ = run_setup(one, RunOptions(results_dir=tmp_path / "one", isolate=False, quiet=True))
    ratio = record.train.tokens / single.train.tokens
    assert 1.7 < ratio < 2.3, (record.train.tokens, single.train.tokens)
    print(f"two loopback nodes: {wall:.1f} s wall for the pair")


def test_a_node_lost_mid_run_leaves_a_killed_record_naming_it(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    args = tiny_args(tiny_model_dir, sql_rows_file, "--steps", "5000", "--set", "checks.smoke.enabled=false",
                     "--set", "checks.preflight=false")  # fmt: skip
    lost_after = {"LORABENCH_NODE_LOST_AFTER": "6"}
    a, b = start_pair(tmp_path, args, env_a=lost_after, env_b=lost_after)
    try:
        # Node b is training once its rank has stamped the train phase.
        def b_trains() -> bool:
            return any('"train"' in f.read_text() for f in b.results.glob(".work/*/events-rank*.jsonl"))

        wait_for(
            b_trains, 480, f"node b to train ({b.output()[-1500:]})"
        )  # 240 s ran out once on a loaded CI machine
        (events,) = b.results.glob(".work/*/events-rank*.jsonl")
        b_rank = int(events.name.removeprefix("events-rank").removesuffix(".jsonl"))
        time.sleep(2)
        b.kill()
        assert a.wait(timeout=180) == 1, a.output()[-3000:]
        left = [p for p in a.tree() if p.is_running()]
    finally:
        stop_all(a, b)
    (path,) = records(a.results)
    record = load_record(path)
    assert record.status == "killed"
    assert record.reason.startswith(f"node 1 ({socket.gethostname()}, {record.host}; ranks {b_rank}) was lost mid-run: "
                                    "its lorabench process stopped answering the rendezvous store"), record.reason  # fmt: skip
    assert [(n.node, n.status) for n in record.nodes] == [(0, "ok"), (1, "lost")] or [
        (n.node, n.status) for n in record.nodes] == [(0, "failed"), (1, "lost")]  # fmt: skip
    assert record.nodes[1].ranks == [b_rank]
    print(f"node lost: {record.reason}")
    assert not left, f"node a left processes behind: {left}"
    assert "killed |" not in a.output() or a.output().splitlines()[-1].startswith("killed | adhoc/adhoc")


@contextlib.contextmanager
def growing_download(folder: Path) -> Generator[None]:
    """A download in progress: a `.incomplete` file in `folder` growing by ~4 MB/s."""
    stop = threading.Event()

    def write() -> None:
        partial = folder / "model.safetensors.incomplete"
        while not stop.is_set():
            with partial.open("ab") as handle:
                handle.write(b"x" * 200_000)
            time.sleep(0.05)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        yield
    finally:
        stop.set()
        writer.join()


@pytest.mark.parametrize("busy", ["lock", "download"])
def test_a_busy_node_refuses_the_timed_run_on_every_node(
    busy: str, tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    """Node b's timed lock held by another timing, or a download growing on node a during its pre-check:
    both nodes end `refused` before any trainer starts, and the record names the busy node."""
    configs = {}
    for name in ("a", "b"):
        watched = tmp_path / f"downloads-{name}"
        watched.mkdir()
        configs[name] = tmp_path / f"guard-{name}.toml"
        configs[name].write_text(
            f'[guard]\nchecks = ["downloads"]\nwindow_s = 1.5\ndownload_dirs = ["{watched}"]\n'
        )
    lock_b = tmp_path / "locks-b" / "lorabench-timed.lock"
    lock_b.parent.mkdir(parents=True)
    args = (*tiny_args(tiny_model_dir, sql_rows_file), "--timed")
    noise = (
        exclusive_lock(lock_b, what="timed lock")
        if busy == "lock"
        else growing_download(tmp_path / "downloads-a")
    )
    with noise:
        a, b = start_pair(tmp_path, (*args, "--guard-config", str(configs["a"])),
                          args_b=(*args, "--guard-config", str(configs["b"])))  # fmt: skip
        try:
            assert a.wait(timeout=240) == 3, a.output()[-3000:]
            assert b.wait(timeout=60) == 3, b.output()[-3000:]
        finally:
            stop_all(a, b)
    (path,) = records(a.results)
    record = load_record(path)
    assert record.status == "refused"
    busy_node = 1 if busy == "lock" else 0
    assert record.reason.startswith(
        f"node {busy_node} ({socket.gethostname()}, {record.host}): refused to time: "
    ), record.reason
    assert (
        f"is held by pid {os.getpid()}" in record.reason if busy == "lock" else ".incomplete" in record.reason
    )
    assert [n.status for n in record.nodes] == ["busy" if n.node == busy_node else "ok" for n in record.nodes]
    assert record.nodes[1 - busy_node].guard["ok"] is True
    # Refused before any trainer started: no training, no plan handed to torchrun.
    assert record.train is None and not list(a.results.glob(".work/*/plan.json"))
    assert b.output().splitlines()[-1].startswith("refused | adhoc/adhoc seed 3407")


def test_node_a_leads_however_slowly_it_starts(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    """Every test here reads the record on node a, and on one host the first parent to bind the endpoint
    leads: node b must not start before node a listens, however long node a takes to get there (imports
    and provenance on a loaded machine). Node b's timed lock is held, so the run ends before any trainer."""
    slow = tmp_path / "slow-start"
    slow.mkdir()
    # Python imports sitecustomize at its start: node a sleeps before any of its own code runs.
    (slow / "sitecustomize.py").write_text("import time\ntime.sleep(5)\n")
    (quiet := tmp_path / "downloads").mkdir()
    config = tmp_path / "guard.toml"
    config.write_text(f'[guard]\nchecks = ["downloads"]\nwindow_s = 1.5\ndownload_dirs = ["{quiet}"]\n')
    lock_b = tmp_path / "locks-b" / "lorabench-timed.lock"
    lock_b.parent.mkdir(parents=True)
    args = (*tiny_args(tiny_model_dir, sql_rows_file), "--timed", "--guard-config", str(config))
    with exclusive_lock(lock_b, what="timed lock"):
        a, b = start_pair(tmp_path, args, env_a={"PYTHONPATH": f"{slow}{os.pathsep}{ROOT}"})
        try:
            assert a.wait(timeout=240) == 3, a.output()[-3000:]
            assert b.wait(timeout=60) == 3, b.output()[-3000:]
        finally:
            stop_all(a, b)
    assert records(b.results) == [], b.output()[-3000:]
    (path,) = records(a.results)
    assert load_record(path).reason.startswith("node 1 ("), load_record(path).reason
    assert "node 1: the record was written on the lead node" in b.output()


def test_a_node_stopped_from_outside_stops_its_ranks_and_the_run_is_killed(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    """`timeout`, `docker stop` or a cancelled CI job send SIGTERM to one node's `lorabench run`: its torchrun
    agent and its ranks (each in a session of its own) go with it, and the lead records `killed`, naming it."""
    args = tiny_args(tiny_model_dir, sql_rows_file, "--steps", "5000", "--set", "checks.smoke.enabled=false",
                     "--set", "checks.preflight=false")  # fmt: skip
    a, b = start_pair(tmp_path, args)
    try:
        wait_for(
            lambda: any('"train"' in f.read_text() for f in b.results.glob(".work/*/events-rank*.jsonl")),
            480,
            f"node b to train ({b.output()[-1500:]})",
        )  # fmt: skip  (a loaded 2-core CI machine: 240 s once ran out)
        b_processes = b.tree()
        assert any("harness.run.child" in " ".join(p.cmdline()) for p in b_processes)
        b.proc.send_signal(signal.SIGTERM)
        assert b.wait(timeout=180) == 130, b.output()[-3000:]
        assert a.wait(timeout=180) == 1, a.output()[-3000:]
        left = [p for p in b_processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    finally:
        stop_all(a, b)
    for orphan in left:  # what a failing run left behind must not outlive the test
        with contextlib.suppress(psutil.Error):
            orphan.kill()
    assert not left, f"node b left processes behind: {left}"
    (path,) = records(a.results)
    record = load_record(path)
    assert record.status == "killed"
    assert re.match(
        rf"node 1 \({socket.gethostname()}, {record.host}; ranks \d\) was stopped from outside by SIGTERM",
        record.reason,
    ), record.reason
    assert record.nodes[1].status == "failed" and "SIGTERM" in record.nodes[1].detail
    # Node b ends like a one-host run stopped from outside: the record's line, then exit 130.
    assert (
        "\nkilled | adhoc/adhoc seed 3407" in b.output()
        and b.output().splitlines()[-1] == "lorabench run: interrupted"
    )


def test_a_lost_lead_leaves_a_killed_record_on_the_node_that_survived(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    """The lead hosts the store and writes the record; when its host goes, the other node writes one itself."""
    args = tiny_args(tiny_model_dir, sql_rows_file, "--steps", "5000", "--set", "checks.smoke.enabled=false",
                     "--set", "checks.preflight=false")  # fmt: skip
    a, b = start_pair(tmp_path, args)
    try:
        wait_for(
            lambda: any('"train"' in f.read_text() for f in b.results.glob(".work/*/events-rank*.jsonl")),
            480,
            f"node b to train ({b.output()[-1500:]})",
        )  # fmt: skip  (a loaded 2-core CI machine: 240 s once ran out)
        a.kill()
        assert b.wait(timeout=120) == 1, b.output()[-3000:]
        left = [p for p in b.tree() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    finally:
        stop_all(a, b)
    assert records(a.results) == []
    (path,) = records(b.results)
    record = load_record(path)
    assert record.status == "killed"
    assert record.reason.startswith(f"node 0 ({socket.gethostname()}, {record.host}), the lead, was lost mid-run: "
                                    "the rendezvous store it hosts stopped answering"), record.reason  # fmt: skip
    assert "written by node 1 instead" in record.reason
    assert [(n.node, n.status) for n in record.nodes] == [(0, "lost"), (1, "ok")]
    assert not left, f"node b left processes behind: {left}"
