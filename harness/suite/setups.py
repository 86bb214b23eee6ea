"""Benchmark setup files: a setup (the same fields as `lorabench run` reads), its claims, and how the
suite runs it.

    [suite]                       # how the suite runs this file's claims (all optional)
    markers = ["cpu_ok", "slow"]  # pytest markers of its cases: gpu, multi_gpu, multi_gpu(n=4), cpu_ok, slow, timed
    adapter_from = "other.toml"   # score that setup's adapter of the same seed (eval.adapter); nothing trains

    [claims."gain on every seed"] # one table per claim: its kind, the setups it reads, its bounds
    kind = "gain"
    min_gain = 20.0

The claims live beside the setup so a bound and the measurements that justify it sit in one file, but
they are not part of the setup: changing a bound re-asserts against the cached records instead of
re-training. What a claim table may say is `harness.suite.catalogue`; the kinds are `harness.suite.claims.KINDS`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config import (
    CLAIMS_TABLE,
    SUITE_TABLE,
    Override,
    SetupConfig,
    apply_overrides,
    read_config_file,
    validate_setup,
)
from harness.errors import UserError

SUITE_KEYS = ("markers", "adapter_from")
MARKER_NAMES = ("gpu", "multi_gpu", "cpu_ok", "slow", "timed")
MULTI_GPU = re.compile(r"^multi_gpu(?:\(n=(\d+)\))?$")


@dataclass(frozen=True)
class BenchSetup:
    path: Path
    # Any values: a setup file's own tables, unvalidated until a seed and overrides are applied.
    fields: dict[str, Any]  # the setup table, not validated until a seed and overrides are applied
    # Any values: claim tables as written, checked by their claim's kind later.
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)  # claim name → its table, as written
    markers: tuple[str, ...] = ()
    adapter_from: Path | None = None  # the setup whose adapter of the same seed this one scores

    @property
    def key(self) -> str:
        """ "experiment/name", as its records are filed."""
        return f"{self.fields.get('experiment', 'adhoc')}/{self.fields.get('name', 'adhoc')}"

    def resolve(self, seed: int, overrides: Sequence[Override] = ()) -> SetupConfig:
        """The validated setup for one seed: file, then overrides, then the seed."""
        data = apply_overrides(self.fields, [*overrides, ("recipe.seed", seed)])
        return validate_setup(data, source=str(self.path))


def _fail(path: Path, where: str, problem: str) -> UserError:
    return UserError(f"{path}: {where}: {problem}")


def _markers(path: Path, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        raise _fail(
            path, "suite.markers", f'{value!r} is not a list of marker names; give e.g. markers = ["cpu_ok"]'
        )
    for marker in value:
        if marker not in MARKER_NAMES and not MULTI_GPU.match(marker):
            raise _fail(
                path,
                "suite.markers",
                f"{marker!r} is not a marker of the suite; use {', '.join(MARKER_NAMES)} or multi_gpu(n=N)",
            )
    return tuple(value)


def _suite(path: Path, table: Any) -> tuple[tuple[str, ...], Path | None]:
    if not isinstance(table, dict):
        raise _fail(
            path, SUITE_TABLE, f"{table!r} is not a table; write [suite] with {', '.join(SUITE_KEYS)}"
        )
    if unknown := sorted(set(table) - set(SUITE_KEYS)):
        raise _fail(path, f"suite.{unknown[0]}", f"not a key of [suite]; its keys: {', '.join(SUITE_KEYS)}")
    adapter = table.get("adapter_from")
    if adapter is not None and not isinstance(adapter, str):
        raise _fail(
            path, "suite.adapter_from", f"{adapter!r} is not a path; give a setup file relative to this one"
        )
    return _markers(path, table.get("markers", [])), (path.parent / adapter).resolve() if adapter else None


# Any values: claim tables as written in the setup file, checked by their claim's kind later.
def _claim_tables(path: Path, table: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(table, dict):
        raise _fail(
            path, CLAIMS_TABLE, f'{table!r} is not a table; write one [claims."NAME"] table per claim'
        )
    for name, claim in table.items():
        if not isinstance(claim, dict):
            raise _fail(
                path,
                f"claims.{name}",
                f'{claim!r} is not a claim table; write [claims."NAME"] with '
                'kind = "…" and its bounds (the flat [claims] bounds of older files moved into each claim)',
            )
    return table


def load_bench_setup(path: Path) -> BenchSetup:
    """The file's setup, claim tables and suite table; a malformed one is a one-line `UserError`."""
    data = read_config_file(path)
    claims = _claim_tables(path, data.pop(CLAIMS_TABLE, {}))
    markers, adapter = _suite(path, data.pop(SUITE_TABLE, {}))
    if adapter is not None and not adapter.is_file():
        raise _fail(
            path,
            "suite.adapter_from",
            f"{adapter.name!r} not found in {adapter.parent}; give a setup file's path relative to this one",
        )
    return BenchSetup(path=path.resolve(), fields=data, claims=claims, markers=markers, adapter_from=adapter)
