"""The contract every task keeps, and the task of a name.

A task is a module `harness/tasks/<name>/task.py` (found by `harness.catalog`, imported when first asked
for) whose module-level names are those of `Task` below: a shared signature, no class tree. Outside
`harness/tasks/<name>/`, code knows a task only through these protocols (`task_module(record.task)`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from harness import catalog
from harness.json_types import JsonObject

if TYPE_CHECKING:
    from harness.config import DataConfig
    from harness.results import Metrics, RunRecord


class Example(Protocol):
    """One question of any task: its prompt as chat messages and its gold answer."""

    @property
    def answer(self) -> str: ...

    def prompt_messages(self) -> list[dict[str, str]]: ...


class Split(Protocol):
    """A task's data split: train and test examples, where they came from, and a hash of both."""

    @property
    def source(self) -> str: ...

    @property
    def n_rows(self) -> int: ...

    @property
    def train(self) -> Sequence[Example]: ...

    @property
    def test(self) -> Sequence[Example]: ...

    @property
    def hash(self) -> str: ...


class MissReport(Protocol):
    """A task's miss analysis across runs: question categories as table rows, and as JSON."""

    @property
    def labels(self) -> tuple[str, ...]: ...

    @property
    def n_questions(self) -> int: ...

    @property
    def n_not_in_every_run(self) -> int: ...

    @property
    def rows_resolved(self) -> bool: ...

    def category_rows(self, *, shown: int, empty: str = "–") -> list[list[object]]: ...

    def to_dict(self) -> JsonObject: ...


class AnalyzeRuns(Protocol):
    """The miss analysis of several runs' predictions (`labels`: one per file); `record`, one of the runs,
    finds the test rows they were scored on (`data`: a local copy of the data to try first)."""

    def __call__(
        self,
        prediction_files: Sequence[Path],
        labels: Sequence[str],
        record: RunRecord | None,
        data: str | None = None,
    ) -> MissReport: ...


@dataclass(frozen=True)
class MetricColumn:
    """A score of a task's trained metrics that the report shows beside exact match, as a column."""

    label: str  # the column's header, also the figure's name in the report's JSON
    value: Callable[[Metrics], float | None]
    # A cell is marked when a run's trained or baseline metrics call for it (a score that may read
    # otherwise elsewhere, say); `note` explains the mark under the table.
    mark: str = ""
    is_marked: Callable[[Metrics], bool] | None = None
    note: str = ""


class Task(Protocol):
    """What a task module provides (module-level names; `self` is the module)."""

    METRICS: type[Metrics]  # its metrics model: the record's scores of this task
    COLUMNS: tuple[MetricColumn, ...]  # its scores the report shows, beyond exact match and gain
    analyze_runs: AnalyzeRuns | None  # its miss analysis; None: it has none

    def check_source(self, config: DataConfig) -> None:
        """Before any process starts: a cheap look at the data source, refusing one that cannot serve."""

    def load_split(self, config: DataConfig) -> Split:
        """The data, split and hashed."""

    def score(self, answers: Sequence[str], test: Sequence[Any]) -> JsonObject:
        """The fields of its metrics model for these answers to the test examples (of `load_split`)."""

    def score_with_rows(
        self, test: Sequence[Any], answers: Sequence[str], base_answers: Sequence[str] | None
    ) -> tuple[JsonObject, list[JsonObject]]:
        """`score`'s fields and a predictions line per question (with `index` and `exact`, and `base_exact`
        when there are base answers), from one scoring pass."""


def task_module(name: str) -> Task:
    """The task called `name` (a setup's `task`, a record's `.task`)."""
    return cast("Task", catalog.load_task(name))
