"""A run's work folder, `<results>/.work/<run_id>/`: what the parent and the trainer child exchange
(job, events, outcome, adapter, predictions) until the record is written, then removed.

`run.json` says who owns it (the parent's identity, see `harness.run.lifeline`) and holds the record's
fields known at the start; the trainer adds `trainer.json` with its own identity. A run that ended
leaves its outcome here before its record is written (`harness.run.outcome` names the files). When no
record follows (the parent SIGKILLed or OOM-killed, a disk full, a lock that could not be taken), the
next run started in the same results folder finds the folder, proves both processes dead, writes the
record the parent could not — as the run ended when it had ended (its status, metrics, predictions
and adapter), else `killed` with every field already computed and the steps the journal kept — and
removes the folder. A folder it cannot prove dead (its owner alive, or in another container) is left
alone; one it cannot read (another version's) is set aside under a name that says so, never an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness import atomic
from harness.errors import UserError, describe_os_error
from harness.guard import GuardRecord
from harness.results import RecordHeader
from harness.run.landing import land_run
from harness.run.lifeline import identity, is_alive
from harness.run.outcome import (
    Outcome,
    read_ended,
    read_outcome,
    read_partial,
    read_unwritten_mark,
    reserve_space,
    train_progress,
)

WORK = ".work"
RUN_FILE = "run.json"
TRAINER_FILE = "trainer.json"


def work_root(results_dir: Path) -> Path:
    return results_dir / WORK


def create_work_dir(results_dir: Path, header: RecordHeader) -> Path:
    """The folder for one run, owned by this process, holding the record's header (`base` in `run.json`)."""
    work_dir = work_root(results_dir) / header.run_id
    work_dir.mkdir(parents=True)  # run ids are unique: an existing folder is someone else's
    atomic.write_json(work_dir / RUN_FILE, {"owner": identity(), "base": header.model_dump(mode="json")})
    reserve_space(work_dir)
    return work_dir


def remove_work_dir(work_dir: Path) -> None:
    """The folder, and `.work/` itself once empty: a results folder is left holding results only."""
    shutil.rmtree(work_dir, ignore_errors=True)
    with contextlib.suppress(OSError):
        work_dir.parent.rmdir()


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


@dataclass(frozen=True)
class Swept:
    """What a sweep did with one stale work folder: `record` written (None: set aside), and why."""

    folder: str
    record: Path | None
    note: str

    def __str__(self) -> str:
        return f"{self.note}: {self.record}" if self.record else self.note


def sweep_stale_runs(results_dir: Path) -> list[Swept]:
    """Record and remove every work folder whose parent and trainer are provably dead."""
    root = work_root(results_dir)
    if not root.is_dir():
        return []
    swept = []
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
            done = recover_record(results_dir, claimed)
        except UserError as exc:  # its record's lock is busy or cannot be taken: a later sweep takes it
            os.rename(claimed, folder)
            print(f"lorabench: left the stale run {folder.name} for a later run: {exc}", file=sys.stderr)
            continue
        except OSError as exc:
            os.rename(claimed, folder)
            print(
                f"lorabench: left the stale run {folder.name} for a later run: {describe_os_error(exc)}",
                file=sys.stderr,
            )
            continue
        except (ValidationError, ValueError, KeyError, TypeError) as exc:
            # Another version's folder, or one cut short: kept for a person to look at, never an error.
            aside = root / f".unrecorded-{folder.name}"
            os.rename(claimed, aside)
            swept.append(
                Swept(
                    folder.name,
                    None,
                    f"a stale run's work folder could not be read as this version's "
                    f"({_first_line(exc)}); set aside as {aside}, not recorded",
                )
            )
            continue
        if done is not None:
            swept.append(done)
        remove_work_dir(claimed)
    return swept


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160] if text else ''}"


def _known_header(base: dict[str, Any]) -> tuple[RecordHeader, list[str]]:
    """The record's header from `run.json`, and the fields in it this version does not know.

    Fields another version wrote and this one does not know are left out (and said), not an error."""
    header = RecordHeader.model_validate({k: v for k, v in base.items() if k in RecordHeader.model_fields})
    return header, sorted(set(base) - set(RecordHeader.model_fields))


def _recovered_outcome(
    work_dir: Path, pid: str, name: str, found: str
) -> tuple[Outcome, GuardRecord, str, str]:
    """The outcome to record, the guard's verdict, the note to add to its reason and what the sweep
    says: from the parent's ended outcome, else the trainer's final one, else the full-disk mark,
    else `killed` with what the trainer had kept."""
    ended = read_ended(work_dir) if (work_dir / "ended.json").is_file() else None
    guard = GuardRecord()  # what the guard said is known only from the parent's ended outcome
    if ended is not None:
        outcome, guard, unwritten = ended
        if unwritten is None and (mark := read_unwritten_mark(work_dir)) is not None:
            unwritten = describe_os_error(mark[1])
        why = (
            f"its record could not be written then: {unwritten}"
            if unwritten
            else f"its parent (pid {pid}) died before writing it"
        )
        note = f"recorded by a later run at {found}; {why}"
        said = "a run that ended without its record; recorded it as it ended"
    elif (final := _readable(read_outcome, work_dir)) is not None:
        outcome = final
        note = f"recorded by a later run at {found}: the trainer had finished, its parent (pid {pid}) died before writing the record"
        said = "a run whose parent died after its trainer finished; recorded it as it ended"
    elif (mark := read_unwritten_mark(work_dir)) is not None:
        # The disk was too full for any outcome file: the status and the cause survive in a name.
        outcome = read_partial(work_dir) or Outcome()
        outcome.status, outcome.reason = (
            mark[0],
            (
                f"the run ended ({mark[0]}) with its disk full: {describe_os_error(mark[1])}; neither its outcome nor "
                f"its record could be written then; recorded by a later run at {found} with what it had kept"
            ),
        )
        said = "a run that ended on a full disk; recorded it with its cause"
        note = ""
    else:
        outcome = read_partial(work_dir) or Outcome()
        outcome.status, outcome.reason = (
            "killed",
            (
                f"the run's parent process (pid {pid}) died without writing its record (SIGKILL, the OOM killer or a "
                f"crash); recovered from {name} by a later run at {found}"
            ),
        )
        said = "a run whose parent died left no record; recorded it as killed"
        note = ""
    return outcome, guard, note, said


def recover_record(results_dir: Path, work_dir: Path) -> Swept | None:
    """The record of a run that ended without one, from its work folder; None when the parent had
    written its record after all (it died while removing the folder).

    What the folder holds decides the status: the parent's ended outcome (the run ended; only its
    record could not be written), else the trainer's final outcome (the parent died after the trainer
    finished), else `killed`, with every field the trainer had computed and the steps it journaled."""
    run = json.loads((work_dir / RUN_FILE).read_text(encoding="utf-8"))
    owner = run["owner"]
    header, unknown = _known_header(run["base"])
    name = work_dir.name.split(".swept-")[0].lstrip(".")
    found = datetime.now(UTC).isoformat(timespec="seconds")
    pid = owner.split("/")[2] if owner.count("/") == 3 else "?"
    outcome, guard, note, said = _recovered_outcome(work_dir, pid, name, found)
    if outcome.status == "killed" and outcome.train is None:
        outcome.train = train_progress(work_dir)
    if unknown:
        note = f"{note}; fields of another version left out: {', '.join(unknown)}".lstrip("; ")
    if note:
        outcome.reason = f"{outcome.reason} ({note})" if outcome.reason else note
    # Never wait: the suite holds a record's lock for a whole run, and two sweepers must not wait on each other.
    landed = land_run(results_dir, header, outcome, guard, work_dir, timeout_s=0, late=True)
    return Swept(name, landed[1], said) if landed else None


def _readable(read: Any, work_dir: Path) -> Outcome | None:
    with contextlib.suppress(OSError, ValueError):
        return read(work_dir)
    return None
