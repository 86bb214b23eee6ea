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

from harness.tasks.sql.ordering import Blocks
from harness.tasks.sql.sandbox import QueryResult

_MAX_PERMUTATIONS = 2_000
_NUMBER_START = frozenset("0123456789+-. \t\n")
_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")

Rows = tuple[tuple[object, ...], ...]


def _canonical(value: object) -> object:
    if type(value) is int and -(10**9) < value < 10**9:  # exact in 9 digits: the common case, fast
        return float(value)
    if isinstance(value, str) and value[:1] in _NUMBER_START and _NUMBER_RE.fullmatch(value.strip()):
        value = float(value)
    if isinstance(value, int | float):
        number = float(value)
        return repr(number) if not math.isfinite(number) else float(f"{number:.9g}")
    if isinstance(value, bytes):
        return ("blob", value.hex())
    return value


def canonical_rows(result: QueryResult) -> Rows:
    return tuple(tuple(_canonical(v) for v in row) for row in result.rows)


def _permutations(candidates: list[list[int]]) -> Iterator[tuple[int, ...]]:
    """Orders of the prediction's columns where gold column j takes one of `candidates[j]`, identity
    first (the common case), at most _MAX_PERMUTATIONS of them."""
    n = len(candidates)
    candidates = [sorted(c, key=lambda k, j=j: k != j) for j, c in enumerate(candidates)]

    def extend(prefix: list[int]) -> Iterator[tuple[int, ...]]:
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for k in candidates[len(prefix)]:
            if k not in prefix:
                yield from extend([*prefix, k])

    return islice(extend([]), _MAX_PERMUTATIONS)


def _column_permutations(gold: Rows, pred: Rows, n: int) -> Iterator[tuple[int, ...]]:
    """Permutations of the prediction's columns whose value bags fit the gold's, identity first."""
    gold_sigs = [Counter(r[j] for r in gold) for j in range(n)]
    pred_sigs = [Counter(r[j] for r in pred) for j in range(n)]
    return _permutations([[k for k in range(n) if pred_sigs[k] == gold_sigs[j]] for j in range(n)])


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


def _fits_blocks(gold: Blocks, pred: Rows) -> bool:
    if len(pred) != gold.n_rows:
        return False
    if not pred:
        return True
    n = len(pred[0])
    gold_rows = [r for window, whole in gold.blocks for r in (whole or window)]
    if any(len(r) != n for r in gold_rows[:1]):
        return False
    # Pred column k may stand for gold column j only if its values all occur there.
    gold_values = [{r[j] for r in gold_rows} for j in range(n)]
    pred_values = [{r[k] for r in pred} for k in range(n)]
    candidates = [[k for k in range(n) if pred_values[k] <= gold_values[j]] for j in range(n)]
    return any(gold.fits([tuple(row[k] for k in perm) for row in pred]) for perm in _permutations(candidates))


Answer = Rows | Blocks


def answer_size(answer: Answer) -> int:
    return answer.n_rows if isinstance(answer, Blocks) else len(answer)


def accepted(golds: Sequence[Answer], pred: Rows, *, order_matters: bool) -> bool:
    """`pred` equals one of the gold's answers: its result in each scan order (where they differ, the
    gold leaves part of its answer to chance, and each is right), as blocks of tied rows when sorted
    (`ordering`)."""
    return any(
        _fits_blocks(g, pred) if isinstance(g, Blocks) else rows_equal(g, pred, order_matters=order_matters)
        for g in golds
    )
