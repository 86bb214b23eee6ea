"""What a run is expected to take, said before it starts: projected from an earlier run of the same setup
on this host (issue 28: `make bench` tells the expected total before it starts).

Timings never leave their host (harness/suite/cache.py), so only records made on this host id count, of
the same stack, experiment and setup name, ended ok, whose settings differ from this run's at most in
what scales (the seed, the steps, the questions decoded, checkpointing). Steps and decoding are scaled
linearly, everything else but the process's start repeats as measured
(`harness.run.timeline.projected_wall_s`); a record made before the timeline existed is projected from its
coarse timings the same way. With no such record the line says so, and the measured estimate still comes
five steps in (harness/suite/progress.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.config import SetupConfig
from harness.errors import UserError
from harness.results import RunRecord, load_record, record_dir, slug
from harness.suite.cache import HostKey
from harness.suite.mismatch import setup_changes
from harness.suite.progress import clock

# Settings an earlier run may differ in and still tell this one's time: the seed changes nothing that
# costs, the steps and the questions scale, checkpoints cost a save every N steps (small, left unscaled).
SCALABLE = ("recipe.seed", "recipe.steps", "eval.limit", "recipe.checkpoint_every")


def earlier_runs(
    folders: Sequence[Path], setup: SetupConfig, stack: str, host: HostKey, *, elsewhere: bool = False
) -> list[tuple[RunRecord, Path]]:
    """This host's ok records of the setup (any seed) whose only differences scale, newest first; with
    `elsewhere`, those of the stack's other hosts instead (a run's peak memory, not its time, travels)."""
    found = []
    for folder, host_id in _record_hosts(folders, stack, host, elsewhere=elsewhere):
        for path in sorted(
            record_dir(folder, stack, host_id, setup.experiment, setup.name).glob("seed-*.json")
        ):
            if ".prev-" in path.name:
                continue
            try:
                record = load_record(path)
            except (UserError, ValueError):  # unreadable: it cannot tell a time
                continue
            if record.status != "ok" or not (record.train and record.train.steps_done and record.trained):
                continue
            if all(change.split(" ", 1)[0] in SCALABLE for change in setup_changes(record, setup)):
                found.append((record, path))
    return sorted(found, key=lambda pair: pair[0].created, reverse=True)


def _record_hosts(
    folders: Sequence[Path], stack: str, host: HostKey, *, elsewhere: bool
) -> list[tuple[Path, str]]:
    """The (folder, host id) pairs whose records to read: this host's, or every other host's of the stack."""
    if not elsewhere:
        return [(folder, host.id) for folder in folders]
    return [
        (folder, hosts.name)
        for folder in folders
        for hosts in sorted((folder / slug(stack)).glob("*/"))
        if hosts.name != slug(host.id)
    ]


def _questions(record: RunRecord, setup: SetupConfig) -> int:
    """How many questions this run decodes: the earlier run's count unless the limit changed."""
    done = record.trained.n if record.trained else 0
    earlier_limit = record.setup.eval.limit
    if setup.eval.limit == earlier_limit:
        return done
    n_test = record.data.n_test if record.data else done
    return min(setup.eval.limit, n_test) if setup.eval.limit else n_test


def projected_s(record: RunRecord, setup: SetupConfig, runs: int = 1) -> float:
    """Wall seconds of `runs` runs of `setup` (one after another, the baseline decoded once) from `record`."""
    from harness.run.timeline import projected_wall_s

    assert record.train is not None and record.trained is not None
    steps_done, questions_done = record.train.steps_done, max(record.trained.n, 1)
    questions = _questions(record, setup)
    t = record.timings
    # Not the run's own seconds: the process's start before it, which for a suite worker's first run holds
    # pytest's start and the wait for its siblings' device slots (a timed 60-step seed on an H200 that
    # waited for three shared ones was then said to take ~0:42; it took 15 s).
    phases = {name: s for name, s in (t.phases or {}).items() if name != "startup"}
    if not phases:  # made before the timeline: its coarse timings, the rest of the run as one fixed part
        whole = t.wall_s or t.total_s or 0.0
        measured = {"steps": t.train_s or 0.0, "eval": t.eval_s or 0.0, "baseline": t.baseline_eval_s or 0.0}
        phases = {**measured, "fixed": max(0.0, whole - sum(measured.values()))}
    return projected_wall_s(
        phases,
        steps_done=steps_done,
        steps=setup.recipe.steps,
        questions_done=questions_done,
        questions=questions,
        runs=runs,
    )


def expected_note(
    folders: Sequence[Path], setup: SetupConfig, stack: str, host: HostKey, *, more_runs: int = 0, shown=str
) -> str:
    """The phrase the suite adds to a run's first line: the expected time and where it comes from."""
    earlier = earlier_runs(folders, setup, stack, host)
    if not earlier:
        return "expected time: no earlier run of this setup on this host; an estimate follows 5 steps in"
    record, path = earlier[0]
    this = projected_s(record, setup)
    text = f"expected ~{clock(this)}"
    if more_runs:
        text += f", ~{clock(projected_s(record, setup, runs=1 + more_runs))} with the {more_runs} seed(s) after it"
    cached = (
        " with its baseline eval cached" if record.baseline is not None and record.baseline.cached else ""
    )
    return f"{text} (from {shown(path)}, {record.created}: {record.train.steps_done} steps{cached})"  # type: ignore[union-attr]
