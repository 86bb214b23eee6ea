"""The benchmark suite: one case per claim of every setup file in `setups/` (or the folders given with
`--lorabench-setups DIR`), one per seed for a claim judged seed by seed. The claims, their bounds, the
setups they read and the cases' markers are the setup files' (`[claims.NAME]`, `[suite]`); the kinds
and their judges are `harness/suite/claims.py` (KINDS). Ids read `setup/claim/seed`, e.g.
`pytest benchmarks -k "exp_a and gain"`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.suite.cases import ClaimCase


def test_claim(
    lorabench_claim: ClaimCase,
    lorabench_judge: Callable[[ClaimCase], Any],
    record_property: Callable[[str, object], None],
) -> None:
    record_property(lorabench_claim.claim.name, lorabench_judge(lorabench_claim))
