"""Loaded by every Python process of a hostile case (on its PYTHONPATH): notes in $HOSTILE_SPY_FILE any
load of a model's weights (transformers' `from_pretrained` of a model, lorabench's GGUF dequantization),
so the table asserts that a refused input loaded nothing, not that it answered fast."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from typing import Any

WATCHED = {
    "transformers.modeling_utils": ("PreTrainedModel", "from_pretrained"),
    "harness.models": (None, "_dequantize_into"),
}


def _note(what: str) -> None:
    with open(os.environ["HOSTILE_SPY_FILE"], "a", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()} {what}\n")


def _patch(module: Any, owner_name: str | None, attr: str) -> None:
    owner = getattr(module, owner_name) if owner_name else module
    real = getattr(owner, attr)
    if owner_name:  # a classmethod: keep it one, called on the class it is called on
        function = real.__func__

        def spy_method(cls: Any, *args: Any, **kwargs: Any) -> Any:
            _note(f"{cls.__name__}.{attr}")
            return function(cls, *args, **kwargs)

        setattr(owner, attr, classmethod(spy_method))
    else:

        def spy(*args: Any, **kwargs: Any) -> Any:
            _note(f"{module.__name__}.{attr}")
            return real(*args, **kwargs)

        setattr(owner, attr, spy)


class _Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in WATCHED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _patch(module, *WATCHED[name])

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if os.environ.get("HOSTILE_SPY_FILE"):
    sys.meta_path.insert(0, _Watch())
