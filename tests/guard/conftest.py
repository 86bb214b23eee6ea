"""The guard tests' fixtures, from `guardlib` (a uniquely named module: several test folders have a
conftest, so `from conftest import` would depend on which one pytest imported last)."""

from guardlib import hermetic, veth  # ruff: ignore[unused-import]  (fixtures)
