"""Design step 10: a run's record, written from its outcome, with its files moved beside it.

Every run's record is written by `land`, and by nothing else (tests/run/test_landing.py holds the
harness to that): the parent's own run as soon as it has ended, the lead node's record of a run on
several hosts, a node's record when the lead is gone, and, the same way, a record written late by the
next run's sweep (`harness.run.workdir`) when it could not be written then (a full disk, a lock folder
that is a file, a signal while waiting for the record's lock, a parent that died). So every record is
written under its lock, atomically, and a record written late is the record that would have been
written on time: same status, metrics, predictions and adapter, plus a note of why it came late.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from harness.guard import GuardRecord
from harness.locks import exclusive_lock
from harness.results import (
    NodeInfo,
    RecordHeader,
    RunRecord,
    beside,
    load_record,
    previous_path,
    record_lock_path,
    write_record,
)
from harness.run.adapter import keep_adapter
from harness.run.outcome import Outcome, write_durable

PRODUCED = {".predictions.jsonl": "predictions.jsonl", ".traceback.txt": "traceback.txt"}


def land(
    results_dir: Path,
    header: RecordHeader,
    compose: Callable[[Path], RunRecord],
    work_dir: Path | None = None,
    *,
    timeout_s: float | None = None,
    late: bool = False,
) -> tuple[RunRecord, Path] | None:
    """Write the record `compose(path)` makes, then move the run's files (`work_dir`: predictions,
    traceback, adapter) beside it, under the record's lock: a second run of the same setup and seed
    lands its record before or after, never in between. `late` (a sweep): a record of this run already
    there means it was landed after all (None); a newer run's record keeps the name and this one is kept
    beside it as a previous record. Raises OSError or the lock's errors; the work folder is the caller's."""
    target = header.record_path(results_dir)
    with exclusive_lock(record_lock_path(target), timeout_s=timeout_s, what="record lock"):
        current = _current(target) if late else None
        if current is not None and current.run_id == header.run_id:
            return None
        newer_holds_name = current is not None and current.created > header.created
        path = previous_path(target, header.created) if newer_holds_name else target
        record = compose(path)
        path = write_record(results_dir, record, path=path if newer_holds_name else None)
        if work_dir is not None:
            for suffix, name in PRODUCED.items():
                if (work_dir / name).is_file():
                    os.replace(work_dir / name, beside(path, suffix))
            keep_adapter(work_dir / "adapter", path)
    return record, path


def land_run(
    results_dir: Path,
    header: RecordHeader,
    outcome: Outcome,
    guard: GuardRecord,
    work_dir: Path,
    *,
    timeout_s: float | None = None,
    late: bool = False,
    nodes: list[NodeInfo] | None = None,
) -> tuple[RunRecord, Path] | None:
    """The record of a run that has an outcome (`land`); its traceback, durable first, goes beside it."""
    if outcome.traceback:
        write_durable(work_dir / PRODUCED[".traceback.txt"], outcome.traceback)

    def compose(path: Path) -> RunRecord:
        return compose_record(header, outcome, guard, work_dir, path, nodes=nodes)

    return land(results_dir, header, compose, work_dir, timeout_s=timeout_s, late=late)


def compose_record(
    header: RecordHeader,
    outcome: Outcome,
    guard: GuardRecord,
    work_dir: Path,
    path: Path,
    *,
    nodes: list[NodeInfo] | None = None,
) -> RunRecord:
    reason = outcome.reason
    if outcome.traceback:
        reason = f"{reason} (traceback: {beside(path, '.traceback.txt')})"
    predictions = work_dir / PRODUCED[".predictions.jsonl"]
    return RunRecord.from_header(
        header,
        status=outcome.status,
        reason=reason,
        data=outcome.data,
        model=outcome.model,
        baseline=outcome.baseline,
        trained=outcome.trained,
        train=outcome.train,
        memory=outcome.memory,
        timings=outcome.timings,
        checks=outcome.checks,
        guard=guard.to_record(),
        predictions_file=beside(path, ".predictions.jsonl").name if predictions.is_file() else None,
        seeding=outcome.seeding,
        nodes=nodes,
        ranks=outcome.ranks,
    )


def _current(path: Path) -> RunRecord | None:
    try:
        return load_record(path) if path.is_file() else None
    except Exception:  # an unreadable record is replaced like any other (write_record keeps it as prev-)
        return None
