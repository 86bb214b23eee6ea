"""Semantic match: do two queries mean the same thing? Checked by running both on small databases
built from the context's schema, the way test-suite accuracy does (Zhong, Yu, Klein 2020, "Semantic
Evaluation for Text-to-SQL with Distilled Test Suites"), per question and in milliseconds:

1. the gold's distilled suite (`suite`): databases kept because they tell the gold apart from its
   near-miss mutants (an operator changed, a literal off by one or by a half, a condition dropped or
   added, `OR col IS NULL`, LIMIT, OFFSET, DISTINCT, ORDER BY direction, a column or aggregate
   swapped, COUNT(*) vs COUNT(col), AVG vs SUM/COUNT(*), ...);
2. databases drawn for this answer, aimed at the literals of both queries, so that a mistake no
   mutant anticipated still meets data that shows it.

Data is drawn with NULLs (in most databases a copy of a row with a NULL in each column in turn, so
a NULL sits in every column the gold reads, in a row the rest of the query lets through), negative
numbers, fractions beside each numeric literal, text in numeric columns and numbers in text columns,
duplicated rows, near-miss copies of rows, empty tables, and more rows than the queries' LIMIT +
OFFSET or HAVING COUNT threshold, some with values used nowhere else (no ties) (`fill`). A query whose result could depend on the order
tables are scanned in (LIMIT, ORDER BY, GROUP BY, MIN/MAX...) runs in both scan orders; the answer
matches when, on every database and in every order run, its result equals one of the gold's (see
`suite` for why). Equal results on finitely many databases do not prove equivalence; they make a
false "match" unlikely (`dev/bench_semantic.py` measures how unlikely), and a "no match" is
always backed by a counter-example database.

How results are compared: `compare` (column order free, bag unless the gold's outer query sorts,
numbers to 9 significant digits, '71' equals 71, NULL equals NULL).

Decisions, and why:
- Case of string values is ignored: queries, context and data are lower-cased before running. The
  story's exact match lower-cases too, and WikiSQL's own executor compares condition values
  lower-cased, so `= "Margaret Ann"` and `= "margaret ann"` are the same answer here.
- '71' vs 71: values are inserted through the declared column types, as real data would be, and
  SQLite's own comparison rules decide. On a VARCHAR column `x = 71` compares the text '71', so
  `WHERE x = "71"` and `WHERE x = 71` match, as a human would judge the typical WikiSQL pair. Where
  SQLite itself treats them differently (no column involved: `COUNT(*) = '1'`), they do not match.
- Double-quoted text is a string literal unless it names a column or table: SQLite's own rule.
- NULLs are generated, so COUNT(col) and COUNT(*) differ (they do on any table with a NULL in col),
  and so do `x != 5` and `NOT x IS 5`, AVG(x) and SUM(x) / COUNT(*), `x > 5` and `x > 5 OR x IS
  NULL`. Before issue #18 no NULLs were drawn and such pairs matched; issue #27 measured the rest on
  databases from another generator (`dev/bench_matcher_kinds.py`).
- With ORDER BY in the gold's outer query, order counts, except among rows the gold itself leaves
  in any order: ties under its sort keys (`ordering`: under LIMIT, any of the tied rows will do), and
  whatever changes with the scan order.
Not covered: a prediction that is wrong only on data unlike anything drawn (huge values, long text,
many rows); answers that run past the per-answer budget (SQLite VM instructions, `budget`) or
build a value over the sandbox's 1,000-byte cap count as wrong.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from harness.tasks.sql.budget import ANSWER_INSTRUCTIONS, Budget
from harness.tasks.sql.compare import answer_size, results_equal
from harness.tasks.sql.sandbox import ContextError, QueryResult
from harness.tasks.sql.sqltext import tokenize, top_level_order_by
from harness.tasks.sql.suite import Suite, SuiteDatabase, Workbench, distil, draw

__all__ = [
    "DEFAULT_N_DATABASES",
    "Literals",
    "SemanticVerdict",
    "compare_queries",
    "extract_literals",
    "gold_failure",
    "gold_suite",
    "has_order_by",
    "results_equal",
    "semantic_match",
]

DEFAULT_N_DATABASES = 12
# Databases drawn for each answer on top of the gold's suite (which is at most the rest).
N_FRESH_DATABASES = 2


@dataclass(frozen=True)
class SemanticVerdict:
    """`match` is None when the gold cannot be scored (it does not execute). `clock_stopped`: the
    CPU-time safety net stopped some of the work (the answer's or its suite's), so this verdict may
    differ on another machine; every other verdict is the same on any machine, busy or not."""

    match: bool | None
    detail: str
    clock_stopped: bool = False


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
    for token in tokenize(sql):
        if token.kind == "string" or (
            token.kind == "dquoted" and token.text[1:-1].lower() not in identifiers
        ):
            value = token.text[1:-1].replace(token.text[0] * 2, token.text[0])
            strings.append(value)
            stripped = value.strip("%_")
            if stripped != value:
                strings.append(stripped)
            with contextlib.suppress(ValueError):
                numbers.append(_number(value.strip()))
        elif token.kind == "number":
            numbers.append(_number(token.text))
    return Literals(tuple(dict.fromkeys(strings)), tuple(dict.fromkeys(numbers)))


def has_order_by(sql: str) -> bool:
    """True when the outermost query sorts (ORDER BY in a subquery does not order the result)."""
    return top_level_order_by(tokenize(sql))


def gold_suite(
    gold: str, context: str, *, seed: int = 0, n_databases: int = DEFAULT_N_DATABASES, distilled: bool = True
) -> Suite:
    """The gold's distilled suite (cached), within its own instruction budget
    (`budget.DISTIL_INSTRUCTIONS`), never an answer's."""
    n_fresh = min(N_FRESH_DATABASES, n_databases - 1) if n_databases > 1 else 0
    max_databases = max(1, n_databases - n_fresh)
    return distil(gold.lower(), context.lower(), seed, max_databases=max_databases, use_mutants=distilled)


def gold_failure(
    gold: str, context: str, *, seed: int = 0, n_databases: int = DEFAULT_N_DATABASES
) -> str | None:
    """Why the gold cannot be scored, or None (distils and caches the gold's suite)."""
    return gold_suite(gold, context, seed=seed, n_databases=n_databases).failure


def _failed(where: str, result: QueryResult) -> SemanticVerdict:
    return SemanticVerdict(False, f"prediction fails on {where} ({result.failure}): {result.message}")


def compare_queries(
    pred: str,
    gold: str,
    context: str,
    *,
    seed: int = 0,
    n_databases: int = DEFAULT_N_DATABASES,
    budget: Budget | None = None,
    pred_on_empty: QueryResult | None = None,
    distilled: bool = True,
) -> SemanticVerdict:
    """Semantic match with the reason: the first database where the results differ, or why the gold
    cannot be scored. `budget` bounds the comparison's SQL (a fresh `ANSWER_INSTRUCTIONS` one when
    None; scoring passes the answer's, already charged with its run on the empty database);
    `pred_on_empty` is the prediction's result on the empty database when the caller already ran it
    (scoring's `executes`), so it is not run twice. `distilled=False` takes the first databases drawn
    instead of distilled ones (an ablation for the benchmark)."""
    suite = gold_suite(gold, context, seed=seed, n_databases=n_databases, distilled=distilled)
    budget = Budget(ANSWER_INSTRUCTIONS) if budget is None else budget
    verdict = compare_on_suite(
        pred, gold, context, suite, n_databases - len(suite.databases), seed, budget, pred_on_empty
    )
    if budget.net_fired or suite.clock_stopped:
        return SemanticVerdict(verdict.match, verdict.detail + _NET_NOTE, clock_stopped=True)
    return verdict


_NET_NOTE = " [the CPU-time safety net fired: this verdict depends on the machine]"


def compare_on_suite(
    pred: str,
    gold: str,
    context: str,
    suite: Suite,
    n_fresh: int,
    seed: int,
    budget: Budget,
    pred_on_empty: QueryResult | None = None,
) -> SemanticVerdict:
    """`compare_queries` on a given suite (the benchmark's oracle distils a bigger one) and `n_fresh`
    databases drawn for this pair, within `budget`."""
    pred_l, gold_l, context_l = pred.lower(), gold.lower(), context.lower()
    if suite.failure is not None:
        return SemanticVerdict(None, suite.failure)
    if pred_on_empty is not None and not pred_on_empty.is_ok:
        return _failed("the empty database", pred_on_empty)
    try:
        bench = Workbench(context_l)
    except ContextError as exc:  # it built for the suite; only a memory failure gets here
        return SemanticVerdict(False, f"databases could not be built again: {exc}")
    with bench:
        if pred_on_empty is None:
            on_empty = bench.run(pred_l, budget)
            if not on_empty.is_ok:
                return _failed("the empty database", on_empty)
        for k, db in enumerate(suite.databases):
            bench.load(db.rows)
            outcome = bench.check(pred_l, db, suite.order_matters, budget)
            if outcome is not None:
                return _differs(outcome, f"distilled database {k}", db, suite.order_matters)
        used = len(suite.databases)
        for j in range(n_fresh):
            rows = draw(context_l, [gold_l, pred_l], f"{seed}|fresh|{gold_l}|{pred_l}|{context_l}", j + 1)
            bench.load(rows)
            db = bench.gold_database(rows, gold_l, budget, order_matters=suite.order_matters)
            if isinstance(db, QueryResult):
                continue  # the gold is slow or fails on this drawing: no evidence either way
            outcome = bench.check(pred_l, db, suite.order_matters, budget)
            if outcome is not None:
                return _differs(outcome, f"database {j} drawn for this answer", db, suite.order_matters)
            used += 1
    told = suite.n_mutants - len(suite.survivors)
    return SemanticVerdict(
        True,
        f"equal results on {used} databases ({len(suite.databases)} distilled, telling the gold from "
        f"{told} of {suite.n_mutants} mutants)"
        + (" (suite cut short by its instruction budget)" if suite.truncated else ""),
    )


def _differs(outcome: QueryResult, where: str, db: SuiteDatabase, order_matters: bool) -> SemanticVerdict:
    if not outcome.is_ok:
        return _failed(where, outcome)
    return SemanticVerdict(
        False,
        f"results differ on {where}: gold {answer_size(db.gold[0])} rows, prediction {len(outcome.rows)} rows"
        + (", order matters" if order_matters else ""),
    )


def semantic_match(
    pred: str, gold: str, context: str, *, seed: int = 0, n_databases: int = DEFAULT_N_DATABASES
) -> bool | None:
    """True when both queries give equal results on the gold's distilled databases and on databases
    drawn for this pair; None when the gold does not execute (unscorable). See the module docstring."""
    return compare_queries(pred, gold, context, seed=seed, n_databases=n_databases).match
