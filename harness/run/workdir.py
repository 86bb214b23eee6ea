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
Issue 39: a sweeper stopped while recovering (Ctrl-C, SIGKILL) leaves its claim, named by its identity;
the next sweep proves that sweeper dead and takes the claim over. A folder whose owner cannot be read
(an older harness's without `run.json`, a malformed one) is swept once untouched for `UNOWNED_GRACE_S`:
recorded when its record's fields can be read, else set aside, and each is said in one line. A `.work`
that is not a folder is moved aside rather than refusing every run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
from pydantic import ValidationError

from harness import atomic
from harness.errors import UserError, describe_os_error
from harness.guard import GuardRecord
from harness.json_types import JsonObject
from harness.locks import lock_dir
from harness.results import RecordHeader
from harness.run.landing import land_run
from harness.run.lifeline import identity, is_alive
from harness.run.outcome import (
    ENDED_FILE,
    Outcome,
    read_ended,
    read_outcome,
    read_partial,
    read_unwritten_mark,
    reserve_space,
    train_progress,
    write_ended,
)

WORK = ".work"
RUN_FILE = "run.json"
TRAINER_FILE = "trainer.json"
# A folder without a readable owner is swept only once untouched this long: never a run just starting.
UNOWNED_GRACE_S = 600.0


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


def standin_dir(run_id: str) -> Path:
    """Where a run's ended outcome goes when its work folder cannot take it (a results folder turned
    read-only under the run): beside the host's locks, where the next sweep looks for it."""
    return lock_dir() / "lorabench-ended" / run_id


def keep_ended(work_dir: Path, outcome: Outcome, guard: GuardRecord, unwritten: str) -> None:
    """The parent's final word, with why its record could not be written, in the work folder or else in
    its stand-in: before issue 39 a read-only results folder lost the cause, and the record the next run
    wrote said the parent had died."""
    for folder in (work_dir, standin_dir(work_dir.name)):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_ended(folder, outcome, guard, unwritten=unwritten)
            return
        except OSError:
            continue


def mark_trainer(work_dir: Path) -> None:
    """Called by the trainer child at its start, so a sweep can tell whether it still runs."""
    atomic.write_json(work_dir / TRAINER_FILE, {"trainer": identity()})


def _owners(work_dir: Path) -> list[str] | None:
    """The identities that must all be dead before the folder may go; None when `run.json` does not
    name its owner (missing: an older harness's folder; malformed)."""
    try:
        owner = _read_run(work_dir)["owner"]
    except (OSError, ValueError, KeyError):
        return None
    if not isinstance(owner, str):
        return None
    owners = [owner]
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        trainer = json.loads((work_dir / TRAINER_FILE).read_text(encoding="utf-8"))["trainer"]
        if isinstance(trainer, str):  # else unknown: a trainer dies with its parent (harness.run.lifeline)
            owners.append(trainer)
    return owners


def _read_run(work_dir: Path) -> JsonObject:
    """`run.json` as a table; ValueError naming what is wrong with it (a list, cut short, not JSON)."""
    path = work_dir / RUN_FILE
    if not path.is_file():
        raise ValueError(f"it has no {RUN_FILE} (a work folder of an older harness, or not a run's)")
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"its {RUN_FILE} is not UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"its {RUN_FILE} is not JSON (cut short?): {exc.msg}") from exc
    if not isinstance(run, dict):
        raise ValueError(f"its {RUN_FILE} is a JSON {type(run).__name__}, not a table")
    return run


@dataclass(frozen=True)
class Swept:
    """What a sweep did with one stale work folder: `record` written (None: set aside), and why."""

    folder: str
    record: Path | None
    note: str

    def __str__(self) -> str:
        return f"{self.note}: {self.record}" if self.record else self.note


# A claim's name carries the sweeper's identity ('/' cannot be in a name), so that the claim of a sweeper
# that died while recovering (Ctrl-C, SIGKILL) is seen to be dead and taken over by the next sweep.
CLAIM = ".swept-"
ASIDE = ".unrecorded-"


def _claim_name(run_name: str) -> str:
    return f".{run_name}{CLAIM}{identity().replace('/', '+')}"


def _run_name(folder: Path) -> str | None:
    """The run id a work folder is for; None for what a sweep leaves alone (set aside, not a folder)."""
    if not folder.is_dir() or folder.name.startswith(ASIDE):
        return None
    if CLAIM in folder.name:
        return folder.name.split(CLAIM)[0].lstrip(".")
    return None if folder.name.startswith(".") else folder.name


def _claimant_is_alive(folder: Path) -> bool:
    """Whether the sweeper that renamed `folder` to its claim still runs. Before issue 39 a claim held
    a bare pid: that pid still in use counts as alive (it cannot be told from a reused pid)."""
    tag = folder.name.split(CLAIM)[-1]
    if tag.isdigit():
        return psutil.pid_exists(int(tag))
    return is_alive(tag.replace("+", "/"))


def _abandoned_run(folder: Path, now: float) -> str | None:
    """The run id of a folder to sweep now; None to leave it (alive, set aside, gone meanwhile)."""
    try:
        name = _run_name(folder)
        return name if name is not None and _is_abandoned(folder, now) else None
    except OSError:  # gone meanwhile: another sweeper's
        return None


def _is_abandoned(folder: Path, now: float) -> bool:
    """Provably no one's any more: its sweeper (if claimed), parent and trainer dead. A folder whose
    owner cannot be read is abandoned once untouched for `UNOWNED_GRACE_S` (a run writes `run.json`
    right after creating its folder)."""
    if CLAIM in folder.name and _claimant_is_alive(folder):
        return False
    owners = _owners(folder)
    if owners is None:
        return now - _last_touched(folder) > UNOWNED_GRACE_S
    return not any(is_alive(who) for who in owners)


def _last_touched(folder: Path) -> float:
    times = [folder.stat().st_mtime]
    with contextlib.suppress(OSError):
        times += [entry.stat().st_mtime for entry in folder.iterdir()]
    return max(times)


def sweep_stale_runs(results_dir: Path) -> list[Swept]:
    """Record and remove every work folder whose parent and trainer are provably dead, including one
    another sweeper had claimed and died on; set aside (and say) one that cannot be read."""
    swept = _clear_work_root(results_dir)
    root = work_root(results_dir)
    if not root.is_dir():
        return swept
    now = time.time()
    for folder in sorted(root.iterdir()):
        if (name := _abandoned_run(folder, now)) is None:
            continue
        # Claim it by renaming: of two runs sweeping at once, one wins, the other skips it.
        claimed = root / _claim_name(name)
        try:
            os.rename(folder, claimed)
        except OSError:
            continue
        if (done := _sweep_claimed(results_dir, claimed, name)) is not None:
            swept.append(done)
    return swept


def _clear_work_root(results_dir: Path) -> list[Swept]:
    """A `.work` that is not a folder (a file, a dangling link) would refuse every run here: set aside."""
    root = work_root(results_dir)
    if not root.is_symlink() and (root.is_dir() or not root.exists()):
        return []
    aside = _free_name(results_dir / f"{WORK}{ASIDE}{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}")
    try:
        os.rename(root, aside)
    except OSError as exc:
        raise UserError(
            f"{root} is not a folder and could not be moved aside ({describe_os_error(exc)}); remove it"
        ) from exc
    return [Swept(WORK, None, f"{root} was not a folder (runs keep their work there); set aside as {aside}")]


def _free_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists() or candidate.is_symlink():
        candidate, n = path.with_name(f"{path.name}-{n}"), n + 1
    return candidate


def _sweep_claimed(results_dir: Path, claimed: Path, name: str) -> Swept | None:
    """Record the claimed folder and remove it; put it back for a later sweep when the record cannot be
    written now; set it aside, named, when it cannot be read as this version's run."""
    try:
        done = recover_record(results_dir, claimed)
    except (
        UserError,
        OSError,
    ) as exc:  # its record's lock is busy or cannot be taken: a later sweep takes it
        with contextlib.suppress(OSError):
            os.rename(claimed, claimed.with_name(name))
        why = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
        print(f"lorabench: left the stale run {name} for a later run: {why}", file=sys.stderr)
        return None
    except (ValidationError, ValueError, KeyError, TypeError, AttributeError) as exc:
        # Another version's folder, or one cut short: kept for a person to look at, never an error.
        aside = _free_name(claimed.with_name(f"{ASIDE}{name}"))
        os.rename(claimed, aside)
        said = f"a stale run's work folder could not be read as this version's ({_first_line(exc)})"
        return Swept(name, None, f"{said}; set aside as {aside}, not recorded")
    remove_work_dir(claimed)
    shutil.rmtree(standin_dir(name), ignore_errors=True)
    return done


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160] if text else ''}"


def _known_header(base: JsonObject) -> tuple[RecordHeader, list[str]]:
    """The record's header from `run.json`, and the fields in it this version does not know.

    Fields another version wrote and this one does not know are left out (and said), not an error."""
    if not isinstance(base, dict):
        raise TypeError(f"its {RUN_FILE} 'base' is a JSON {type(base).__name__}, not a table")
    header = RecordHeader.model_validate({k: v for k, v in base.items() if k in RecordHeader.model_fields})
    return header, sorted(set(base) - set(RecordHeader.model_fields))


def _recovered_outcome(
    work_dir: Path, pid: str, name: str, found: str
) -> tuple[Outcome, GuardRecord, str, str]:
    """The outcome to record, the guard's verdict, the note to add to its reason and what the sweep
    says: from the parent's ended outcome, else the trainer's final one, else the full-disk mark,
    else `killed` with what the trainer had kept."""
    standin = standin_dir(name)
    ended_in = next((d for d in (work_dir, standin) if (d / ENDED_FILE).is_file()), None)
    ended = read_ended(ended_in) if ended_in is not None else None
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
    run = _read_run(work_dir)
    owner = run.get("owner")
    header, unknown = _known_header(run["base"])
    name = work_dir.name.split(CLAIM)[0].lstrip(".")
    found = datetime.now(UTC).isoformat(timespec="seconds")
    pid = owner.split("/")[2] if isinstance(owner, str) and owner.count("/") == 3 else "?"
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
