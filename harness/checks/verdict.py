"""A check's verdict. (The exception that stops a run, `RunStopped`, lives in harness.errors: the parent
process reads it without importing the checks, which pull in torch.)"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Verdict:
    verdict: Literal["pass", "fail", "skipped", "error"]
    detail: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    seconds: float | None = None  # what the check cost, where it runs as its own step (preflight)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["seconds"] is None:
            del data["seconds"]
        return data
