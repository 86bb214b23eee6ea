"""The suite's cases: one per claim of every setup file, one per seed for a claim judged seed by seed.

`harness.suite.plugin` parametrizes a module that asks for `lorabench_claim` (benchmarks/test_setups.py)
with these cases; their markers are the declaring file's `[suite] markers`. A case gathers the records of
each setup its claim reads (`lorabench_run` trains or reuses them) and judges them with the claim's kind,
so a case and the report's row judge the same records with the same code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.results import RunRecord
from harness.run.launch import ENDPOINT_ENVS, first_env
from harness.suite.catalogue import Catalogue, Claim, assert_claim
from harness.suite.runner import SuiteSettings
from harness.suite.setups import MULTI_GPU, BenchSetup


@dataclass(frozen=True)
class ClaimCase:
    claim: Claim
    seed: int | None = None  # a per-seed claim's seed; None: the claim reads every seed at once

    @property
    def id(self) -> str:
        """`setup/claim/seed`: the declaring file's stem, the claim's name as a slug, the seed."""
        name = re.sub(r"[^a-z0-9]+", "-", self.claim.name.lower()).strip("-")
        return f"{self.claim.source.stem}/{name}" + ("" if self.seed is None else f"/seed{self.seed}")

    def marks(self) -> list[pytest.MarkDecorator]:
        found = []
        for marker in self.claim.markers:
            if match := MULTI_GPU.match(marker):
                found.append(pytest.mark.multi_gpu(n=int(match.group(1) or 2)))
            else:
                found.append(getattr(pytest.mark, marker))
        return found

    def seeds(self, settings: SuiteSettings) -> tuple[int, ...]:
        return settings.seeds if self.seed is None else (self.seed,)


def collect_cases(catalogue: Catalogue, seeds: Sequence[int]) -> list[ClaimCase]:
    cases: list[ClaimCase] = []
    for claim in catalogue.claims:
        cases += [ClaimCase(claim, seed) for seed in seeds] if claim.per_seed else [ClaimCase(claim)]
    return cases


def params(cases: Sequence[ClaimCase]) -> list[object]:
    return [pytest.param(case, id=case.id, marks=case.marks()) for case in cases]


def skip_reason(case: ClaimCase, settings: SuiteSettings, load: Callable[[Path], BenchSetup]) -> str | None:
    """Why this session cannot judge the case, before any run: the claim compares what an option erases,
    or needs what this session lacks."""
    claim = case.claim
    setups = [load(path) for path in dict.fromkeys(claim.setups.values())]
    models = {str((s.fields.get("model") or {}).get("source")) for s in setups}
    if settings.model and len(models) > 1:
        return f"{claim.experiment}: {claim.name!r} compares two models; --lorabench-model would make them the same model"
    if claim.across_stacks and not settings.other_stack:
        return (
            f"{claim.experiment}: {claim.name!r} compares two stacks: give --lorabench-other-stack NAME "
            "(its records on this host)"
        )
    nodes = any(int(s.fields.get("nodes", 1)) > 1 for s in setups)
    # Where the nodes meet is harness.run.launch's to read; a lone node would wait for its partner until
    # the rendezvous timed out.
    if nodes and first_env(ENDPOINT_ENVS) is None:
        return "two nodes meet at $LORABENCH_RDZV_ENDPOINT (README: Across two hosts); not set"
    return None


@dataclass(frozen=True)
class CaseRuns:
    """What a case reads records through (the plugin's fixtures): `run` trains or reuses a record of this
    stack, `other` reads one of another stack, `record_file` says where a record lies (its adapter beside it)."""

    load: Callable[[Path], BenchSetup]
    run: Callable[[Path, int, dict[str, object] | None], RunRecord]
    other: Callable[[Path, int], RunRecord]
    record_file: Callable[[RunRecord], Path]

    def record(self, path: Path, seed: int) -> RunRecord:
        """This stack's record of the setup at `path` for `seed`; a setup that scores another's adapter
        (`[suite] adapter_from`) gets that setup's record of the same seed as its eval.adapter."""
        source = self.load(path).adapter_from
        overrides = (
            None if source is None else {"eval.adapter": str(self.record_file(self.record(source, seed)))}
        )
        return self.run(path, seed, overrides)


def judge_case(case: ClaimCase, seeds: Sequence[int], runs: CaseRuns) -> Any:
    """The claim on the records of its setups for `seeds`, by role; the figure, or an AssertionError
    showing every number (`NotEvaluable`, a skip, when the records cannot answer)."""
    claim = case.claim
    found: dict[str, list[RunRecord]] = {}
    for i, (role, path) in enumerate(claim.setups.items()):
        if claim.across_stacks and i == 0:  # the reference: the other stack's records, never run here
            found[role] = [runs.other(path, seed) for seed in seeds]
        else:
            found[role] = [runs.record(path, seed) for seed in seeds]
    return assert_claim(claim, found, {path: runs.load(path) for path in claim.setups.values()})
