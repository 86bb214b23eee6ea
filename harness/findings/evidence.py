"""What a probe gets (the records of one host × stack, with helpers) and what it returns (a status and
the evidence behind it). A probe may only claim what the records show: no evidence → "not tested"."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from harness.origin import GpuFacts, HostFacts
from harness.results import CheckVerdict, RunRecord

FindingStatus = Literal[
    "works as-is",
    "works with a workaround",
    "caught",
    "check error",
    "partly tested",
    "not used",
    "not tested",
]
# Display and sort order. "caught": the problem showed up and a check or the harness named it. "check
# error": the check itself broke on some runs, so on those nothing is known. "partly tested": it passed
# where it ran and was skipped on other runs. Neither of the last two may read as "works".
STATUS_ORDER: tuple[FindingStatus, ...] = (
    "works as-is",
    "works with a workaround",
    "caught",
    "check error",
    "partly tested",
    "not used",
    "not tested",
)


@dataclass(frozen=True)
class ProbeResult:
    status: FindingStatus
    evidence: str


def not_tested(why: str) -> ProbeResult:
    return ProbeResult("not tested", why)


def not_used(why: str) -> ProbeResult:
    return ProbeResult("not used", why)


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """Leading numeric release of a version string: '2.9.1+rocm7.2' → (2, 9, 1); None if absent."""
    if not text:
        return None
    match = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(part) for part in match.group(0).split(".")) if match else None


@dataclass(frozen=True)
class Evidence:
    """The records of one host × stack, in a stable order (experiment, setup, seed)."""

    records: tuple[RunRecord, ...]

    @classmethod
    def of(cls, records: Iterable[RunRecord]) -> Evidence:
        return cls(tuple(sorted(records, key=lambda r: (r.experiment, r.setup_name, r.seed, r.created))))

    @property
    def host(self) -> HostFacts:
        return self.records[0].provenance.host if self.records else HostFacts()

    @property
    def packages(self) -> dict[str, str]:
        """Installed versions; the newest record wins when the stack changed between runs."""
        newest = max(self.records, key=lambda r: r.created, default=None)
        return dict(newest.provenance.stack.packages) if newest else {}

    def version(self, package: str) -> tuple[int, ...] | None:
        return parse_version(self.packages.get(package))

    @property
    def runtime(self) -> str:
        """'hip', 'cuda' or 'cpu' (what torch was built for)."""
        return str(self.host.runtime or "cpu")

    @property
    def gpus(self) -> list[GpuFacts]:
        return list(self.host.gpus)

    @property
    def archs(self) -> list[str]:
        return [str(g.arch or "") for g in self.gpus]

    def label(self, record: RunRecord) -> str:
        return f"{record.experiment}/{record.setup_name} seed {record.seed}"

    def verdicts(self, check: str) -> list[tuple[RunRecord, CheckVerdict]]:
        return [(r, r.checks[check]) for r in self.records if check in r.checks]

    def where(self, **setup: Any) -> list[RunRecord]:
        """Records whose setup has these top-level values (e.g. backend='unsloth', precision='4bit')."""
        return [r for r in self.records if all(getattr(r.setup, k) == v for k, v in setup.items())]

    def multi_gpu(self) -> list[RunRecord]:
        return [r for r in self.records if r.setup.gpus > 1]

    def ok(self, records: Iterable[RunRecord] | None = None) -> list[RunRecord]:
        return [r for r in (self.records if records is None else records) if r.status == "ok"]

    def reason_matches(self, pattern: str, records: Iterable[RunRecord] | None = None) -> list[RunRecord]:
        regex = re.compile(pattern, re.IGNORECASE)
        pool = self.records if records is None else records
        return [r for r in pool if r.reason and regex.search(r.reason)]
