"""A check's verdict and the exception that stops a run."""

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


class RunStopped(Exception):
    """A check decided the run must not go on; `status` is the record's status (failed / diverged)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
