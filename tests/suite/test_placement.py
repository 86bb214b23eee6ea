"""Where the suite's runs go (harness/suite/placement.py), on recorded host facts: the H200's nvidia-smi row
(tests/data/gpu/hosts/h200) as a host of 1, 2 and 8 such GPUs answers, and the CPU-only host's torch."""

from __future__ import annotations

import importlib
import json
import re
import stat
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.commands.bench import pytest_command
from harness.cpuinfo import usable_cores
from harness.gpu import facts
from harness.run.plan import Placement
from harness.suite.placement import (
    CUDA_WORKERS_PER_GPU,
    Spread,
    asks_for_workers,
    seat,
    seated,
    shares_gpus,
    workers_for_host,
)

HOSTS = Path(__file__).resolve().parents[1] / "data" / "gpu" / "hosts"


def recorded_h200_row() -> list[str]:
    # The recorded query's columns: index, name, driver, memory.total, compute_cap.
    row = (HOSTS / "h200" / "nvidia-smi-query.csv").read_text(encoding="utf-8").strip().split(", ")
    return [row[1], row[3].removesuffix(" MiB"), row[4], row[2]]  # name, memory, cc, driver


@pytest.fixture
def h200_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """`h200_host(n)`: a CUDA build of torch (its version file only) and an nvidia-smi that answers the
    recorded H200's row for n GPUs, in the columns harness.gpu.facts asks for."""
    package = tmp_path / "site" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('not for importing')\n")
    torch_facts = json.loads((HOSTS / "h200" / "torch.json").read_text(encoding="utf-8"))
    (package / "version.py").write_text(f"cuda = {torch_facts['cuda']!r}\nhip = None\n")
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setenv("PATH", f"{tool.parent}:{__import__('os').environ['PATH']}")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    importlib.invalidate_caches()

    def gpus(n: int) -> dict:  # type: ignore[type-arg]
        rows = "".join(f'echo "{i}, {", ".join(recorded_h200_row())}"\n' for i in range(n))
        tool.write_text("#!/bin/sh\n" + rows)
        tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
        return facts.collect_gpus()

    return gpus


@pytest.mark.parametrize("n_gpus", [1, 2, 8])
def test_bench_picks_k_workers_per_recorded_h200(h200_host, n_gpus: int) -> None:  # type: ignore[no-untyped-def]
    told = h200_host(n_gpus)
    assert [g["name"] for g in told["gpus"]] == ["NVIDIA H200"] * n_gpus and "torch" not in sys.modules
    workers = workers_for_host(told)
    assert workers == CUDA_WORKERS_PER_GPU * n_gpus
    assert pytest_command(["--", "-k", "exp_a"], Path("r"), workers=workers)[-5:] == [
        "-n",
        str(workers),
        "-k",
        "exp_a",
        "benchmarks",
    ]
    # k workers on each GPU: the suite asks for an MPS server for them.
    assert shares_gpus(told, workers)
    assert pytest_command(["--", "-k", "exp_a"], Path("r"), workers=workers, mps=True)[-6:-3] == [
        "-n",
        str(workers),
        "--lorabench-mps",
    ]


def test_a_cpu_host_runs_one_seed_at_a_time_and_the_users_n_wins() -> None:
    cpu = json.loads((HOSTS / "cpu-only" / "torch.json").read_text(encoding="utf-8"))
    assert cpu["device_count"] == 0
    assert workers_for_host({"runtime": "cpu", "gpus": []}) == 0
    assert "-n" not in pytest_command(["--", "-k", "exp_a"], Path("r"), workers=0)
    # One ROCm GPU: one worker gains nothing (several at once measured on CUDA only).
    assert workers_for_host({"runtime": "hip", "gpus": [{"index": 0}]}) == 0
    assert workers_for_host({"runtime": "hip", "gpus": [{"index": 0}, {"index": 1}]}) == 2
    # One worker per GPU shares none; ROCm has no MPS.
    assert not shares_gpus({"runtime": "cuda", "gpus": [{"index": 0}, {"index": 1}]}, 2)
    assert not shares_gpus({"runtime": "hip", "gpus": [{"index": 0}]}, 3)
    for mine in (["-n", "2"], ["-n2"], ["--numprocesses=4"], ["-p", "no:xdist"], ["--dist", "no"]):
        assert asks_for_workers(mine)
        assert pytest_command(mine, Path("r"), workers=6).count("-n") == mine.count("-n")
    assert not asks_for_workers(["-k", "exp_a", "-x"])


@pytest.mark.parametrize("n_gpus", [1, 2, 8])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_each_recorded_gpu_gets_k_workers_each_pinned_to_it(h200_host, n_gpus: int, k: int) -> None:  # type: ignore[no-untyped-def]
    devices = [str(g["index"]) for g in h200_host(n_gpus)["gpus"]]
    workers = n_gpus * k
    spreads = [
        Spread(i, workers, tuple(devices), "CUDA_VISIBLE_DEVICES", siblings_root=1, mps_pipe="/p")
        for i in range(workers)
    ]
    seats = [s.seat for s in spreads]
    assert len(set(seats)) == workers  # no two workers in one slot
    assert Counter(s.device for s in seats) == dict.fromkeys(devices, k)
    for spread in spreads:
        shared = spread.placement(1, alone=False)
        assert shared.gpu_env["CUDA_VISIBLE_DEVICES"] == spread.seat.device and shared.shared_by == k
        # The session's MPS server serves the runs that share a GPU, and only those.
        mps = {"mps": True} if k > 1 else {}
        assert shared.facts.model_dump() == {"devices": spread.seat.device, "shared_by": k, **mps}
        assert ("CUDA_MPS_PIPE_DIRECTORY" in shared.gpu_env) == (k > 1)
        siblings = workers > 1  # one worker alone (1 GPU, k = 1) takes no slot
        assert spread.slots(1, alone=False) == ([spread.seat] if siblings else [])
        # A timed run sits alone: it holds every slot of its GPU, so its siblings there finish first.
        alone = spread.placement(1, alone=True)
        assert alone.gpu_env == {"CUDA_VISIBLE_DEVICES": spread.seat.device} and alone.shared_by == 1
        assert {s.device for s in spread.slots(1, alone=True)} == (
            {spread.seat.device} if siblings else set()
        )
        assert len(spread.slots(1, alone=True)) == (k if siblings else 0)
    # A setup of several GPUs is not narrowed and holds every slot of the host.
    several = spreads[0].placement(2, alone=False)
    assert several.gpu_env == {} and several.devices == ",".join(devices)
    assert len(spreads[0].slots(2, alone=False)) == (workers if workers > 1 else 0)


def test_more_gpus_than_workers_and_uneven_counts() -> None:
    assert [(s.device, s.slot, s.shared_by) for s in (seat(i, 3, ["0", "1"]) for i in range(3))] == [
        ("0", 0, 2),
        ("1", 0, 1),
        ("0", 1, 2),
    ]
    assert seat(0, 1, [str(i) for i in range(8)]).device == "0"
    cpu = Spread(1, 2, (), None)
    assert cpu.placement(1, alone=False) == Placement(devices="cpu", shared_by=2)
    assert cpu.placement(1, alone=False).gpu_env == {}  # nothing to narrow on a CPU host
    assert Spread(1, 2, (), None, mps_pipe="/p").placement(1, alone=False).gpu_env == {}  # nor MPS for a CPU
    # Workers sharing a CPU host split its cores; a GPU host's and a lone worker's runs keep torch's choice.
    assert [Spread(0, k, (), None).cpu_threads(cores) for k, cores in ((2, 2), (2, 16), (3, 2), (3, 16))] == [
        1,
        8,
        1,
        5,
    ]
    assert Spread(0, 3, ("0",), "CUDA_VISIBLE_DEVICES").cpu_threads(16) is None
    assert Spread(0, 1, (), None).cpu_threads(16) is None
    # One process (no xdist) has no siblings: no slot to take, alone or not.
    assert Spread(0, 1, ("0",), "CUDA_VISIBLE_DEVICES").slots(1, alone=True) == []


def test_a_run_alone_waits_for_the_slot_its_sibling_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    monkeypatch.setenv("LORABENCH_LOCK_DIR", str(tmp_path))
    first = Spread(0, 2, ("0",), "CUDA_VISIBLE_DEVICES")
    # The sibling worker (another process, as xdist's are) takes its slots without waiting (timeout 0).
    sibling = (
        "import sys; from harness.locks import LockBusy; from harness.suite import placement as p\n"
        "spread = p.Spread(1, 2, ('0',), 'CUDA_VISIBLE_DEVICES')\n"
        "try:\n"
        "    with p.seated(spread.slots(1, alone=sys.argv[1] == 'alone'), timeout_s=0): print('seated')\n"
        "except LockBusy: print('waits')\n"
    )

    def sibling_run(how: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", sibling, how], capture_output=True, text=True, check=True
        ).stdout

    with seated(first.slots(1, alone=False)):
        assert sibling_run("shared") == "seated\n"  # two shared runs sit side by side
        assert sibling_run("alone") == "waits\n"  # a timed run waits until the first run leaves its slot
    assert sibling_run("alone") == "seated\n"


def test_bench_n_2_runs_two_seeds_in_two_workers_and_both_records_say_so(
    pytester: pytest.Pytester, bench_dir, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from harness.results import load_record

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", str(repo))  # the child imports this worktree's harness
    monkeypatch.setenv("LORABENCH_LOCK_DIR", str(pytester.path / "locks"))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the workers choose it (tests/conftest.py sets it)
    bench_dir(min_gain=-100.0)  # the claim holds: the test is about where the runs went
    result = pytester.run(
        sys.executable,
        "-m",
        "harness.cli",
        "bench",
        "--results",
        "results",
        "--no-report",
        "--",
        "test_claims.py",
        "--lorabench-seeds=3407,42",
        "--lorabench-stack=teststack",
        "--lorabench-progress=off",
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "-v",
        timeout=600,
    )
    out = result.stdout.str()
    # CI shows a failure's last lines only: the inner suite's own failure lines come first, then its end.
    said = [line for line in out.splitlines() if re.search(r"Error|FAILED|failed|blocked|refused", line)]
    assert result.ret == 0, "\n".join(said[-40:]) + "\n…\n" + out[-2500:] + result.stderr.str()[-1500:]
    # One case a worker (xdist hands two cases to two workers round robin), each trains its own seed.
    result.stdout.fnmatch_lines_random(["[[]gw0[]]*PASSED*gain/seed*", "[[]gw1[]]*PASSED*gain/seed*"])
    result.stdout.fnmatch_lines_random(
        ["trained exp_t/tiny seed 3407: ok → *", "trained exp_t/tiny seed 42: ok → *"]
    )
    records = [load_record(path) for path in sorted((pytester.path / "results").rglob("seed-*.json"))]
    assert sorted(r.seed for r in records) == [42, 3407]
    for record in records:
        assert (
            record.status == "ok" and record.setup.recipe.seed == record.seed and record.trained is not None
        )
        # Both workers sit on the CPU: the record names the device and how many shared it.
        assert record.provenance.placement is not None
        assert record.provenance.placement.model_dump() == {"devices": "cpu", "shared_by": 2}
        # and each trainer computed on its share of the cores
        assert (record.provenance.environment or {}).get("OMP_NUM_THREADS") == str(
            max(1, usable_cores() // 2)
        )
    assert len({r.run_id for r in records}) == 2 and len({r.fingerprint for r in records}) == 2


def test_runs_share_a_gpu_only_where_an_earlier_run_says_they_fit() -> None:
    from harness.suite.placement import fits_beside

    h200 = 143771 * 2**20  # the recorded H200's memory.total
    exp_a_peak = int(2.09 * 2**30)  # Exp A's published H200 records: peak VRAM 2.09 GiB
    assert fits_beside(exp_a_peak, h200, 3)
    assert not fits_beside(108 * 2**30, h200, 2)  # 4B packed 8 × 2048 with the defaults: 108 GiB
    assert fits_beside(108 * 2**30, h200, 1)
    assert not fits_beside(None, h200, 3) and not fits_beside(exp_a_peak, None, 3)  # not known: alone


def test_a_host_with_no_run_of_its_own_shares_by_the_stack_s_runs_on_other_gpus(
    shared_sample: Path, tmp_path: Path
) -> None:
    """A run's peak memory is its setup's and stack's, not its card's: Exp A's published H200 records tell a
    fresh H100 that three seeds fit beside each other (before, it seated every seed alone: 62-75 s a suite),
    measured against this host's memory; this host's own run, where there is one, decides."""
    import shutil

    from harness.config import load_setup
    from harness.results import load_record, record_dir, write_record
    from harness.suite.runner import SuiteRunner, SuiteSettings

    repo = Path(__file__).resolve().parents[2]
    published = tmp_path / "published"
    mine = record_dir(published, "h200-image", "nvidia-h200", "exp_a", "smollm2-135m-lora")
    shutil.copytree(
        record_dir(repo / "reports/results", "h200-image", "nvidia-h200", "exp_a", "smollm2-135m-lora"), mine
    )
    setup = load_setup(
        repo / "benchmarks/setups/exp_a.toml", [f"data.source={shared_sample}", "recipe.seed=42"]
    )

    said: list[str] = []

    def fits(
        gib: int,
        stack: str = "h200-image",
        results: Path = tmp_path / "results",
        before: tuple[int, ...] = (),
    ) -> bool:
        """`before`: the memory (GiB) of cards listed ahead of the run's own, which is the last one."""
        runner = SuiteRunner(
            SuiteSettings(stack=stack, seeds=(42,), results_dir=results, published_dir=published)
        )
        cards = (*before, gib)
        runner.host_facts = {
            "id": "nvidia-h100-80gb-hbm3",
            "kind": "nvidia-h100-80gb-hbm3",
            "gpus": [{"vram_bytes": card * 2**30} for card in cards],
        }
        devices = tuple(str(i) for i in range(len(cards)))
        worker = len(cards) - 1  # xdist hands workers to cards round robin: this one sits on the last card
        runner.spread = Spread(worker, CUDA_WORKERS_PER_GPU * len(cards), devices, "CUDA_VISIBLE_DEVICES")
        shares, placed = runner.fits_shared(setup)
        said.append(placed)
        return shares

    # 3 × 2.09 GiB (the H200's largest peak) within 80 % of the card: an H100 and an 8 GiB card, not 7 GiB.
    assert fits(80) and fits(8) and not fits(7)
    # The suite's line for the run says where it sits and what told it.
    assert said[0] == "on GPU 0 beside 2 other run(s): a peak of 2.09 GiB on nvidia-h200"
    assert (
        said[2] == "alone on GPU 0: 3 runs of a peak of 2.09 GiB on nvidia-h200 would not fit in its memory"
    )
    assert not fits(0) and said[-1] == "alone on GPU 0: its memory was not read"
    assert not fits(80, stack="rocm7.2-hf5.5")  # no run of this stack anywhere: alone
    assert said[-1] == "alone on GPU 0: no run of this setup on stack rocm7.2-hf5.5 tells its peak VRAM"
    # A host of unlike cards: the run's own card's memory decides, not the first card's.
    assert fits(80, before=(7,)) and said[-1].startswith("on GPU 1 beside 2 other run(s)")
    assert not fits(7, before=(80,))
    # This host's own run peaked at 30 GiB: three do not fit in 80 GiB, whatever the H200 says.
    own = load_record(next(mine.glob("seed-3407.json")))
    results = tmp_path / "results"
    heavy = own.model_copy(
        update={
            "host": "nvidia-h100-80gb-hbm3",
            "memory": own.memory.model_copy(update={"peak_vram_bytes": 30 * 2**30}),
        }
    )
    write_record(results, heavy)
    assert not fits(80, results=results)
    assert "a peak of 30.00 GiB on this host" in said[-1]


@pytest.mark.parametrize("memory_cap", [None, "8g", "lots"])
def test_an_xdist_worker_starts_its_warm_trainer_with_itself(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, memory_cap: str | None
) -> None:
    """Its imports then overlap the worker's start; under a memory cap runs are spawned, so none starts (nor
    under one that does not read: the runs name it)."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    for name in ("LORABENCH_DATA", "LORABENCH_STACK"):  # CI's data path is relative to its checkout
        monkeypatch.delenv(name, raising=False)
    if memory_cap:
        monkeypatch.setenv("LORABENCH_MEM_CAP", memory_cap)
    pytester.makeconftest('pytest_plugins = ["harness.suite.plugin"]')
    pytester.makepyfile(
        test_worker="""
        from harness.run import launch, warm

        def test_the_server_of_this_worker():
            servers = [server.key for server in warm._servers]
            assert servers == ([] if CAPPED else [warm.env_key(launch.trainer_env(1))])
        """.replace("CAPPED", str(bool(memory_cap)))
    )
    result = pytester.runpytest_subprocess("-n", "1", "-p", "no:cacheprovider", "--lorabench-stack=teststack")
    result.assert_outcomes(passed=1)


def test_with_bench_s_warm_pool_the_suite_s_own_processes_are_bench_s_tree(tmp_path: Path) -> None:
    """A timed run counts its siblings' load as the suite's own (harness.run.plan.Placement.sibling_pids):
    the xdist controller's tree, or bench's where its pool's servers fork the trainers (bench's children)."""
    import os
    from dataclasses import replace

    import psutil

    from harness.suite.runner import SuiteRunner, SuiteSettings

    settings = SuiteSettings(stack="s", seeds=(3407,), results_dir=tmp_path)
    assert SuiteRunner(settings)._siblings_root() == os.getppid()
    pooled = SuiteRunner(replace(settings, warm_pool=tmp_path / "warm"))
    assert pooled._siblings_root() == psutil.Process(os.getppid()).ppid()
