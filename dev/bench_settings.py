"""Reading one environment variable at call time: `harness.settings` against a pydantic-settings model
built per read (the way to read at call time with it), over the same variables lorabench reads.

    pip install --target /tmp/ps --no-deps pydantic-settings python-dotenv   # not a lorabench dependency
    PYTHONPATH=.:/tmp/ps python dev/bench_settings.py [--reads 2000]

Prints the time per read of each (best of 5 runs of --reads reads, so a busy shared machine counts
least) and their ratio, then what pydantic-settings does with a bad value of a variable the read does
not ask for. The figure is quoted in harness/settings.py's docstring.
"""

from __future__ import annotations

import argparse
import os
import timeit
from typing import Any

from pydantic_settings import BaseSettings, SettingsConfigDict

from harness import settings


def model_of_lorabench_settings() -> type[BaseSettings]:
    """A BaseSettings with one optional text field per variable lorabench reads (no parsing: the cheapest)."""
    names = [
        s.name.removeprefix(settings.PREFIX).lower()
        for s in settings.REGISTRY.values()
        if s.read_by == "lorabench"
    ]
    namespace: dict[str, Any] = {"__annotations__": dict.fromkeys(names, str | None), **dict.fromkeys(names)}
    namespace["model_config"] = SettingsConfigDict(env_prefix=settings.PREFIX, extra="ignore")
    return type("LorabenchSettings", (BaseSettings,), namespace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=2000)
    n = parser.parse_args().reads
    model = model_of_lorabench_settings()
    os.environ[settings.MEM_CAP.name] = "4g"
    ours = min(timeit.repeat(settings.MEM_CAP.get, number=n, repeat=5)) / n
    theirs = min(timeit.repeat(lambda: model().mem_cap, number=n, repeat=5)) / n  # type: ignore[attr-defined]
    print(f"{len(model.model_fields)} variables, {n} reads x 5: harness.settings {ours * 1e6:.1f} µs/read; "
          f"pydantic-settings model per read {theirs * 1e6:.1f} µs/read ({theirs / ours:.0f}x)")  # fmt: skip

    class Typed(BaseSettings):
        model_config = SettingsConfigDict(env_prefix=settings.PREFIX, extra="ignore")
        node: int = 0
        cache: str = "~/.cache/lorabench"

    os.environ[settings.NODE.name] = "first"
    try:
        print("cache with a bad NODE set:", Typed().cache)
    except ValueError as exc:  # pydantic's ValidationError
        print(f"cache with a bad NODE set: refused ({str(exc).splitlines()[0]}: {str(exc).splitlines()[1]})")


if __name__ == "__main__":
    main()
