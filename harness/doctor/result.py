"""One doctor check's verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from harness.json_types import JsonObject

Status = Literal["ok", "fail", "skip"]
MARK = {"ok": "✓", "fail": "✗", "skip": "–"}


@dataclass(frozen=True)
class Check:
    """`summary` is what was found; `fix` what to do about a failure; a failure that is `blocking` stops
    a timed run (bench refuses), one that is not is shown with its fix and lets the run go on."""

    name: str
    status: Status
    summary: str
    fix: str | None = None
    blocking: bool = False

    def to_dict(self) -> JsonObject:
        return asdict(self)


def ok(name: str, summary: str) -> Check:
    return Check(name, "ok", summary)


def skip(name: str, summary: str) -> Check:
    return Check(name, "skip", summary)


def fail(name: str, summary: str, fix: str, *, blocking: bool = True) -> Check:
    return Check(name, "fail", summary, fix, blocking)
