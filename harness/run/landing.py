"""Design step 10: a run's record, written from its outcome, with its files moved beside it.

The parent lands its own run here as soon as it has ended; the next run's sweep
(`harness.run.workdir`) lands, the same way, a run whose record could not be written then (a full
disk, a lock folder that is a file, a signal while waiting for the record's lock, a parent that died).
Both go through `land_run`, so a record written late is the record that would have been written on
time: same status, metrics, predictions and adapter, plus a note of why it came late.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness import atomic
from harness.locks import exclusive_lock
from harness.results import (
    RunRecord,
    beside,
    load_record,
    previous_path,
    record_lock_path,
    seed_record_path,
    write_record,
)
from harness.run.adapter import keep_adapter
from harness.run.outcome import Outcome, write_durable

PRODUCED = {".predictions.jsonl": "predictions.jsonl", ".traceback.txt": "traceback.txt"}


def target_path(results_dir: Path, base: dict[str, Any]) -> Path:
    return seed_record_path(results_dir, base["stack"], base["host"], base["experiment"], base["setup_name"], base["seed"])


def land_run(
    results_dir: Path, base: dict[str, Any], outcome: Outcome, guard: dict[str, Any], work_dir: Path,
    *, timeout_s: float | None = None, late: bool = False,
) -> tuple[RunRecord, Path] | None:  # fmt: skip
    """Write the record, then move the run's files beside it, under the record's lock (a second run of
    the same setup and seed lands its record before or after, never in between). `late` (a sweep): a
    record of this run already there means it was landed after all (None); a newer run's record keeps
    the name and this one is kept beside it as a previous record. Raises OSError or the lock's errors;
    the work folder is the caller's to remove."""
    target = target_path(results_dir, base)
    if outcome.traceback:
        write_durable(work_dir / PRODUCED[".traceback.txt"], outcome.traceback)
    with exclusive_lock(record_lock_path(target), timeout_s=timeout_s, what="record lock"):
        current = _current(target) if late else None
        if current is not None and current.run_id == base["run_id"]:
            return None
        newer_holds_name = current is not None and current.created > base["created"]
        path = previous_path(target, base["created"]) if newer_holds_name else target
        record = compose_record(base, outcome, guard, work_dir, path)
        if newer_holds_name:
            atomic.write_text(path, record.model_dump_json(indent=2) + "\n")
        else:
            path = write_record(results_dir, record)
        for suffix, name in PRODUCED.items():
            if (work_dir / name).is_file():
                os.replace(work_dir / name, beside(path, suffix))
        keep_adapter(work_dir / "adapter", path)
    return record, path


def compose_record(base: dict[str, Any], outcome: Outcome, guard: dict[str, Any], work_dir: Path, path: Path) -> RunRecord:
    reason = outcome.reason
    if outcome.traceback:
        reason = f"{reason} (traceback: {beside(path, '.traceback.txt')})"
    predictions = work_dir / PRODUCED[".predictions.jsonl"]
    return RunRecord(
        **base, status=outcome.status, reason=reason, data=outcome.data, model=outcome.model,
        baseline=outcome.baseline, trained=outcome.trained, train=outcome.train, memory=outcome.memory,
        timings=outcome.timings, checks=outcome.checks, guard=guard,
        predictions_file=beside(path, ".predictions.jsonl").name if predictions.is_file() else None,
    )  # fmt: skip


def _current(path: Path) -> RunRecord | None:
    try:
        return load_record(path) if path.is_file() else None
    except Exception:  # an unreadable record is replaced like any other (write_record keeps it as prev-)
        return None
