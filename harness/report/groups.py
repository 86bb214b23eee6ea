"""Records grouped the way reports are: one group per host × stack, setups inside per experiment.

Orders are stable (host, stack, experiment, setup, seed) so the same records always render the same
report, byte for byte."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError
from harness.results import RunRecord, find_records, load_record, predictions_path


@dataclass(frozen=True)
class LoadedRecord:
    record: RunRecord
    path: Path

    @property
    def predictions(self) -> Path | None:
        path = predictions_path(self.path)
        return path if self.record.predictions_file and path.is_file() else None


def exact_by_question(path: Path) -> dict[int, bool]:
    """Question index → exact match, from any task's predictions file (every task writes both keys)."""
    out: dict[int, bool] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out[int(row["index"])] = bool(row["exact"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{path}:{number}: not a predictions line with index and exact ({exc})") from None
    return out


def exact_by_seed(setup: SetupRuns) -> dict[int, dict[int, bool]]:
    """Seed → per-question exact match, for the ok runs of a setup that kept predictions."""
    return {
        item.record.seed: exact_by_question(item.predictions)
        for item in setup.runs
        if item.record.status == "ok" and item.predictions is not None
    }


def paired_outcomes(a: SetupRuns, b: SetupRuns) -> tuple[list[bool], list[bool], list[int]]:
    """Per-question exact match of two setups, paired by seed and question index (seeds in both)."""
    pa, pb = exact_by_seed(a), exact_by_seed(b)
    xs: list[bool] = []
    ys: list[bool] = []
    seeds = sorted(set(pa) & set(pb))
    for seed in seeds:
        for index in sorted(set(pa[seed]) & set(pb[seed])):
            xs.append(pa[seed][index])
            ys.append(pb[seed][index])
    return xs, ys, seeds


@dataclass(frozen=True)
class SetupRuns:
    experiment: str
    setup: str
    runs: tuple[LoadedRecord, ...]  # every seed, sorted by seed

    @property
    def ok(self) -> tuple[RunRecord, ...]:
        return tuple(r.record for r in self.runs if r.record.status == "ok")

    @property
    def records(self) -> tuple[RunRecord, ...]:
        return tuple(r.record for r in self.runs)


@dataclass(frozen=True)
class ReportGroup:
    host: str
    stack: str
    runs: tuple[LoadedRecord, ...]

    @property
    def records(self) -> tuple[RunRecord, ...]:
        return tuple(r.record for r in self.runs)

    @property
    def experiments(self) -> tuple[str, ...]:
        return tuple(sorted({r.record.experiment for r in self.runs}))

    def setups(self, experiment: str) -> tuple[SetupRuns, ...]:
        names = sorted({r.record.setup_name for r in self.runs if r.record.experiment == experiment})
        return tuple(
            SetupRuns(experiment, name, tuple(r for r in self.runs if r.record.experiment == experiment and r.record.setup_name == name))
            for name in names
        )  # fmt: skip

    @property
    def date(self) -> str:
        """The newest record's creation date: the report's date, taken from records, not the clock."""
        return max(r.record.created for r in self.runs)[:10]


def _sort_key(item: LoadedRecord) -> tuple[str, str, int, str]:
    r = item.record
    return (r.experiment, r.setup_name, r.seed, r.created)


def group_records(loaded: Iterable[LoadedRecord]) -> tuple[ReportGroup, ...]:
    by_key: dict[tuple[str, str], list[LoadedRecord]] = {}
    for item in loaded:
        by_key.setdefault((item.record.host, item.record.stack), []).append(item)
    return tuple(
        ReportGroup(host, stack, tuple(sorted(items, key=_sort_key)))
        for (host, stack), items in sorted(by_key.items())
    )


def load_records(paths: Iterable[Path]) -> tuple[LoadedRecord, ...]:
    """The records under `paths`; one record found in several folders (two artifacts of one runner's
    results, or a results folder given twice) counts once: its first copy, by the order given."""
    seen: dict[tuple[str, str], RunRecord] = {}
    loaded = []
    for path in find_records(paths):
        record = load_record(path)
        key = (record.run_id, record.fingerprint)
        if seen.get(key) == record:
            continue
        seen.setdefault(key, record)
        loaded.append(LoadedRecord(record, path))
    return tuple(loaded)
