"""How the trainer child starts: one process; torchrun with one process per GPU on this host
(`--standalone`); or torchrun as one node of several, meeting the others through a c10d rendezvous.

Where the nodes meet comes from the environment, the way torchrun takes it (`PET_RDZV_ENDPOINT` and
`PET_RDZV_ID` are torchrun's own variables for `--rdzv-endpoint` and `--rdzv-id`), never from the setup:
the address of a host is not part of what a run is, so it stays out of the fingerprint.

    LORABENCH_RDZV_ENDPOINT=HOST:PORT   the lead node's address, the same on every node (or PET_RDZV_ENDPOINT)
    LORABENCH_RDZV_ID=NAME              optional: the run's rendezvous id (or PET_RDZV_ID); default from the
                                        setup and stack, so the same command on every host agrees
    LORABENCH_RDZV_TIMEOUT=SECONDS      optional: how long a node waits for the others (default 600, torchrun's)

Not covered: torchrun's elastic features (a range of nodes, restarts): a benchmark run has a fixed shape.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness import settings
from harness.config import SetupConfig
from harness.errors import UserError
from harness.models import cache_dir
from harness.results import setup_digest
from harness.run import warm, warm_pool
from harness.run.bytecode import child_bytecode_env
from harness.run.capped import ChildOutcome, run_capped
from harness.run.lifeline import lifeline_env
from harness.run.plan import RunPlan

ENDPOINT_ENVS = (settings.RDZV_ENDPOINT, "PET_RDZV_ENDPOINT")  # torchrun's own name is read too
ID_ENVS = (settings.RDZV_ID, "PET_RDZV_ID")
DEFAULT_PORT = 29400  # torchrun's default for --rdzv-endpoint
DEFAULT_TIMEOUT_S = 600.0  # torchrun's default join_timeout


@dataclass(frozen=True)
class Rendezvous:
    """Where the nodes of one run meet: the c10d store's host and port, and the run's id there."""

    host: str
    port: int
    run_id: str
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def endpoint(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def first_env(names: tuple[settings.Setting[str], str]) -> tuple[str, str] | None:
    ours, torchruns = names
    if value := ours.get():
        return ours.name, value
    if value := os.environ.get(torchruns, "").strip():
        return torchruns, value
    return None


def parse_endpoint(text: str, source: str) -> tuple[str, int]:
    """`host:port`, `host` (port 29400) or `[v6addr]:port`."""
    host, port = text, str(DEFAULT_PORT)
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":") or port
    elif ":" in text:
        host, _, port = text.partition(":")
    if not host or ":" in port or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(
            f"${source}: {text!r} is not HOST:PORT; give the lead node's address, e.g. 10.0.0.5:29400 "
            "([fe80::1]:29400 for IPv6)"
        )
    return host, int(port)


def default_run_id(setup: SetupConfig, stack: str) -> str:
    """The same on every node that runs the same setup (seed included) on the same stack, wherever each
    node keeps its copy of the data (a local file enters by its content, as in the fingerprint)."""
    return f"lorabench-{setup_digest(setup, stack, length=12)}"


def rendezvous_from_env(setup: SetupConfig, stack: str) -> Rendezvous:
    found = first_env(ENDPOINT_ENVS)
    if found is None:
        raise UserError(
            f"nodes: {setup.nodes} nodes meet at a rendezvous endpoint that comes from the environment, and "
            f"${settings.RDZV_ENDPOINT.name} is not set; on every node set {settings.RDZV_ENDPOINT.name}=HOST:PORT, the lead node's "
            "address (the same everywhere), or set nodes = 1"
        )
    host, port = parse_endpoint(found[1], found[0])
    named = first_env(ID_ENVS)
    timeout_s = settings.RDZV_TIMEOUT.value()
    return Rendezvous(host, port, named[1] if named else default_run_id(setup, stack), timeout_s)


def trainer_command(setup: SetupConfig, plan_file: Path, rendezvous: Rendezvous | None = None) -> list[str]:
    child = ["-m", "harness.run.child", str(plan_file)]
    torchrun = [sys.executable, "-m", "torch.distributed.run"]
    if setup.nodes > 1:
        if rendezvous is None:
            raise ValueError("a run on several nodes needs its rendezvous")
        return [
            *torchrun,
            f"--nnodes={setup.nodes}",
            f"--nproc-per-node={setup.gpus}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={rendezvous.endpoint}",
            f"--rdzv-id={rendezvous.run_id}",
            # The lead's lorabench parent hosts the store (harness.run.nodes); the agents only join it, so an
            # agent that ends first cannot take the store, and with it every other node, down.
            f"--rdzv-conf=is_host=false,join_timeout={round(rendezvous.timeout_s)}",
            # A benchmark run is not elastic: a restart would time something else.
            "--max-restarts=0",
            *child,
        ]
    if setup.gpus > 1:
        # One process per GPU; the Trainer sees torchrun's variables and wraps the model in DDP.
        return [*torchrun, "--standalone", f"--nproc_per_node={setup.gpus}", *child]
    return [sys.executable, *child]


def trainer_env(
    gpus: int,
    extra_env: dict[str, str] | None = None,
    gpu_env: dict[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The trainer's environment: this process's (or `base`) and what the trainer needs beside it."""
    env = {
        **(os.environ if base is None else base),
        "PYTHONUNBUFFERED": "1",
        "TOKENIZERS_PARALLELISM": "false",
        **(extra_env or {}),
    }
    env.update(gpu_env or {})  # the plan's GPUs (the suite's worker's) and MPS pipe, for the trainer only
    # Every trainer process (torchrun's ranks too) watches the parent that started the run and ends itself
    # when it is gone (harness.run.lifeline).
    env.update(lifeline_env())
    # The child must import this very harness, also when it is run from a source tree.
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")])
    )
    # Where this Python compiles every import anew (PYTHONDONTWRITEBYTECODE and no bytecode installed), the
    # child caches its bytecode under lorabench's cache: 7.9 s of every Exp A seed on the lent H200.
    env = child_bytecode_env(env, cache_dir())
    if "CUDA_VISIBLE_DEVICES" not in env:
        # Exactly the GPUs the setup asks for: with more visible, Trainer would wrap one process in
        # nn.DataParallel (which SFTTrainer refuses) instead of one process per GPU.
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(gpus))
    return env


def start_trainer(
    plan: RunPlan,
    *,
    cap_bytes: int | None,
    floor_bytes: int | None,
    extra_env: dict[str, str] | None = None,
    rendezvous: Rendezvous | None = None,
) -> ChildOutcome:
    """Run the trainer for `plan` to its end under the memory cap and watchdog (harness.run.capped)."""
    plan_file = plan.write()
    return run_capped(
        trainer_command(plan.setup, plan_file, rendezvous),
        env=trainer_env(plan.setup.gpus, extra_env, plan.gpu_env),
        cwd=None,
        cap_bytes=cap_bytes,
        floor_bytes=floor_bytes,
        warm_job=str(plan_file) if forkable(plan.setup) else None,
    )


def _spawned_only() -> bool:
    """Runs here go under a memory cap (spawned: `run_capped`), or under a cap that does not read (the run
    names that mistake): no warm server for them."""
    try:
        return settings.MEM_CAP.get() is not None
    except UserError:
        return True


def prewarm_trainer(pool: Path | None = None) -> None:
    """This process's warm fork server started now, in the environment of an untimed one-GPU trainer (the
    suite's runs): its imports (6.1-7.1 s of each seed of Exp A's suite on an H200) then overlap the
    worker's own start instead of following it; with `pool` (bench's, started before pytest:
    harness.run.warm_pool) the worker adopts the one started for it instead. A timed run's environment
    (offline) differs: it starts its own. None under a memory cap."""
    if _spawned_only():
        return
    env = trainer_env(1)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not (pool and worker and warm_pool.adopt(pool, worker, env)):
        warm.prewarm(env)


def start_trainer_pool(folder: Path, workers: int, base: Mapping[str, str]) -> warm_pool.WarmPool | None:
    """Bench's warm servers for the suite's xdist workers gw0 … gw{workers-1} (whose environment is `base`,
    plus what pytest tells them), started before pytest; None where they would not be used (no workers, a
    memory cap) or cannot start."""
    if workers < 1 or _spawned_only():
        return None
    try:
        return warm_pool.start_pool(folder, [f"gw{i}" for i in range(workers)], trainer_env(1, base=base))
    except (OSError, ValueError):
        return None


def forkable(setup: SetupConfig) -> bool:
    """One trainer process of the hf backend, which the warm fork server (harness.run.warm) can start:
    torchrun's ranks are its own, and unsloth must be imported before the stack it patches."""
    return setup.nodes == 1 and setup.gpus == 1 and setup.backend == "hf"
