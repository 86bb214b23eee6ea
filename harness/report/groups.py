"""Records grouped the way reports are: one group per host × stack, setups inside per experiment, in
stable orders (host, stack, experiment, setup, seed) so the same records render the same bytes.

Records of one setup name whose settings differ (`--set` overrides) are never pooled: they are split
into `variants`; the one the suite's setup file describes keeps the plain name and is the one the claims
read, each other is named by what it changed, e.g. `smollm2-135m-lora (recipe.steps=20)`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.errors import UserError
from harness.report.conditions import Conditions, Sharing, conditions, survey
from harness.report.settings import raw_settings
from harness.results import RunRecord, find_records, load_record, predictions_path


@dataclass(frozen=True)
class LoadedRecord:
    record: RunRecord
    path: Path
    sharing: Sharing | None = None  # its company among the records loaded with it (`conditions.survey`)

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
    setup: str  # the setup's name, or a variant's: `name (setting=value, …)`
    runs: tuple[LoadedRecord, ...]  # every seed, sorted by seed
    is_variant: bool = (
        False  # the records changed the setup file's settings (overrides): not the suite's setup
    )

    @property
    def ok(self) -> tuple[RunRecord, ...]:
        return tuple(r.record for r in self.runs if r.record.status == "ok")

    @property
    def records(self) -> tuple[RunRecord, ...]:
        return tuple(r.record for r in self.runs)

    @property
    def conditions(self) -> Conditions:
        """The conditions of its ok runs' figures (all runs when none is ok)."""
        ok = [r for r in self.runs if r.record.status == "ok"] or list(self.runs)
        return conditions([(r.record, r.sharing) for r in ok])


# Settings a variant is compared on: what the setup asked for, not how the run was named or when.
def _identity(record: RunRecord) -> dict[str, str]:
    return raw_settings(record)


def _compatible(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    # A run that stopped before loading its data names no split, only its path: it belongs with the runs
    # it matches otherwise.
    keys = set(a) | set(b)
    if ("data split" in a) != ("data split" in b):
        keys -= {"data split", "data.source"}
    return all(a.get(k) == b.get(k) for k in keys)


def _asked(data: Mapping[str, object], prefix: str = "") -> set[str]:
    """The flattened keys a record's own setup names (a field added after the record is not among them)."""
    keys: set[str] = set()
    for key, value in data.items():
        keys |= _asked(value, f"{prefix}{key}.") if isinstance(value, Mapping) else {f"{prefix}{key}"}
    return keys


def _changed(
    settings: Mapping[str, str], members: Sequence[LoadedRecord], reference: Mapping[str, str]
) -> dict[str, str]:
    """The file's settings these runs changed, with their values. A field the records predate (filled with
    its default, the behaviour they had) is no change: the file may name it since (recipe.compile = "auto")."""
    asked = set().union(*(_asked(m.record.setup_as_written) for m in members))
    return {
        key: settings[key]
        for key, value in reference.items()
        if key in asked and settings.get(key, value) != value
    }


def _named(name: str, settings: Mapping[str, str], base: Mapping[str, str]) -> str:
    changed = ", ".join(
        f"{k}={v}" for k, v in sorted(settings.items()) if base.get(k, v) != v or k not in base
    )
    return f"{name} ({changed or 'other settings'})"


def variants(
    experiment: str, name: str, runs: Sequence[LoadedRecord], reference: Mapping[str, str] | None = None
) -> tuple[SetupRuns, ...]:
    """The runs of one setup name split by settings. With `reference` (the setup file's own settings,
    flattened), the plain name goes only to the runs that match it: a run with overrides is never the
    suite's setup, even when it is the only one (a 20-step run reported alone). Without one (a setup with
    no file here), the plain name goes to the variant with the most runs, then the newest. Every other
    variant is named by the settings in which it differs from the plain one, or from the file."""
    found: list[tuple[dict[str, str], list[LoadedRecord]]] = []
    for item in runs:
        identity = _identity(item.record)
        for settings, members in found:
            if _compatible(settings, identity):
                members.append(item)
                break
        else:
            found.append((identity, [item]))
    ranked = sorted(
        found,
        key=lambda f: (
            len(_changed(f[0], f[1], reference or {})),
            -len(f[1]),
            [-ord(c) for c in max(i.record.created for i in f[1])],
        ),
    )
    has_plain = not reference or not _changed(*ranked[0], reference)
    if len(found) == 1 and has_plain:
        return (SetupRuns(experiment, name, tuple(runs)),)
    out = [SetupRuns(experiment, name, tuple(ranked[0][1]))] if has_plain else []
    for settings, members in ranked[1 if has_plain else 0 :]:
        # Named against the plain variant, or where there is none against the file's own settings.
        named = (
            _named(name, settings, ranked[0][0])
            if has_plain
            else _named(name, _changed(settings, members, reference or {}), {})
        )
        out.append(SetupRuns(experiment, named, tuple(members), is_variant=True))
    return tuple(sorted(out, key=lambda s: s.setup))


@dataclass(frozen=True)
class ReportGroup:
    host: str
    stack: str
    runs: tuple[LoadedRecord, ...]
    # "experiment/setup" → the suite's setup file's own settings, flattened (which variant keeps the name).
    references: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def records(self) -> tuple[RunRecord, ...]:
        return tuple(r.record for r in self.runs)

    @property
    def stack_label(self) -> str:
        """The stack as a scorecard names it: `(unpinned)` after an environment no lockfile pins (its records
        say `provenance.stack.pinned: false`, harness/stack_name.py), beside the pinned stacks."""
        unpinned = any(r.provenance.stack.pinned is False for r in self.records)
        return f"{self.stack} (unpinned)" if unpinned else self.stack

    @property
    def experiments(self) -> tuple[str, ...]:
        return tuple(sorted({r.record.experiment for r in self.runs}))

    def setups(self, experiment: str) -> tuple[SetupRuns, ...]:
        """Its setups of `experiment` by name, each setup name split into its variants (never pooled)."""
        names = sorted({r.record.setup_name for r in self.runs if r.record.experiment == experiment})
        return tuple(
            variant
            for name in names
            for variant in variants(
                experiment,
                name,
                [r for r in self.runs if r.record.experiment == experiment and r.record.setup_name == name],
                self.references.get(f"{experiment}/{name}"),
            )
        )

    def suite_setup(self, key: str | None) -> SetupRuns | None:
        """The runs of "experiment/setup" that are the suite's setup (its variant with overrides left out)."""
        if key is None or "/" not in key:
            return None
        experiment, name = key.split("/", 1)
        return next((s for s in self.setups(experiment) if s.setup == name and not s.is_variant), None)

    @property
    def date(self) -> str:
        """The newest record's creation date: the report's date, taken from records, not the clock."""
        return max(r.record.created for r in self.runs)[:10]


def _sort_key(item: LoadedRecord) -> tuple[str, str, int, str]:
    r = item.record
    return (r.experiment, r.setup_name, r.seed, r.created)


def group_records(
    loaded: Iterable[LoadedRecord], references: Mapping[str, Mapping[str, str]] | None = None
) -> tuple[ReportGroup, ...]:
    by_key: dict[tuple[str, str], list[LoadedRecord]] = {}
    for item in loaded:
        by_key.setdefault((item.record.host, item.record.stack), []).append(item)
    return tuple(
        ReportGroup(host, stack, tuple(sorted(items, key=_sort_key)), references or {})
        for (host, stack), items in sorted(by_key.items())
    )


def _readable_records(paths: Iterable[Path]) -> Iterator[tuple[Path, RunRecord]]:
    """Each record under `paths`. A record named itself must read; one found in a folder that does not
    (cut short, another program's) is skipped with a warning: before issue 39 one truncated sibling
    made `lorabench report` refuse the whole folder."""
    for given in paths:
        for path in find_records([given]):
            try:
                yield path, load_record(path)
            except UserError as exc:
                if path == given:
                    raise
                print(f"lorabench: warning: skipped a record that cannot be read: {exc}", file=sys.stderr)


def load_records(paths: Iterable[Path]) -> tuple[LoadedRecord, ...]:
    """The records under `paths`; one record found in several folders (two artifacts of one runner's
    results, or a results folder given twice) counts once: its first copy, by the order given."""
    seen: dict[tuple[str, str], RunRecord] = {}
    loaded = []
    for path, record in _readable_records(paths):
        key = (record.run_id, record.fingerprint)
        if seen.get(key) == record:
            continue
        seen.setdefault(key, record)
        loaded.append(LoadedRecord(record, path))
    company = survey(item.record for item in loaded)
    return tuple(replace(item, sharing=company[item.record.run_id]) for item in loaded)
