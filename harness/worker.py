"""The trainer child: data, model, checks, training and evaluation for one run (design steps 3–9).

Runs in its own process (`python -m harness.worker JOB.json`) so a memory cap or watchdog can kill it
without killing the run: the parent then still writes a record. Everything the child learns lands in
its work folder as it goes — `events.jsonl` (phase starts and ends, wall-clock stamps the guard's
sampler uses to find the timed window), `outcome.json` at the end, predictions beside it.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config import SetupConfig
from harness.errors import RunStopped, UserError
from harness.progress import Progress


@dataclass(frozen=True)
class Job:
    setup: SetupConfig
    work_dir: Path
    quiet: bool = False

    def to_json(self) -> str:
        return json.dumps({"setup": self.setup.model_dump(mode="json"), "work_dir": str(self.work_dir), "quiet": self.quiet})

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        return cls(SetupConfig.model_validate(data["setup"]), Path(data["work_dir"]), data["quiet"])


@dataclass
class Outcome:
    """What the child reports; the parent turns it into the record. Filled as phases complete."""

    status: str = "ok"
    reason: str | None = None
    data: dict[str, Any] | None = None
    model: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    trained: dict[str, Any] | None = None
    train: dict[str, Any] | None = None
    memory: dict[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    traceback: str | None = None


class Events:
    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self, phase: str, what: str) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"t": time.time(), "phase": phase, "event": what}) + "\n")


def peak_rss_bytes() -> int:
    # ru_maxrss is KiB on Linux; this process only (the parent is not counted).
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def execute_job(job: Job) -> Outcome:
    """Run steps 3–9; never raises for run failures — they become the outcome's status and reason."""
    if job.setup.backend == "unsloth":
        # Unsloth patches transformers, PEFT and TRL at import: it must come first.
        with contextlib.suppress(ImportError):
            import unsloth  # ruff: ignore[unused-import]
    from harness import recipe

    outcome = Outcome()
    main_process = is_main_process()
    events = Events(job.work_dir / ("events.jsonl" if main_process else f"events-rank{os.environ['RANK']}.jsonl"))
    progress = Progress(quiet=job.quiet or not main_process)
    try:
        recipe.run_phases(job.setup, job.work_dir, outcome, events, progress)
    except UserError as exc:
        outcome.status, outcome.reason = "failed", str(exc)
    except RunStopped as exc:
        outcome.status, outcome.reason = exc.status, exc.reason
    except Exception as exc:
        outcome.status = "failed"
        outcome.reason = f"{type(exc).__name__}: {exc}"
        outcome.traceback = traceback.format_exc()
    outcome.memory = {**(outcome.memory or {}), "peak_rss_bytes": peak_rss_bytes()}
    return outcome


def write_outcome(outcome: Outcome, work_dir: Path) -> None:
    tmp = work_dir / "outcome.json.tmp"
    tmp.write_text(json.dumps(outcome.__dict__, indent=1), encoding="utf-8")
    tmp.replace(work_dir / "outcome.json")


def read_outcome(work_dir: Path) -> Outcome | None:
    path = work_dir / "outcome.json"
    if not path.is_file():
        return None
    return Outcome(**json.loads(path.read_text(encoding="utf-8")))


def is_main_process() -> bool:
    """Rank 0 under torchrun (DDP), or the only process. Only it scores, stamps events and reports."""
    return int(os.environ.get("RANK", "0")) == 0


def bind_local_gpu() -> None:
    """Under torchrun each rank drives the GPU of its local rank; "cuda" then means that one."""
    if "LOCAL_RANK" in os.environ:
        import torch

        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))


def main(argv: list[str]) -> int:
    job = Job.from_json(Path(argv[0]).read_text(encoding="utf-8"))
    bind_local_gpu()
    outcome = execute_job(job)
    if is_main_process():
        write_outcome(outcome, job.work_dir)
    return 0 if outcome.status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
