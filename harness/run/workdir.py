"""A run's work folder, `<results>/.work/<run_id>/`: what the parent and the trainer child exchange
(job, events, outcome, adapter, predictions) until the record is written, then removed.

`run.json` says who owns it (the parent's identity, see `harness.run.lifeline`) and holds the record's
fields known at the start; the trainer adds `trainer.json` with its own identity. When a parent dies
without writing its record (SIGKILL, the OOM killer, a power cut), the next run started in the same
results folder finds the folder, proves both processes dead, writes the record the parent could not
(status killed, with the training progress the events journal kept), and removes the folder. A folder
it cannot prove dead (its owner alive, or in another container) is left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import atomic
from harness.locks import LockBusy, exclusive_lock
from harness.results import RunRecord, load_record, previous_path, record_lock_path, record_path, write_record
from harness.run.lifeline import identity, is_alive
from harness.run.outcome import read_outcome, train_progress

WORK = ".work"
RUN_FILE = "run.json"
TRAINER_FILE = "trainer.json"


def work_root(results_dir: Path) -> Path:
    return results_dir / WORK


def create_work_dir(results_dir: Path, run_id: str, base: dict[str, Any]) -> Path:
    """The folder for one run, owned by this process; `base` is the record's fields known at the start."""
    work_dir = work_root(results_dir) / run_id
    work_dir.mkdir(parents=True)  # run ids are unique: an existing folder is someone else's
    atomic.write_json(work_dir / RUN_FILE, {"owner": identity(), "base": base})
    return work_dir


def mark_trainer(work_dir: Path) -> None:
    """Called by the trainer child at its start, so a sweep can tell whether it still runs."""
    atomic.write_json(work_dir / TRAINER_FILE, {"trainer": identity()})


def _owners(work_dir: Path) -> list[str] | None:
    """The identities that must all be dead before the folder may go; None when it is not a run's."""
    try:
        run = json.loads((work_dir / RUN_FILE).read_text(encoding="utf-8"))
        owners = [run["owner"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        owners.append(json.loads((work_dir / TRAINER_FILE).read_text(encoding="utf-8"))["trainer"])
    return owners


def sweep_stale_runs(results_dir: Path) -> list[Path]:
    """Recover and remove every work folder whose parent and trainer are provably dead; returns the
    records written for them."""
    root = work_root(results_dir)
    if not root.is_dir():
        return []
    recovered = []
    for folder in sorted(root.iterdir()):
        owners = _owners(folder) if folder.is_dir() and not folder.name.startswith(".") else None
        if owners is None or any(is_alive(who) for who in owners):
            continue
        # Claim it by renaming: of two runs sweeping at once, one wins, the other skips it.
        claimed = root / f".{folder.name}.swept-{os.getpid()}"
        try:
            os.rename(folder, claimed)
        except OSError:
            continue
        try:
            path = recover_record(results_dir, claimed)
        except LockBusy:
            os.rename(claimed, folder)  # its record's name is busy: a later sweep takes it
            continue
        if path is not None:
            recovered.append(path)
        shutil.rmtree(claimed, ignore_errors=True)
    return recovered


def recover_record(results_dir: Path, work_dir: Path) -> Path | None:
    """The killed record of a run whose parent died, from its work folder; None when the parent had
    written its record after all (it died while removing the folder)."""
    run = json.loads((work_dir / RUN_FILE).read_text(encoding="utf-8"))
    base, owner = run["base"], run["owner"]
    outcome = None
    with contextlib.suppress(OSError, ValueError):
        outcome = read_outcome(work_dir)
    train = outcome.train if outcome and outcome.train else train_progress(work_dir)
    pid = owner.split("/")[2] if owner.count("/") == 3 else "?"
    found = datetime.now(UTC).isoformat(timespec="seconds")
    record = RunRecord(
        **base, status="killed", train=train,
        data=outcome.data if outcome else None, model=outcome.model if outcome else None,
        baseline=outcome.baseline if outcome else None, checks=outcome.checks if outcome else {},
        reason=f"the run's parent process (pid {pid}) died without writing its record (SIGKILL, the OOM killer "
        f"or a crash); recovered from {work_dir.name.split('.swept-')[0].lstrip('.')} by a later run at {found}",
    )  # fmt: skip
    path = record_path(results_dir, record)
    # Never wait: the suite holds a record's lock for a whole run, and two sweepers must not wait on each other.
    with exclusive_lock(record_lock_path(path), timeout_s=0, what="record lock"):
        current = _current(path)
        if current is not None and current.run_id == record.run_id:
            return None
        if current is not None and current.created > record.created:
            # A newer record holds the name: this one is kept beside it as a previous record.
            kept = previous_path(path, record.created)
            atomic.write_text(kept, record.model_dump_json(indent=2) + "\n")
            return kept
        return write_record(results_dir, record)


def _current(path: Path) -> RunRecord | None:
    try:
        return load_record(path) if path.is_file() else None
    except Exception:  # an unreadable record is replaced like any other (write_record keeps it as prev-)
        return None
