"""Findings: the registry (`registry.FINDINGS`: data), their probes (`probes`), and `assess_findings`,
which gives each finding a status for one host × stack from its records."""

from __future__ import annotations

from harness.findings.assess import Assessment, assess_findings
from harness.findings.evidence import STATUS_ORDER, Evidence, FindingStatus, ProbeResult
from harness.findings.registry import FINDINGS, Finding

__all__ = [
    "FINDINGS",
    "STATUS_ORDER",
    "Assessment",
    "Evidence",
    "Finding",
    "FindingStatus",
    "ProbeResult",
    "assess_findings",
]
