"""The conditions a time, speed, memory or MFU figure was measured under, read from records only:
timed under the quiet-machine guard or not; alone on its devices or beside other runs; the lorabench
commit (and whether its tree was dirty); the steps the steady figures read.

Two runs on one host whose spans (start plus `timings.total_s`) overlap ran at the same time: they shared
the devices where the run used all of the host's GPUs (or on a CPU host), else "on the host". A guarded
run saw no foreign GPU process and held the timed lock: alone. An untimed run no record overlaps may
still have had company the records do not show: "not known", never "alone".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from harness.results import RunRecord
from harness.run import mfu
from harness.suite.claims import timing_guarded

UNGUARDED = "†"
UNKNOWN = "?"
LEGEND = (
    "Marks on time, speed, memory and MFU figures: † = not timed under the quiet-machine guard "
    "(`lorabench run --timed`; other load may be in it); ×k = one of k recorded runs that ran at the same time "
    "on the same devices (started together); ×k? = one of k runs at the same time on the host, which GPU "
    "each had not recorded; ? = not known whether it ran alone (untimed, and no other record overlaps it). "
    "No mark: timed under the guard, alone on its devices. The conditions column adds the lorabench "
    "commit (dirty = uncommitted changes) and the steps the steady figures read."
)


@dataclass(frozen=True)
class Sharing:
    """What the records tell about one run's company: `others` runs overlapped it on the same host."""

    others: int
    devices_known: bool  # the overlap was on its own devices (else: somewhere on the host)
    guarded: bool  # timed under the guard, so alone when nothing overlaps

    @property
    def mark(self) -> str:
        if self.others:
            return f"×{self.others + 1}" + ("" if self.devices_known else "?")
        return "" if self.guarded else UNKNOWN

    @property
    def text(self) -> str:
        if self.others:
            where = (
                "on the same devices"
                if self.devices_known
                else "on the host (which GPU each had is not recorded)"
            )
            return f"one of {self.others + 1} runs at once {where}"
        return "alone (guard)" if self.guarded else "alone or not: not known"


_RUN_ID_TIME = re.compile(r"^(\d{8}T\d{6}(?:\.\d{1,6})?)Z")


def start_time(record: RunRecord) -> float:
    """When the run started, seconds since the epoch: the run id's stamp (microseconds since late 2026-11)
    when it has one, else `created` (whole seconds)."""
    if (found := _RUN_ID_TIME.match(record.run_id)) is not None:
        text = found.group(1)
        fmt = "%Y%m%dT%H%M%S.%f" if "." in text else "%Y%m%dT%H%M%S"
        return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
    return datetime.fromisoformat(record.created).timestamp()


def _span(record: RunRecord) -> tuple[float, float] | None:
    total = record.timings.total_s
    if not total:
        return None
    start = start_time(record)
    return start, start + total


def _machine(record: RunRecord) -> str:
    return str(record.provenance.host.id or record.host)


def _devices(record: RunRecord) -> set[str] | None:
    """The devices the record names (the suite's placement), None when it does not say."""
    placed = record.provenance.placement
    return set(placed.devices.split(",")) if placed is not None and placed.devices else None


def _same_devices(a: RunRecord, b: RunRecord) -> bool:
    mine, theirs = _devices(a), _devices(b)
    return mine is None or theirs is None or bool(mine & theirs)


def _devices_known(record: RunRecord) -> bool:
    if _devices(record) is not None:
        return True
    host = record.provenance.host
    if not host.gpus:
        return True  # a CPU run: the CPU is the device every run on the host shares
    return host.machine_gpus is not None and host.machine_gpus <= record.setup.gpus


def survey(records: Iterable[RunRecord]) -> dict[str, Sharing]:
    """Each record's company among `records`, by run id."""
    records = list(records)
    spans = {r.run_id: _span(r) for r in records}
    out: dict[str, Sharing] = {}
    for r in records:
        span = spans[r.run_id]
        others = 0
        if span is not None:
            for o in records:
                other = spans[o.run_id]
                if o.run_id == r.run_id or other is None or _machine(o) != _machine(r):
                    continue
                if not _same_devices(r, o):
                    continue
                if other[0] < span[1] and span[0] < other[1]:
                    others += 1
        out[r.run_id] = Sharing(others, _devices_known(r), timing_guarded(r))
    return out


def commit(record: RunRecord) -> str:
    git = record.provenance.git
    sha = str(git.sha or "–")[:7]
    return f"{sha} (dirty)" if git.dirty else sha


def window(record: RunRecord) -> str:
    """The steps the steady figures read, or 'whole run' when the record has no steady step time."""
    if record.train is None or not record.train.step_s or record.train.steps_done < 2:
        return "whole run"
    first, last = mfu.steady_window(record.train.steps_done)
    return f"steps {first}–{last}"


def timing(record: RunRecord) -> str:
    if timing_guarded(record):
        return "timed (guard)"
    if record.guard.get("timed"):
        return "timed, noise seen"
    return "not timed"


@dataclass(frozen=True)
class Conditions:
    """The conditions of a set of runs (one setup's seeds): each part lists every value its runs had."""

    timing: str
    sharing: str
    commit: str
    window: str
    marks: str  # the table/chart marks, e.g. "† ×3"

    @property
    def text(self) -> str:
        return f"{self.timing}; {self.sharing}; {self.commit}; {self.window}"

    def differences(self, other: Conditions) -> list[str]:
        """`what: self's vs other's` for each condition that biases a figure and differs."""
        pairs = (
            ("timing", self.timing, other.timing),
            ("sharing", self.sharing, other.sharing),
            ("lorabench commit", self.commit, other.commit),
        )
        return [f"{name}: {a} vs {b}" for name, a, b in pairs if a != b]


def _joined(values: Iterable[str]) -> str:
    return " / ".join(dict.fromkeys(values)) or "–"


def conditions(runs: Sequence[tuple[RunRecord, Sharing | None]]) -> Conditions:
    """The conditions of these runs (record and its company as `survey` found it, None: not surveyed)."""
    sharings = [s for _, s in runs]
    records = [r for r, _ in runs]
    marks: list[str] = []
    if any(not timing_guarded(r) for r in records):
        marks.append(UNGUARDED)
    marks.extend(dict.fromkeys(s.mark if s else UNKNOWN for s in sharings))
    return Conditions(
        timing=_joined(timing(r) for r in records),
        sharing=_joined(s.text if s else "alone or not: not known" for s in sharings),
        commit=_joined(commit(r) for r in records),
        window=_joined(window(r) for r in records),
        marks=" ".join(m for m in dict.fromkeys(marks) if m),
    )
