"""The tasks this lorabench has: found by folder, each loaded only when asked for.

A task is a package `harness/tasks/<name>/` holding `about.py` (DEFAULT_SOURCE, and IS_DEFAULT = True in
exactly one task; imports nothing, the setup's validation reads it), `metrics.py` (METRICS, a subclass
of `harness.results.Metrics` that validates a record's scores) and `task.py` (the task as
`harness.tasks.registry.Task` says). This module imports no task's code and no other harness module, so
`harness.config` and `harness.results` may read it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.resources
import pkgutil
from collections.abc import Mapping
from types import ModuleType
from typing import Any

PACKAGE = "harness.tasks"


class UnknownTask(ValueError):
    def __init__(self, name: object) -> None:
        super().__init__(f"task {name!r} is not a task of this lorabench (one of {', '.join(task_names())})")


@functools.cache
def task_names() -> tuple[str, ...]:
    """Every task, sorted: each sub-package of harness/tasks that has a task.py."""
    folder = importlib.resources.files(PACKAGE)
    found = pkgutil.iter_modules(importlib.import_module(PACKAGE).__path__)
    return tuple(sorted(m.name for m in found if m.ispkg and folder.joinpath(m.name, "task.py").is_file()))


def _about(name: str) -> ModuleType:
    if name not in task_names():
        raise UnknownTask(name)
    return importlib.import_module(f"{PACKAGE}.{name}.about")


@functools.cache
def default_task() -> str:
    """The task a setup runs when it names none: the one whose about.py says IS_DEFAULT = True."""
    marked = [name for name in task_names() if getattr(_about(name), "IS_DEFAULT", False)]
    if len(marked) != 1:
        raise RuntimeError(f"exactly one task must set IS_DEFAULT = True in its about.py; found {marked}")
    return marked[0]


def default_source(name: str) -> str:
    """The data a setup of task `name` reads when it names none."""
    source: str = _about(name).DEFAULT_SOURCE
    return source


def metrics_model(name: str) -> Any:
    """Task `name`'s metrics model (a `harness.results.Metrics` subclass; typed Any here, as this module
    may not import the record it serves)."""
    _about(name)
    return importlib.import_module(f"{PACKAGE}.{name}.metrics").METRICS


def load_task(name: str) -> ModuleType:
    """Task `name`'s task.py (`harness.tasks.registry.task_module` gives it typed)."""
    _about(name)
    return importlib.import_module(f"{PACKAGE}.{name}.task")


def task_of(setup: Mapping[str, Any]) -> str:
    """The task of a setup as a record holds it; a setup that names none ran the default task."""
    name = setup.get("task")
    return name if isinstance(name, str) and name else default_task()
