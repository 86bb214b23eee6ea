"""When two query results count as equal, as the test-suite reference implementation decides: same
number of columns; column order ignored (some permutation of the prediction's columns must fit);
rows compared as a bag, or as a list when the gold's outermost query has ORDER BY; numbers equal to
9 significant digits, and a string that is a number equals that number (`MAX(x)` on a VARCHAR column
returns '71', `MAX(x + 0)` returns 71); NULL equals NULL.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import islice

from harness.tasks.sql.sandbox import QueryResult

_MAX_PERMUTATIONS = 2_000
_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")

Rows = tuple[tuple[object, ...], ...]


def _canonical(value: object) -> object:
    if isinstance(value, str) and _NUMBER_RE.fullmatch(value.strip()):
        value = float(value)
    if isinstance(value, int | float):
        number = float(value)
        return repr(number) if not math.isfinite(number) else float(f"{number:.9g}")
    if isinstance(value, bytes):
        return ("blob", value.hex())
    return value


def canonical_rows(result: QueryResult) -> Rows:
    return tuple(tuple(_canonical(v) for v in row) for row in result.rows)


def _column_permutations(gold: Rows, pred: Rows, n: int) -> Iterator[tuple[int, ...]]:
    """Permutations of the prediction's columns whose value bags fit the gold's, identity first."""
    gold_sigs = [Counter(r[j] for r in gold) for j in range(n)]
    pred_sigs = [Counter(r[j] for r in pred) for j in range(n)]
    candidates = [[k for k in range(n) if pred_sigs[k] == gold_sigs[j]] for j in range(n)]
    for j in range(n):  # identity first: the common case
        if j in candidates[j]:
            candidates[j].remove(j)
            candidates[j].insert(0, j)

    def extend(prefix: list[int]) -> Iterator[tuple[int, ...]]:
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for k in candidates[len(prefix)]:
            if k not in prefix:
                yield from extend([*prefix, k])

    return islice(extend([]), _MAX_PERMUTATIONS)


def rows_equal(gold: Rows, pred: Rows, *, order_matters: bool) -> bool:
    """Equal canonical rows, as the module docstring describes."""
    if len(gold) != len(pred):
        return False
    if not gold:
        return True
    n = len(gold[0])
    if n != len(pred[0]):
        return False
    if gold == pred:
        return True
    gold_bag = Counter(gold) if not order_matters else None
    for perm in _column_permutations(gold, pred, n):
        permuted = [tuple(row[k] for k in perm) for row in pred]
        if (permuted == list(gold)) if order_matters else (Counter(permuted) == gold_bag):
            return True
    return False


def results_equal(gold: QueryResult, pred: QueryResult, *, order_matters: bool) -> bool:
    """Equal results as the module docstring describes (a size check first: a huge prediction is not
    converted only to be found too long)."""
    if len(gold.rows) != len(pred.rows):
        return False
    return rows_equal(canonical_rows(gold), canonical_rows(pred), order_matters=order_matters)


def accepted(golds: Sequence[Rows], pred: Rows, *, order_matters: bool) -> bool:
    """`pred` equals one of the gold's results (the gold run in each scan order: where it differs, the
    gold leaves part of its answer to chance, and each of its answers is right)."""
    return any(rows_equal(g, pred, order_matters=order_matters) for g in golds)
