"""Semantic match: do two queries mean the same thing? Checked by running both, in the spirit of
test-suite accuracy (Zhong, Yu, Klein 2020, "Semantic Evaluation for Text-to-SQL with Distilled Test
Suites"): several small databases built from the context's schema, filled with the literals of both
queries (and their neighbours) plus seeded random values; the queries match when their results are
equal on every database. Equal results on a finite set of databases do not prove equivalence; they
make a false "match" unlikely, and a "no match" is always backed by a counter-example database.

How results are compared (as the test-suite reference implementation does): same number of columns;
column order ignored (some permutation of the prediction's columns must fit); rows compared as a bag,
or as a list only when the gold has ORDER BY; numbers equal to 9 significant digits, and a string that
is a number equals that number (`MAX(x)` on a VARCHAR column returns '71', `MAX(x + 0)` returns 71).

Decisions, and why:
- Case of string values is ignored: queries, context and data are lower-cased before running. The
  story's exact match lower-cases too, and WikiSQL's own executor compares condition values
  lower-cased, so `= "Margaret Ann"` and `= "margaret ann"` are the same answer here. (SQL keywords and
  identifiers are case-insensitive in SQLite anyway, so lower-casing only touches values.)
- '71' vs 71: values are inserted through the declared column types, exactly as real data would be,
  and SQLite's own comparison rules decide. On a VARCHAR column (TEXT affinity) `x = 71` applies the
  column's affinity to 71 and compares the text '71', so `WHERE x = "71"` and `WHERE x = 71` match —
  as a human would judge the typical WikiSQL pair. On an INTEGER column the string is converted to a
  number, so they match there too. Where SQLite itself treats them differently (no column involved,
  e.g. `COUNT(*) = '1'`), they do not match, because the real database would not either.
- Double-quoted text is a string literal unless it names a column or table: SQLite's own rule.
- No NULLs are generated: the dataset's tables have none, and `COUNT(x)` vs `COUNT(*)` then agree, as
  a human judge would for these questions.
- With ORDER BY in the gold, rows that tie on the sort key may come out in either order; that is not
  forgiven (the reference implementation does not either).
Not covered: a prediction that is right only on data we do not generate (e.g. relying on NULLs).
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

from harness.tasks.sql.sandbox import (
    DEFAULT_BUDGET_S,
    ContextError,
    QueryResult,
    Schema,
    Table,
    build_database,
    parse_schema,
    run_query,
    run_sql,
)

DEFAULT_N_DATABASES = 8
_MAX_PERMUTATIONS = 2_000

_TOKEN_RE = re.compile(
    r"""
    (?P<string>'(?:[^']|'')*')
  | (?P<dquoted>"(?:[^"]|"")*")
  | (?P<bracketed>\[[^\]]*\]|`[^`]*`)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<word>[^\W\d]\w*)
  | (?P<other>\S)
    """,
    re.VERBOSE,
)
_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_ORDER_BY_RE = re.compile(r"\border\s+by\b")


@dataclass(frozen=True)
class SemanticVerdict:
    """`match` is None when the gold does not execute (the question cannot be scored)."""

    match: bool | None
    detail: str


@dataclass(frozen=True)
class Literals:
    strings: tuple[str, ...]
    numbers: tuple[int | float, ...]


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def extract_literals(sql: str, identifiers: frozenset[str] = frozenset()) -> Literals:
    """String and number literals of `sql`; double-quoted text that names one of `identifiers`
    (lower-case) is an identifier, as SQLite resolves it. LIKE wildcards are stripped from strings."""
    strings: list[str] = []
    numbers: list[int | float] = []
    for match in _TOKEN_RE.finditer(sql):
        kind, text = match.lastgroup, match.group()
        if kind == "string" or (kind == "dquoted" and text[1:-1].lower() not in identifiers):
            value = text[1:-1].replace(text[0] * 2, text[0])
            strings.append(value)
            stripped = value.strip("%_")
            if stripped != value:
                strings.append(stripped)
            if _NUMBER_RE.fullmatch(value.strip()):
                numbers.append(_number(value.strip()))
        elif kind == "number":
            numbers.append(_number(text))
    return Literals(tuple(dict.fromkeys(strings)), tuple(dict.fromkeys(numbers)))


def _strip_strings(sql: str) -> str:
    return "".join(m.group() for m in _TOKEN_RE.finditer(sql) if m.lastgroup != "string") if "'" in sql else sql


def has_order_by(sql: str) -> bool:
    return bool(_ORDER_BY_RE.search(_strip_strings(sql.lower())))


def _affinity(decl_type: str) -> str:
    """SQLite's column affinity rules (section 3.1 of the datatype documentation)."""
    t = decl_type.upper()
    if "INT" in t:
        return "integer"
    if any(k in t for k in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if "BLOB" in t or not t:
        return "blob"
    if any(k in t for k in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "numeric"


def _pools(literals: Literals) -> tuple[list[object], list[int | float]]:
    numbers: list[int | float] = []
    for n in literals.numbers:
        # Neighbours tell `>` from `>=` and `= 5` from `= 6`.
        numbers.extend((n, n - 1, n + 1))
    values: list[object] = [*literals.strings, *numbers]
    return values, numbers


def _random_word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 6)))


def _fill(schema: Schema, literals: Literals, rng: random.Random) -> dict[str, list[tuple[object, ...]]]:
    """Rows for every table of one database. Values come from a small per-database vocabulary shared
    by all columns (so joins on ids find partners and GROUP BY finds groups) and from the literals."""
    values, numbers = _pools(literals)
    p_literal = rng.choice((0.25, 0.5, 0.8)) if values else 0.0
    small_ints = list(range(rng.randint(3, 15)))
    vocabulary = [_random_word(rng) for _ in range(rng.randint(2, 5))] + [str(rng.choice(small_ints)) for _ in range(2)]

    def cell(affinity: str) -> object:
        if affinity in ("integer", "real", "numeric"):
            if numbers and rng.random() < p_literal:
                return rng.choice(numbers)
            if affinity == "real" and rng.random() < 0.5:
                return round(rng.uniform(0, 20), 2)
            return rng.choice(small_ints)
        if rng.random() < p_literal:
            return rng.choice(values)
        return rng.choice(vocabulary)

    rows: dict[str, list[tuple[object, ...]]] = {}
    for table in schema.tables:
        affinities = [_affinity(c.decl_type) for c in table.columns]
        rows[table.name] = [tuple(cell(a) for a in affinities) for _ in range(rng.randint(1, 10))]
    return rows


def _canonical(value: object) -> object:
    if isinstance(value, str) and _NUMBER_RE.fullmatch(value.strip()):
        value = float(value)
    if isinstance(value, int | float):
        number = float(value)
        return repr(number) if not math.isfinite(number) else float(f"{number:.9g}")
    if isinstance(value, bytes):
        return ("blob", value.hex())
    return value


def _canonical_rows(result: QueryResult) -> list[tuple[object, ...]]:
    return [tuple(_canonical(v) for v in row) for row in result.rows]


def _column_permutations(gold: list[tuple[object, ...]], pred: list[tuple[object, ...]], n: int):
    """Permutations of the prediction's columns whose value bags fit the gold's, identity first."""
    def signature(rows: list[tuple[object, ...]], j: int) -> Counter[object]:
        return Counter(r[j] for r in rows)

    gold_sigs = [signature(gold, j) for j in range(n)]
    pred_sigs = [signature(pred, j) for j in range(n)]
    candidates = [[k for k in range(n) if pred_sigs[k] == gold_sigs[j]] for j in range(n)]
    for j in range(n):  # identity first: the common case
        if j in candidates[j]:
            candidates[j].remove(j)
            candidates[j].insert(0, j)

    def extend(prefix: list[int]):
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for k in candidates[len(prefix)]:
            if k not in prefix:
                yield from extend([*prefix, k])

    return islice(extend([]), _MAX_PERMUTATIONS)


def results_equal(gold: QueryResult, pred: QueryResult, *, order_matters: bool) -> bool:
    """Equal as the module docstring describes: column order free, bag or list, numeric tolerance."""
    gold_rows, pred_rows = _canonical_rows(gold), _canonical_rows(pred)
    if len(gold_rows) != len(pred_rows):
        return False
    if not gold_rows:
        return True
    n = len(gold_rows[0])
    if n != len(pred_rows[0]):
        return False
    gold_bag = Counter(gold_rows) if not order_matters else None
    for perm in _column_permutations(gold_rows, pred_rows, n):
        permuted = [tuple(row[k] for k in perm) for row in pred_rows]
        if (permuted == gold_rows) if order_matters else (Counter(permuted) == gold_bag):
            return True
    return False


def _identifiers(schema: Schema) -> frozenset[str]:
    return frozenset(n.lower() for t in schema.tables for n in (t.name, *(c.name for c in t.columns)))


def compare_queries(
    pred: str,
    gold: str,
    context: str,
    *,
    seed: int = 0,
    n_databases: int = DEFAULT_N_DATABASES,
    budget_s: float = DEFAULT_BUDGET_S,
) -> SemanticVerdict:
    """Semantic match with the reason: the first database where the results differ, or why the gold
    cannot be scored."""
    gold_on_empty = run_sql(gold, context, budget_s=budget_s)
    if not gold_on_empty.is_ok:
        return SemanticVerdict(None, f"gold does not execute ({gold_on_empty.failure}): {gold_on_empty.message}")
    pred_l, gold_l, context_l = pred.lower(), gold.lower(), context.lower()
    try:
        schema = parse_schema(context_l)
    except ContextError as exc:
        return SemanticVerdict(None, f"lower-cased context does not build: {exc}")
    identifiers = _identifiers(schema)
    gold_lits, pred_lits = extract_literals(gold_l, identifiers), extract_literals(pred_l, identifiers)
    literals = Literals(
        tuple(dict.fromkeys((*gold_lits.strings, *pred_lits.strings))),
        tuple(dict.fromkeys((*gold_lits.numbers, *pred_lits.numbers))),
    )
    order_matters = has_order_by(gold_l)
    base = f"{seed}|{literals}|{_table_key(schema.tables)}"
    for i in range(n_databases):
        rng = random.Random(f"{base}|{i}")
        conn = build_database(context_l, _fill(schema, literals, rng))
        try:
            gold_result = run_query(conn, gold_l, budget_s=budget_s)
            if not gold_result.is_ok:
                return SemanticVerdict(None, f"gold fails on database {i} ({gold_result.failure}): {gold_result.message}")
            pred_result = run_query(conn, pred_l, budget_s=budget_s)
        finally:
            conn.close()
        if not pred_result.is_ok:
            return SemanticVerdict(False, f"prediction fails on database {i} ({pred_result.failure}): {pred_result.message}")
        if not results_equal(gold_result, pred_result, order_matters=order_matters):
            return SemanticVerdict(
                False,
                f"results differ on database {i}: gold {len(gold_result.rows)} rows, "
                f"prediction {len(pred_result.rows)} rows" + (", order matters" if order_matters else ""),
            )
    return SemanticVerdict(True, f"equal results on {n_databases} databases")


def _table_key(tables: Sequence[Table]) -> str:
    return ";".join(f"{t.name}({','.join(c.name for c in t.columns)})" for t in tables)


def semantic_match(
    pred: str, gold: str, context: str, *, seed: int = 0, n_databases: int = DEFAULT_N_DATABASES
) -> bool | None:
    """True when both queries give equal results on `n_databases` seeded databases built from the
    context; None when the gold does not execute (unscorable). See the module docstring."""
    return compare_queries(pred, gold, context, seed=seed, n_databases=n_databases).match
