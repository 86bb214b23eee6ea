"""The run cache: a record on disk stands in for a new run when it answers the same question.

Same question = same fingerprint (`harness.results.run_fingerprint`: the setup with its data by content,
the stack, and the host's kind) and a terminal status. What the suite does with a hit is `--lorabench-rerun`'s: by default ("failed") only
an ok record stands in; a killed, failed, refused or diverged one runs again, so a suite stopped
with Ctrl-C (its run recorded as killed) resumes where it stopped. "no" reuses every record: a claim
reading a non-ok one then fails with its reason.
A timed claim additionally needs a record that was timed: `timed` is a run option, not a setup field,
so it is not in the fingerprint.

The stand-in rule. A record is looked for first under this host's id. When there is none, a record of
another host stands in when (1) its fingerprint matches, i.e. it was made with fingerprint version 3 or
later on a host of the same kind (`harness.provenance.host_kind`: for a GPU host its GPU model × count;
for a CPU host its architecture, logical cores and instruction tier, which decide what `auto` resolves
to and which kernels run), from the same data bytes, setup and stack; and (2) the claim is untimed.
Accuracy travels between hosts of one kind; timings never leave their host. Records that do not qualify,
this host's own included, are named with what changed (`why_not_standing_in`: "recipe.steps 300 → 20"),
so nobody wonders why a committed record was not reused.

Two folders are read: the user's results folder (read and written) and the published records
(`reports/results/`, committed; read only). The runner asks the user's folder first, then the published one
(`harness.suite.runner`); a run always writes into the user's folder, so a committed record is never replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from harness.config import SetupConfig
from harness.errors import UserError
from harness.results import RunRecord, Status, load_record, run_fingerprint, seed_record_path, slug
from harness.suite.mismatch import fingerprint_changes

TERMINAL_STATUSES: frozenset[str] = frozenset(get_args(Status))
Rerun = Literal["no", "failed", "all"]
DEFAULT_RERUN: Rerun = "failed"


@dataclass(frozen=True)
class HostKey:
    """This host as the cache sees it: its id (where its records live) and its kind (what the fingerprint holds)."""

    id: str
    kind: str


def expected_path(results_dir: Path, setup: SetupConfig, stack: str, host: str) -> Path:
    """Where `run_setup` writes this setup's record on this stack and host."""
    return seed_record_path(results_dir, stack, host, setup.experiment, setup.name, setup.recipe.seed)


def _read(path: Path) -> RunRecord | None:
    try:
        return load_record(path)
    except (UserError, ValueError):
        return None  # unreadable or from an unsupported format: re-running is the fix


def _usable(record: RunRecord | None, fp: str, *, timed: bool) -> bool:
    return (
        record is not None
        and record.fingerprint == fp
        and record.status in TERMINAL_STATUSES
        and not (timed and not record.guard.get("timed"))
    )


def lookup(
    results_dir: Path, setup: SetupConfig, stack: str, host: HostKey, *, timed: bool = False
) -> RunRecord | None:
    """This host's own cached record for the setup, or None."""
    path = expected_path(results_dir, setup, stack, host.id)
    if not path.is_file():
        return None
    record = _read(path)
    return record if _usable(record, run_fingerprint(setup, stack, host.kind), timed=timed) else None


def other_hosts_records(results_dir: Path, setup: SetupConfig, stack: str, host: HostKey) -> list[Path]:
    """This setup × seed's records on this stack made on other hosts, oldest host folder name first."""
    own = expected_path(results_dir, setup, stack, host.id)
    pattern = f"*/{setup.experiment}/{setup.name}/{own.name}"
    return sorted(p for p in (results_dir / slug(stack)).glob(pattern) if p != own)


def stand_in(
    results_dir: Path, setup: SetupConfig, stack: str, host: HostKey
) -> tuple[RunRecord, Path] | None:
    """A record of another host of the same kind that answers for this one (untimed claims only; see
    the module's rule), the newest when several do."""
    fp = run_fingerprint(setup, stack, host.kind)
    found = [
        (r, p)
        for p in other_hosts_records(results_dir, setup, stack, host)
        if _usable(r := _read(p), fp, timed=False)
    ]
    return max(found, key=lambda pair: pair[0].created) if found else None  # type: ignore[union-attr]


def why_not_standing_in(
    results_dir: Path,
    setup: SetupConfig,
    stack: str,
    host: HostKey,
    *,
    timed: bool = False,
    tag: str = "",
) -> list[str]:
    """Why each record of this setup × seed in `results_dir` (this host's own included) does not stand in
    here, one phrase each naming what changed (`harness.suite.mismatch`); `tag` marks the folder's records
    (e.g. " (published)")."""
    fp = run_fingerprint(setup, stack, host.kind)
    own = expected_path(results_dir, setup, stack, host.id)
    paths = ([own] if own.is_file() else []) + other_hosts_records(results_dir, setup, stack, host)
    reasons = []
    for path in paths:
        who = ("this host's record" if path == own else path.parents[2].name) + tag
        record = _read(path)
        if record is None:
            reasons.append(f"{who}: unreadable or of an unsupported format")
            continue
        if record.fingerprint != fp:
            why = fingerprint_changes(record, setup, stack, host.kind)
        elif timed and not record.guard.get("timed"):
            why = "untimed, and a timed claim takes timed records only"
        elif timed and path != own:
            why = "a timed claim takes this host's own records only"
        else:
            why = f"status {record.status}"
        reasons.append(f"{who}: {why}")
    return reasons


def wants_rerun(record: RunRecord, rerun: Rerun) -> bool:
    return rerun == "all" or (rerun == "failed" and record.status != "ok")
