"""The run plan: everything the trainer child is told, decided once in the parent (issue #37).

The parent builds it after the provenance snapshot (the fingerprint and run id are computed there, once)
and writes it as `plan.json` in the run's work folder; the child reads that file and nothing else of the
parent's: no `LORABENCH_*` variable carries state across the process boundary. Where a value changes the
math it is a setup field (in the fingerprint and the record); the plan adds only where things go.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness import atomic
from harness.config import SetupConfig
from harness.gpu.mps import PIPE_ENV as MPS_PIPE_ENV
from harness.origin import PlacementFacts
from harness.results import record_dir

PLAN_FILE = "plan.json"


class Placement(BaseModel):
    """Where a run goes, decided by whoever starts it (the suite, per xdist worker; harness/suite/placement.py):
    the devices its trainer sees and how many runs were placed on them at once. `lorabench run` has none: the
    trainer sees what the command sees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    devices: str  # "cpu", or the GPUs as the visibility variable names them ("1", "0,1", "GPU-…")
    variable: str | None = None  # CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES; None: not narrowed
    shared_by: int = 1  # runs placed on these devices at once (the suite's workers per device)
    # The CUDA MPS server the run's trainer goes through (its pipe folder; harness/gpu/mps.py): a shared run
    # of a suite that has one. None: a plain CUDA process.
    mps_pipe: str | None = None
    # The process whose tree holds the run's siblings (the suite's xdist controller and its workers): their
    # GPU processes and CPU load are the suite's own, not foreign to the quiet-machine guard.
    siblings_root: int | None = None

    @property
    def gpu_env(self) -> dict[str, str]:
        """The trainer's GPU variables: the visibility variable narrowed to its devices, the MPS pipe."""
        env = {self.variable: self.devices} if self.variable else {}
        return env | ({MPS_PIPE_ENV: self.mps_pipe} if self.mps_pipe else {})

    @property
    def facts(self) -> PlacementFacts:
        mps = {"mps": True} if self.mps_pipe else {}
        return PlacementFacts(devices=self.devices, shared_by=self.shared_by, **mps)

    def sibling_pids(self) -> set[int]:
        """The siblings' process tree now (empty when there is no root or it has ended)."""
        if self.siblings_root is None:
            return set()
        import psutil

        try:
            root = psutil.Process(self.siblings_root)
            return {root.pid, *(child.pid for child in root.children(recursive=True))}
        except psutil.Error:
            return set()


class RunPlan(BaseModel):
    """One run as the child carries it out: the setup, the folder to work in, where its resumable
    checkpoints and its progress lines go (None: not saved, not followed), and the GPUs it may see."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    setup: SetupConfig
    work_dir: Path
    quiet: bool = False
    run_id: str | None = None
    fingerprint: str | None = None
    checkpoints: Path | None = None
    progress_file: Path | None = None
    # The trainer's GPU variables from the run's `Placement` (the suite's xdist worker's GPU, e.g.
    # CUDA_VISIBLE_DEVICES=1, and its MPS pipe); the parent itself never narrows what it sees.
    gpu_env: dict[str, str] = {}
    # A timed run: the trainer waits after its imports for the guard's verdict (harness.run.gate).
    await_guard: bool = False

    def write(self) -> Path:
        return atomic.write_text(self.work_dir / PLAN_FILE, self.model_dump_json())

    @classmethod
    def read(cls, path: Path) -> RunPlan:
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


def checkpoint_folder(results_dir: Path, stack: str, host: str, setup: SetupConfig, fingerprint: str) -> Path:
    """Where one setup × seed keeps its resumable checkpoints: beside the results, outside any work folder
    (a killed run's sweep keeps them), keyed by the fingerprint (never resumed under other settings). The
    same folder for `lorabench run` and `lorabench bench`: either resumes what the other left."""
    where = record_dir(results_dir / ".checkpoints", stack, host, setup.experiment, setup.name)
    return where / f"s{setup.recipe.seed}-{fingerprint}"
