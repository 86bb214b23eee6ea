"""Which installed distribution provides which top-level package, read once per install (issue 28).

transformers and TRL each build that map when they are imported
(`importlib.metadata.packages_distributions()`, module level in transformers/utils/import_utils.py and
trl/import_utils.py). The call opens the metadata of every installed distribution, and the RECORD file of
each that ships no top_level.txt (the nvidia-*, jax and torch wheels among them): on the lent H200
machine's image (about 200 distributions, gVisor's file system) two calls took 5.1 s of one Exp A seed
under cProfile (the 2026-12-01 run (606e6e1), reports/benchmarks/h200/logs-2026-12-01-simplification/lease1/profile_inline_exp_a_3407.txt);
here, 79 distributions, about 0.2 s a call.

So the trainer child answers that call from a file under lorabench's cache, written the first time and
used again while the installation is unchanged: the key holds each import-path folder's modification time
(installing, upgrading or removing a distribution adds or removes its .dist-info folder there, which
changes it), the interpreter and the import path itself. Within one process the map is computed once.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from harness import atomic

Distributions = Mapping[str, list[str]]


def installation_key(path: list[str] | None = None) -> str:
    """What the map depends on: the interpreter, the import path, and each of its folders' mtime."""
    entries = sys.path if path is None else path
    parts = [sys.version, sys.prefix]
    for entry in entries:
        try:
            stat = os.stat(entry or ".")
        except OSError:
            parts.append(f"{entry}:absent")
            continue
        parts.append(f"{entry}:{stat.st_ino}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cached_map(cache_file: Path, compute: Callable[[], Distributions], key: str) -> Distributions:
    """The map stored in `cache_file` under `key`, or computed and stored there. A cache that cannot be
    read or written costs the computation, never the run."""
    try:
        stored = json.loads(cache_file.read_text(encoding="utf-8"))
        if stored.get("key") == key:
            return stored["distributions"]
    except (OSError, ValueError, AttributeError, KeyError):
        pass
    fresh = compute()
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(cache_file, json.dumps({"key": key, "distributions": fresh}))
    except OSError:
        pass
    return fresh


def remember_distributions(cache_root: Path) -> None:
    """From now on in this process, `importlib.metadata.packages_distributions()` answers from the cache
    (callers that look it up through the module, as transformers and TRL do)."""
    original = importlib.metadata.packages_distributions
    cache_file = cache_root / "distributions" / f"{sys.implementation.cache_tag}.json"

    @functools.cache
    def packages_distributions() -> Distributions:
        return cached_map(cache_file, lambda: dict(original()), installation_key())

    # Each caller gets its own copy: the map is a plain dict, and a caller may change what it got.
    importlib.metadata.packages_distributions = lambda: {
        k: list(v) for k, v in packages_distributions().items()
    }
