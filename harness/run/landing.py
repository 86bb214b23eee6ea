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
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from harness.guard import GuardRecord
from harness.locks import exclusive_lock
from harness.results import (
    RECORD_READ_LIMIT,
    RUN_ID_TIME,
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
        current = _current(target)
        if late and current is not None and current.run_id == header.run_id:
            return None
        path = _own_path(target, header, current, late=late)
        record = compose(path)
        path = write_record(results_dir, record, path=None if path == target else path)
        if work_dir is not None:
            for suffix, name in PRODUCED.items():
                if (work_dir / name).is_file():
                    os.replace(work_dir / name, beside(path, suffix))
            keep_adapter(work_dir / "adapter", path)
    return record, path


def _own_path(target: Path, header: RecordHeader, current: RunRecord | None, *, late: bool) -> Path:
    """Where this run's record goes: its name, unless the record there must keep it. A newer run's
    record keeps it from a late one. The record of an identical run that ran at the same time as this one
    (same fingerprint, finished, ended after this run started) keeps it too: its run has printed that
    path already, and before issue 39 the later run moved it aside, so both runs printed one path that
    held only the later record. This run's record then goes beside it as a previous record (what
    `report` leaves out), and the run says so. Any other record gives the name up: another setup's, a
    stopped run's, or one this run's own sweep wrote late for a run that had ended before it started
    (the killed run it resumes, a finished run whose record could not be written)."""
    if current is None or current.run_id == header.run_id:
        return target
    if late:
        return previous_path(target, header.created) if current.created > header.created else target
    if not _ran_beside(current, header):
        return target
    path = previous_path(target, header.created)
    print(
        f"lorabench: another run of this setup and seed (run {current.run_id}) wrote {target} while this "
        f"one ran, and printed that path; this run's record is kept beside it as {path.name}",
        file=sys.stderr,
    )
    return path


def _ran_beside(current: RunRecord, header: RecordHeader) -> bool:
    """Whether `current` is a finished identical run that was still running when this run started."""
    if current.status != "ok" or current.fingerprint != header.fingerprint or current.timings.total_s is None:
        return False
    try:
        return _started(current) + current.timings.total_s >= _started(header)
    except ValueError:
        return False


def _started(run: RunRecord | RecordHeader) -> float:
    """When a run started, to the microsecond its run id names (`created` is cut to the second: a re-run
    begun 0.3 s after the run before it ended, in the same second, looked as if the two had overlapped, and
    its record went beside the old one); `created` for a run id of another shape."""
    try:
        stamp = run.run_id.split("Z-", 1)[0]
        return datetime.strptime(stamp, RUN_ID_TIME).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return datetime.fromisoformat(run.created).timestamp()


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
        is_record = path.is_file() and path.stat().st_size <= RECORD_READ_LIMIT
        return load_record(path) if is_record else None
    except Exception:  # an unreadable record is replaced like any other (write_record keeps it as prev-)
        return None
