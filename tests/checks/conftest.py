"""The checks' fixtures, from `checkslib` (a uniquely named module: several test folders have a conftest,
so `from conftest import` would depend on which one pytest imported last)."""

from checkslib import _scratch_cwd, _seeded_run, examples, runtime, shared_examples, smollm2, tiny  # ruff: ignore[unused-import]  (fixtures)
