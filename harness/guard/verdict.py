"""Readings and verdicts: what the guard saw, and whether a timing may go ahead."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from pydantic import BaseModel, ConfigDict

from harness.json_types import JsonObject

ALLOW_NOISY_FIX = "use --allow-noisy to record an untimed run"
RERUN_FIX = "re-run the timing on a quiet machine"


@dataclass(frozen=True)
class Reading:
    """One measurement against its limit. `detail` is a full sentence, ending with a likely cause
    for a failed reading ("— a download?")."""

    name: str
    value: float
    unit: str
    limit: float | None
    ok: bool
    detail: str

    def to_dict(self) -> JsonObject:
        return asdict(self)


@dataclass(frozen=True)
class GuardVerdict:
    """All readings of one look at the machine; `reason` quotes the first failed one, with the fix."""

    ok: bool
    reason: str | None
    readings: tuple[Reading, ...]
    host_view: JsonObject | None = None  # what the guard could see (guard/hostview.py), kept in records

    @classmethod
    def from_readings(
        cls,
        readings: Iterable[Reading],
        prefix: str = "refused to time",
        fix: str = ALLOW_NOISY_FIX,
        host_view: JsonObject | None = None,
    ) -> GuardVerdict:
        readings = tuple(readings)
        failed = [r for r in readings if not r.ok]
        reason = f"{prefix}: {failed[0].detail} {fix}" if failed else None
        return cls(ok=not failed, reason=reason, readings=readings, host_view=host_view)

    @property
    def failed(self) -> tuple[Reading, ...]:
        return tuple(r for r in self.readings if not r.ok)

    def to_dict(self) -> JsonObject:
        out = {"ok": self.ok, "reason": self.reason, "readings": [r.to_dict() for r in self.readings]}
        if self.host_view is not None:
            out["host_view"] = self.host_view
        return out


class GuardRecord(BaseModel):
    """What the guard says of one run, as its record keeps it (`RunRecord.guard`): returned by whoever
    judged the timing, never filled into a dict passed in. Only the fields that were set are written,
    so a record keeps the shape it always had ({"timed": false} for an untimed run)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timed: bool | None = None  # unset: not known (a run recovered by a later run's sweep from what it left)
    precheck: JsonObject | None = None
    sampler: JsonObject | None = None
    timing_valid: bool | None = None
    timing_invalid_reason: str | None = None
    nodes: list[JsonObject] | None = None  # a multi-node run refused before training: every node's guard

    def to_record(self) -> JsonObject:
        return self.model_dump(mode="json", exclude_unset=True)


def format_bytes(n: float) -> str:
    """Decimal units, as download tools print them: 3.2 MB."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def format_seconds(s: float) -> str:
    return f"{s:.0f} s" if abs(s - round(s)) < 0.05 else f"{s:.1f} s"
