"""Each finding's status for one host × stack, from its records, sorted platform → stack → host."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.findings.evidence import Evidence, ProbeResult
from harness.findings.registry import CATEGORY_ORDER, FINDINGS, Finding
from harness.results import RunRecord


@dataclass(frozen=True)
class Assessment:
    finding: Finding
    result: ProbeResult


def assess_findings(
    records: Iterable[RunRecord], findings: Iterable[Finding] = FINDINGS
) -> tuple[Assessment, ...]:
    evidence = Evidence.of(records)
    ordered = sorted(enumerate(findings), key=lambda item: (CATEGORY_ORDER.index(item[1].category), item[0]))
    return tuple(Assessment(finding, finding.probe(evidence)) for _, finding in ordered)
