"""The run plan carries the run's devices (harness/run/plan.py Placement): the trainer's visibility variable
is set from the plan alone, the plan crosses the process boundary as plan.json, and a placement's siblings
are the process tree the guard does not count as foreign."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from harness.config import SetupConfig
from harness.run.launch import trainer_env
from harness.run.plan import Placement, RunPlan


def test_the_plan_carries_the_devices_to_the_trainer_and_nothing_else_does(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    placement = Placement(devices="1", variable="CUDA_VISIBLE_DEVICES", shared_by=3)
    setup = SetupConfig(name="t", experiment="exp_t", model={"source": "m"})
    plan = RunPlan(setup=setup, work_dir=tmp_path, gpu_env=placement.gpu_env)
    read = RunPlan.read(plan.write())
    assert read.gpu_env == {"CUDA_VISIBLE_DEVICES": "1"}
    assert trainer_env(read.setup.gpus, None, read.gpu_env)["CUDA_VISIBLE_DEVICES"] == "1"
    assert "CUDA_VISIBLE_DEVICES" not in os.environ  # the parent's own environment is left as it was
    env = trainer_env(read.setup.gpus, None, read.gpu_env)
    assert not [k for k in env if k.startswith("LORABENCH_") and ("GPU" in k or "DEVICE" in k)]
    # Without a placement the trainer sees the GPUs its setup asks for, as before.
    assert trainer_env(setup.gpus, None, None)["CUDA_VISIBLE_DEVICES"] == "0"
    assert placement.facts.model_dump() == {"devices": "1", "shared_by": 3}
    assert Placement(devices="cpu", shared_by=2).gpu_env == {}
    # A shared run of a suite with an MPS server is told its pipe, and its record says so.
    shared = placement.model_copy(update={"mps_pipe": "/tmp/lorabench-mps-x/pipe"})
    env = trainer_env(
        setup.gpus, None, RunPlan(setup=setup, work_dir=tmp_path, gpu_env=shared.gpu_env).gpu_env
    )
    assert (
        env["CUDA_MPS_PIPE_DIRECTORY"] == "/tmp/lorabench-mps-x/pipe" and env["CUDA_VISIBLE_DEVICES"] == "1"
    )
    assert shared.facts.model_dump() == {"devices": "1", "shared_by": 3, "mps": True}


def test_a_placements_siblings_are_its_roots_process_tree() -> None:
    # A root with a child of its own, as xdist's controller has workers and they have trainers.
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    root = subprocess.Popen([sys.executable, "-c", code])
    try:
        placement = Placement(devices="0", variable="CUDA_VISIBLE_DEVICES", siblings_root=root.pid)
        for _ in range(100):  # until the grandchild has started
            if len(placement.sibling_pids()) == 2:
                break
            time.sleep(0.1)
        siblings = placement.sibling_pids()
        assert root.pid in siblings and len(siblings) == 2 and os.getpid() not in siblings
    finally:
        for pid in Placement(devices="0", siblings_root=root.pid).sibling_pids() - {root.pid}:
            os.kill(pid, 9)
        root.kill()
        root.wait()
    assert Placement(devices="0", siblings_root=root.pid).sibling_pids() == set()  # ended: nothing to spare
    assert Placement(devices="0").sibling_pids() == set()
