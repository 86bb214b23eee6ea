"""The run cache: a record on disk stands in for a new run when it answers the same question.

Same question = same fingerprint (setup + stack + host, see `harness.results.fingerprint`) and a
terminal status. What the suite does with a hit is `--lorabench-rerun`'s: by default ("failed") only
an ok record stands in; a killed, failed, refused or diverged one runs again, so a suite stopped
with Ctrl-C (its run recorded as killed) resumes where it stopped. "no" reuses every record: a claim
reading a non-ok one then fails with its reason.
A timed claim additionally needs a record that was timed: `timed` is a run option, not a setup field,
so it is not in the fingerprint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from harness.config import SetupConfig
from harness.errors import UserError
from harness.results import RunRecord, Status, fingerprint, load_record, seed_record_path

TERMINAL_STATUSES: frozenset[str] = frozenset(get_args(Status))
Rerun = Literal["no", "failed", "all"]
DEFAULT_RERUN: Rerun = "failed"


def expected_path(results_dir: Path, setup: SetupConfig, stack: str, host: str) -> Path:
    """Where `run_setup` writes this setup's record on this stack and host."""
    return seed_record_path(results_dir, stack, host, setup.experiment, setup.name, setup.recipe.seed)


def lookup(
    results_dir: Path, setup: SetupConfig, stack: str, host: str, *, timed: bool = False
) -> RunRecord | None:
    """The cached record for this setup on this stack and host, or None when it must run."""
    path = expected_path(results_dir, setup, stack, host)
    if not path.is_file():
        return None
    try:
        record = load_record(path)
    except (UserError, ValueError):
        return None  # unreadable or from an unsupported format: re-running is the fix
    if record.fingerprint != fingerprint(setup.fingerprint_payload(), stack, host):
        return None
    if record.status not in TERMINAL_STATUSES:
        return None
    if timed and not record.guard.get("timed"):
        return None
    return record


def wants_rerun(record: RunRecord, rerun: Rerun) -> bool:
    return rerun == "all" or (rerun == "failed" and record.status != "ok")
