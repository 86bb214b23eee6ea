"""A distilled test suite for one gold query (Zhong, Yu, Klein 2020, "Semantic Evaluation for Text-to-SQL
with Distilled Test Suites"), per question and in milliseconds: databases are drawn (`fill`) until every
near-miss variant of the gold (`mutants`) gives another result than the gold on one of them, or the budget
is spent; a database is kept when it tells apart a mutant no earlier one did.

Each database holds the gold's result in both table-scan orders (`set_reverse_scan`): where they differ
the gold leaves part of its answer to chance, and either result is right. Mutants proved equivalent by a
rule are not searched for; those not told apart when the budget runs out are `survivors` (equivalent, or
different only on data the drawing did not produce).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from harness.tasks.sql.budget import DISTIL_INSTRUCTIONS, Budget
from harness.tasks.sql.compare import Answer, accepted, answer_size, canonical_rows
from harness.tasks.sql.fill import (
    Rows,
    collect_hints,
    fill,
    identifiers_of,
    perturb,
    profile,
    siblings_of,
    tables_of,
)
from harness.tasks.sql.mutants import RULE_KINDS, Variant, equivalence_rule, mutants
from harness.tasks.sql.ordering import blocks_of, keyed_query
from harness.tasks.sql.sandbox import (
    ContextError,
    Failure,
    QueryResult,
    Schema,
    ScratchDatabase,
    parse_schema,
    run_query,
)
from harness.tasks.sql.sqltext import tokenize, top_level_order_by

DEFAULT_CANDIDATES = 30
DEFAULT_LOCAL_STEPS = 100
# A search that told no mutant apart in this many tries in a row stops: what is left is most likely
# equivalent. A trade measured on the first 300 Spider rows (bench_semantic.py --limit 300): patience
# 40 told apart 98.4% of mutants against 98.1% at 30, for about 15% more scoring time.
PATIENCE = 30
MIN_DATABASES = 3
DEFAULT_MAX_DATABASES = 10
# Distilling one gold is bounded by counts, never by the clock, so that a suite is the same on a busy
# machine: at most `candidates + local_steps` databases tried, and `budget.DISTIL_INSTRUCTIONS` SQLite
# instructions in all. A gold that is slow on tiny tables gets a shorter suite (`truncated`) rather
# than stalling the scoring; normal golds use well under a tenth of it.


@dataclass(frozen=True)
class SuiteDatabase:
    rows: Mapping[str, Sequence[tuple[object, ...]]]
    gold: tuple[Answer, ...]  # the gold's answers, one per distinct scan-order result
    raw: tuple[tuple[object, ...], ...] = ()  # the gold's rows as SQLite gave them (forward scan)


@dataclass(frozen=True)
class Suite:
    """`failure` says why the gold cannot be scored (then there are no databases)."""

    databases: tuple[SuiteDatabase, ...] = ()
    order_matters: bool = False
    n_mutants: int = 0  # mutants that execute and are not equivalent by a rule
    survivors: tuple[Variant, ...] = ()
    equivalent: tuple[tuple[Variant, str], ...] = ()
    drawn: int = 0
    truncated: bool = False  # the instruction budget ran out before the search ended
    clock_stopped: bool = False  # the CPU-time safety net cut it short: this suite depends on the machine
    failure: str | None = None
    kills: tuple[int, ...] = field(default=())  # mutants first told apart by each kept database
    instructions: int = 0  # SQLite VM instructions the distillation ran


# Words that can make a result depend on the order rows are scanned in. A query without any of them
# gives the same bag of rows in either order, so its second run is skipped (unless order matters).
_ORDER_SENSITIVE = frozenset({"limit", "offset", "order", "group", "min", "max", "group_concat", "over"})


@lru_cache(maxsize=8192)
def scan_sensitive(sql: str) -> bool:
    return any(t.low in _ORDER_SENSITIVE for t in tokenize(sql) if t.kind == "word")


class Workbench:
    """A `ScratchDatabase` of one context with the gold-versus-query checks on it."""

    def __init__(self, context: str) -> None:
        self.bed = ScratchDatabase(context)

    def __enter__(self) -> Workbench:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.bed.close()

    def load(self, rows: Mapping[str, Sequence[Sequence[object]]] | None) -> None:
        self.bed.load(rows)

    def _runs(self, sql: str, both: bool) -> tuple[sqlite3.Connection, ...]:
        return (self.bed.forward, self.bed.backward) if both else (self.bed.forward,)

    def run(self, sql: str, budget: Budget) -> QueryResult:
        return run_query(self.bed.forward, sql, budget=budget)

    def gold_database(
        self, rows: Rows, sql: str, budget: Budget, order_matters: bool
    ) -> SuiteDatabase | QueryResult:
        """The loaded `rows` with the gold's answers on them, or the gold's failure."""
        answers = self.gold_results(sql, budget, order_matters)
        if isinstance(answers, QueryResult):
            return answers
        return SuiteDatabase(rows, answers, self._raw)

    def gold_results(self, sql: str, budget: Budget, order_matters: bool) -> tuple[Answer, ...] | QueryResult:
        """The gold's answers in both scan orders (one when they agree; sorted ones as blocks of tied
        rows where `ordering` can tell the ties), or its failure."""
        answers: list[Answer] = []
        self._raw: tuple[tuple[object, ...], ...] = ()
        keyed = keyed_query(sql) if order_matters else None
        for conn in self._runs(sql, order_matters or scan_sensitive(sql)):
            result = run_query(conn, sql, budget=budget)
            if not result.is_ok:
                return result
            if conn is self.bed.forward:
                self._raw = result.rows
            answer: Answer = canonical_rows(result)
            if keyed is not None:
                with_keys = run_query(conn, keyed.sql, budget=budget)
                width = len(answer[0]) + keyed.n_keys if answer else None
                if with_keys.is_ok and (width is None or all(len(r) == width for r in with_keys.rows[:1])):
                    blocks = blocks_of(canonical_rows(with_keys), keyed)
                    if blocks.fits(answer):  # the keyed query is checked against the gold itself
                        answer = blocks
            if answer not in answers:
                answers.append(answer)
        return tuple(answers)

    def check(self, sql: str, db: SuiteDatabase, order_matters: bool, budget: Budget) -> QueryResult | None:
        """None when `sql` gives one of the gold's results in both scan orders; else the result that
        does not (a failure, or rows that differ)."""
        for conn in self._runs(sql, order_matters or scan_sensitive(sql)):
            result = run_query(conn, sql, budget=budget)
            if result.is_ok and result.rows == db.raw:
                continue  # the gold's own rows, as they came: no need to canonicalise
            if not result.is_ok or not accepted(db.gold, canonical_rows(result), order_matters=order_matters):
                return result
        return None


def draw(schema_context: str, hints_from: Sequence[str], key: str, index: int) -> Rows:
    """Rows of database `index` for a context, aimed at the literals of `hints_from`; `key` seeds it."""
    schema = parse_schema(schema_context)
    rng = random.Random(f"{key}|{index}")
    return fill(schema, collect_hints(hints_from, identifiers_of(schema)), rng, profile(index, rng))


def _out_of_budget(result: QueryResult | None) -> bool:
    return result is not None and result.failure in (Failure.BUDGET, Failure.CLOCK)


def _trim(
    bench: Workbench,
    chosen: list[tuple[SuiteDatabase, list[Variant]]],
    alive: list[Variant],
    max_databases: int,
    order_matters: bool,
    budget: Budget,
) -> tuple[list[tuple[SuiteDatabase, list[Variant]]], list[Variant]]:
    """Keep the databases that told apart the most mutants (in drawing order); a mutant told apart
    only by a dropped one is tried on the kept ones and, if none tells it apart (or the budget ends
    first), survives."""
    keep = sorted(sorted(range(len(chosen)), key=lambda k: -len(chosen[k][1]))[:max_databases])
    kept = [chosen[k] for k in keep]
    orphans = [v for k, (_, killed) in enumerate(chosen) if k not in keep for v in killed]
    for db, killed in kept:
        if not orphans:
            break
        bench.load(db.rows)
        outcomes = [(v, bench.check(v.sql, db, order_matters, budget)) for v in orphans]
        newly = [v for v, outcome in outcomes if outcome is not None and not _out_of_budget(outcome)]
        killed.extend(newly)
        orphans = [v for v in orphans if v not in newly]
    return kept, alive + orphans


def _screen_mutants(
    bench: Workbench, gold: str, schema: Schema, budget: Budget
) -> tuple[list[Variant], list[tuple[Variant, str]]]:
    """The gold's mutants that execute on the empty database (one that does not is told apart by any
    database), and those a rule shows equivalent to the gold, each with its rule; stops where the budget does."""
    alive: list[Variant] = []
    equivalent: list[tuple[Variant, str]] = []
    for variant in mutants(gold, identifiers_of(schema), siblings_of(schema), tables=tables_of(schema)):
        rule = equivalence_rule(gold, variant.sql) if variant.kind in RULE_KINDS else None
        if rule is not None:
            equivalent.append((variant, rule))
            continue
        ran = bench.run(variant.sql, budget)
        if _out_of_budget(ran):
            break  # the search stops at once too (`truncated`)
        if ran.is_ok:
            alive.append(variant)
    return alive, equivalent


@dataclass
class _Search:
    """`distil`'s search for databases that tell the gold from its mutants: what it has chosen so far."""

    bench: Workbench
    gold: str
    order_matters: bool
    budget: Budget
    alive: list[Variant]  # mutants no database has told apart yet
    chosen: list[tuple[SuiteDatabase, list[Variant]]] = field(
        default_factory=list
    )  # with the mutants each told apart
    promising: list[SuiteDatabase] = field(default_factory=list)  # databases on which the gold returns rows
    drawn: int = 0
    truncated: bool = False
    last_failure: str = ""
    last_kill: int = 0

    def attempt(self, rows: Rows, index: int) -> None:
        self.bench.load(rows)
        db = self.bench.gold_database(rows, self.gold, self.budget, order_matters=self.order_matters)
        if isinstance(db, QueryResult):
            self.last_failure = f"gold fails on a database ({db.failure}): {db.message}"
            return
        killed = [
            v for v in self.alive if self.bench.check(v.sql, db, self.order_matters, self.budget) is not None
        ]
        if self.budget.is_exhausted:
            return  # checked only in part: a mutant "told apart" here may only have run out of budget
        if killed or len(self.chosen) < MIN_DATABASES:
            self.chosen.append((db, killed))
        if any(answer_size(g) for g in db.gold):
            self.promising.append(db)
        self.alive = [v for v in self.alive if v not in killed]
        if killed:
            self.last_kill = index

    def run(
        self, schema: Schema, seed: int, context: str, n_drawn: int, local_steps: int, patience: int
    ) -> None:
        """Drawn databases first, then local steps from promising ones for what is still alive."""
        hints = collect_hints([self.gold], identifiers_of(schema))
        for i in range(n_drawn + local_steps):
            if (not self.alive and len(self.chosen) >= MIN_DATABASES) or i - self.last_kill > patience:
                break  # all told apart, or the rest look equivalent: nothing new for PATIENCE tries
            if self.budget.is_exhausted:
                self.truncated = True
                break
            self.drawn += 1
            rng = random.Random(f"{seed}|{i}|{self.gold}|{context}")
            if i < n_drawn or not self.promising:
                self.attempt(fill(schema, hints, rng, profile(i, rng)), i)
            else:
                self.attempt(perturb(dict(rng.choice(self.promising).rows), schema, hints, rng), i)
        self.truncated = self.truncated or self.budget.is_exhausted


def _suite(
    search: _Search, n_mutants: int, equivalent: list[tuple[Variant, str]], max_databases: int
) -> Suite:
    """The search's databases as a suite, trimmed to `max_databases`."""
    budget = search.budget
    if not search.chosen:
        return Suite(
            failure=search.last_failure or "no database could be drawn in the budget",
            drawn=search.drawn,
            clock_stopped=budget.net_fired,
            instructions=budget.spent,
        )
    chosen, alive = search.chosen, search.alive
    if len(chosen) > max_databases:
        chosen, alive = _trim(search.bench, chosen, alive, max_databases, search.order_matters, budget)
    return Suite(
        databases=tuple(db for db, _ in chosen),
        order_matters=search.order_matters,
        n_mutants=n_mutants,
        survivors=tuple(alive),
        equivalent=tuple(equivalent),
        drawn=search.drawn,
        truncated=search.truncated or budget.is_exhausted,
        clock_stopped=budget.net_fired,
        kills=tuple(len(k) for _, k in chosen),
        instructions=budget.spent,
    )


@lru_cache(maxsize=2048)
def distil(
    gold: str,
    context: str,
    seed: int = 0,
    *,
    max_databases: int = DEFAULT_MAX_DATABASES,
    candidates: int = DEFAULT_CANDIDATES,
    local_steps: int = DEFAULT_LOCAL_STEPS,
    use_mutants: bool = True,
    budget_instructions: int = DISTIL_INSTRUCTIONS,
    patience: int = PATIENCE,
) -> Suite:
    """The suite for a (lower-cased) gold and context; cached. Deterministic for a seed: every bound
    is a count (tries, instructions), so only the CPU-time safety net (`clock_stopped`) could make it
    depend on the machine. `use_mutants=False` keeps the first databases drawn, unfiltered (an ablation)."""
    budget = Budget(budget_instructions)
    try:
        schema = parse_schema(context)
        bench = Workbench(context)
    except ContextError as exc:
        return Suite(failure=f"context does not build: {exc}")
    with bench:
        on_empty = bench.run(gold, budget)
        if not on_empty.is_ok:
            return Suite(
                failure=f"gold does not execute ({on_empty.failure}): {on_empty.message}",
                clock_stopped=budget.net_fired,
                instructions=budget.spent,
            )
        alive, equivalent = _screen_mutants(bench, gold, schema, budget) if use_mutants else ([], [])
        search = _Search(bench, gold, top_level_order_by(tokenize(gold)), budget, alive)
        n_drawn = candidates if use_mutants else max_databases
        search.run(schema, seed, context, n_drawn, local_steps if use_mutants else 0, patience)
        return _suite(search, len(alive), equivalent, max_databases)
