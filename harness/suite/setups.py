"""Benchmark setup files: a setup (the same fields as `lorabench run` reads) plus a `[claims]` table.

The claims are the experiment's bounds (minimum gain, maximum seed spread, speedup target…). They live
beside the setup so a bound and the measurements that justify it sit in one file, but they are not
part of the setup: changing a bound re-asserts against the cached records instead of re-training.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config import Override, SetupConfig, apply_overrides, read_config_file, validate_setup
from harness.errors import ConfigError

CLAIMS_TABLE = "claims"


@dataclass(frozen=True)
class BenchSetup:
    path: Path
    fields: dict[str, Any]  # the setup table, not validated until a seed and overrides are applied
    claims: dict[str, Any] = field(default_factory=dict)

    def claim(self, name: str, default: Any = None) -> Any:
        """A bound from `[claims]`; a missing bound without a default is an error in the file, not a pass."""
        if name in self.claims:
            return self.claims[name]
        if default is None:
            raise KeyError(f"{self.path}: [claims] has no {name!r}; add it, e.g. `{name} = …`")
        return default

    def resolve(self, seed: int, overrides: Sequence[Override] = ()) -> SetupConfig:
        """The validated setup for one seed: file, then overrides, then the seed."""
        data = apply_overrides(self.fields, [*overrides, ("recipe.seed", seed)])
        return validate_setup(data, source=str(self.path))


def load_bench_setup(path: Path) -> BenchSetup:
    data = read_config_file(path)
    claims = data.pop(CLAIMS_TABLE, {})
    if not isinstance(claims, dict):
        raise ConfigError(str(path), [f"{CLAIMS_TABLE}: must be a table of bounds, got {claims!r}"])
    return BenchSetup(path=path, fields=data, claims=claims)
