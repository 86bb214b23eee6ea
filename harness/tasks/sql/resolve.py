"""The test rows that a run's predictions point at, read back from the data.

A predictions file names each question by a row hash and never copies it (the data's licence). Whoever
needs the text reads the split again: from the local file the record names, else from $LORABENCH_DATA,
used only when its split hash equals the record's. A hub id is never fetched here: the report must not
touch the network.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness import settings
from harness.config import DataConfig
from harness.errors import UserError
from harness.results import RunRecord
from harness.tasks.sql.data import SqlExample, load_split


@lru_cache(maxsize=8)
def _split(
    source: str, split_seed: int, test_size: int, train_size: int
) -> tuple[str, tuple[SqlExample, ...]] | None:
    config = DataConfig(source=source, split_seed=split_seed, test_size=test_size, train_size=train_size)
    try:
        split = load_split(config)
    except (UserError, OSError, ValueError):
        return None
    return split.hash, split.test


def resolve_test_rows(setup: Mapping[str, Any], split_hash: str | None) -> tuple[SqlExample, ...] | None:
    """The test rows of the run with this resolved setup and split hash, or None when no local copy of
    its data with the same split hash is at hand."""
    if not split_hash:
        return None
    try:
        data = DataConfig.model_validate(setup.get("data") or {})
    except ValidationError:
        return None
    for source in dict.fromkeys(
        c for c in (data.source, settings.DATA.get()) if c and Path(c).expanduser().is_file()
    ):
        found = _split(source, data.split_seed, data.test_size, data.train_size)
        if found is not None and found[0] == split_hash:
            return found[1]
    return None


def record_test_rows(record: RunRecord, data: str | None = None) -> tuple[SqlExample, ...] | None:
    """The test rows a record's run was scored on; `data` names a local copy to try first."""
    setup = record.setup.model_dump(mode="json")
    if data:
        setup["data"] = {**setup["data"], "source": data}
    return resolve_test_rows(setup, record.data.split_hash if record.data else None)
