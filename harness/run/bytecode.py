"""Compiled bytecode for the trainer child where the environment forbids writing it (issue 28).

Python images often set PYTHONDONTWRITEBYTECODE=1; the lent H200 machine's does, and its torch has no
`__pycache__`: every process there compiles every module it imports from source. Measured on that machine
(the 2026-12-01 run (606e6e1), `import torch, transformers, peft` in a fresh process, n = 2 each): 14.4 and 12.1 s as the
machine is set; with the bytecode cached under a prefix, 22.6 s the first time (compiling and writing 96 MB)
and 8.0 s after. Under cProfile one Exp A seed run in one process (`--inline`) compiled 2,117 modules from
source: 7.9 s of `compile`.

So when writing bytecode is off and the installed torch holds none beside its sources, the child writes and
reads its bytecode under lorabench's cache (PYTHONPYCACHEPREFIX): the sources and site-packages stay as
they are. Where bytecode already sits beside the sources (a plain pip install, our images) nothing changes:
a prefix would hide it. A prefix the user set is theirs (PYTHONPYCACHEPREFIX: the folder they chose).
The `lorabench` command applies the same rule to its own process and everything it starts
(`cache_this_process`): the suite's pytest and its workers, the scorecards' matplotlib, the run's parent.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping
from pathlib import Path

WRITE_OFF = "PYTHONDONTWRITEBYTECODE"
PREFIX = "PYTHONPYCACHEPREFIX"


def compiled_beside_sources(package: str = "torch") -> bool:
    """Whether `package` (found, not imported) has this interpreter's bytecode in its `__pycache__`."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        return True  # nothing to find: nothing to gain
    cache = Path(spec.origin).parent / "__pycache__"
    return any(cache.glob(f"*.{sys.implementation.cache_tag}.pyc"))


def child_bytecode_env(env: Mapping[str, str], cache_root: Path, *, probe: str = "torch") -> dict[str, str]:
    """`env` for the trainer child, with a bytecode cache under `cache_root` when the rule above says so
    (`probe`: the installed package whose `__pycache__` tells whether bytecode was compiled at install)."""
    out = dict(env)
    if not out.get(WRITE_OFF) or out.get(PREFIX) or compiled_beside_sources(probe):
        return out
    del out[WRITE_OFF]
    out[PREFIX] = str(cache_root / "bytecode" / sys.implementation.cache_tag)
    return out


def cache_this_process(cache_root: Path, *, probe: str = "torch") -> None:
    """This process's later imports, and every process it starts, write and read their bytecode under
    `cache_root` where `child_bytecode_env`'s rule says so; elsewhere nothing changes."""
    prefix = child_bytecode_env(os.environ, cache_root, probe=probe).get(PREFIX)
    if prefix is None or prefix == os.environ.get(PREFIX):
        return
    os.environ.pop(WRITE_OFF, None)
    os.environ[PREFIX] = prefix
    sys.dont_write_bytecode = False  # the flags the two variables set at start, which imports read each time
    sys.pycache_prefix = prefix
