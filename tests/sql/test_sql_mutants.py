"""Mutants, equivalent rewrites and the equivalence rules, checked on real SQLite results."""

from __future__ import annotations

import pytest

from harness.tasks.sql.mutants import equivalence_rule, mutants, rewrites
from harness.tasks.sql.sandbox import run_sql
from harness.tasks.sql.sqltext import comparisons, conditions, render, tokenize

CONTEXT = "CREATE TABLE t (name VARCHAR, age INTEGER, city VARCHAR, score REAL)"
ROW_SETS = [
    {
        "t": [
            ("ann", 30, "oslo", 1.5),
            ("bob", 41, "rome", -2.0),
            ("cid", 30, "oslo", None),
            ("dan", None, "nice", 7.0),
        ]
    },
    {"t": [("eve", 18, "rome", 3.0), ("fay", 65, "oslo", 3.0), ("gus", 41, None, 0.0)]},
    {"t": []},
]
IDS = frozenset({"t", "name", "age", "city", "score"})
SIBLINGS = {
    "name": ["age", "city", "score"],
    "age": ["name", "city", "score"],
    "city": ["name", "age", "score"],
}


def _results(sql: str) -> list[list[tuple[object, ...]]]:
    out = []
    for rows in ROW_SETS:
        result = run_sql(sql, CONTEXT, rows)
        assert result.is_ok, (sql, result.message)
        out.append(sorted(result.rows, key=repr))
    return out


GOLDS = [
    "SELECT name FROM t WHERE age > 30 AND city = 'oslo'",
    "SELECT COUNT(*) FROM t WHERE age BETWEEN 20 AND 40 AND city <> 'rome'",
    'SELECT name, age FROM t WHERE city = "oslo" OR score >= 1.5 ORDER BY age DESC',
    "SELECT city, COUNT(*) FROM t WHERE name IN (SELECT name FROM t WHERE age = 30 AND score > 0) GROUP BY city",
]


@pytest.mark.parametrize("gold", GOLDS)
def test_every_rewrite_gives_the_same_rows(gold: str) -> None:
    found = rewrites(gold, IDS)
    assert {"keyword case", "all of them", "whitespace"} <= {r.kind for r in found}
    expected = _results(gold)
    for rewrite in found:
        assert rewrite.sql.lower() != gold.lower() or rewrite.kind == "keyword case"
        assert _results(rewrite.sql) == expected, rewrite


def test_rewrites_keep_between_and_nested_conditions_intact() -> None:
    gold = "SELECT name FROM t WHERE age BETWEEN 20 AND 40 AND name IN (SELECT name FROM t WHERE city = 'oslo' AND age > 1)"
    kinds = {r.kind: r.sql for r in rewrites(gold, IDS)}
    assert "between 20 and 40" in kinds["reorder AND"].lower()
    assert kinds["parentheses"].count("(") == kinds["parentheses"].count(")")
    assert _results(kinds["parentheses"]) == _results(gold)


def test_mutants_cover_the_kinds_and_differ_from_the_gold() -> None:
    found = []
    for gold in [
        *GOLDS,
        "SELECT MAX(age) FROM t WHERE name LIKE '%an%'",
        "SELECT name FROM t AS a JOIN t AS b ON a.age = b.age WHERE b.city = 'oslo' UNION SELECT city FROM t",
        "SELECT name FROM t ORDER BY score LIMIT 2",
    ]:
        variants = mutants(gold, IDS, SIBLINGS)
        assert len({v.sql.lower() for v in variants}) == len(variants)
        assert all(render(tokenize(v.sql)).lower() != render(tokenize(gold)).lower() for v in variants)
        found += variants
    kinds = {v.kind for v in found}
    assert {
        "operator", "literal±1", "string", "drop condition", "add condition", "and/or", "limit", "distinct",
        "order direction", "drop order by", "negation", "aggregate", "column", "count(*)/count(col)",
        "left join", "set operation", "drop group by",
    } <= kinds  # fmt: skip


def test_mutant_limit_keeps_every_kind() -> None:
    variants = mutants(
        "SELECT name FROM t WHERE age > 30 AND city = 'oslo' AND score < 2", IDS, SIBLINGS, limit=8
    )
    assert len(variants) == 8
    assert len({v.kind for v in variants}) == 8


@pytest.mark.parametrize(
    ("gold", "mutant", "rule"),
    [
        (
            "SELECT COUNT(*) FROM t WHERE age > 3",
            "SELECT COUNT(*) FROM t WHERE age > 3 LIMIT 1",
            "one-row aggregate",
        ),
        ("SELECT MAX(age) FROM t", "SELECT DISTINCT MAX(age) FROM t ORDER BY 1 DESC", "one-row aggregate"),
        (
            "SELECT city, COUNT(*) FROM t GROUP BY city",
            "SELECT DISTINCT city, COUNT(*) FROM t GROUP BY city",
            "groups are distinct",
        ),
        (
            "SELECT name FROM t INTERSECT SELECT city FROM t",
            "SELECT DISTINCT name FROM t INTERSECT SELECT city FROM t",
            "set operation rows are distinct",
        ),
        (
            "SELECT name FROM t WHERE age = 3",
            "SELECT name FROM t WHERE age = 3 AND age IS NOT NULL",
            "column already non-NULL",
        ),
        (
            "SELECT COUNT(*) FROM t WHERE age > 3",
            "SELECT COUNT(age) FROM t WHERE age > 3",
            "column already non-NULL",
        ),
        (
            "SELECT a.name FROM t AS a JOIN t AS b ON a.age = b.age WHERE b.city = 'x'",
            "SELECT a.name FROM t AS a LEFT JOIN t AS b ON a.age = b.age WHERE b.city = 'x'",
            "outer rows rejected",
        ),
    ],
)
def test_equivalence_rules_hold_on_real_rows(gold: str, mutant: str, rule: str) -> None:
    assert equivalence_rule(gold, mutant) == rule
    assert _results(gold) == _results(mutant)


@pytest.mark.parametrize(
    ("gold", "mutant"),
    [
        ("SELECT COUNT(*) FROM t WHERE age > 3", "SELECT COUNT(*) FROM t WHERE age > 3 LIMIT 0"),
        ("SELECT city, COUNT(*) FROM t GROUP BY city", "SELECT city, COUNT(*) FROM t GROUP BY city LIMIT 1"),
        (
            "SELECT name FROM t UNION ALL SELECT city FROM t",
            "SELECT DISTINCT name FROM t UNION ALL SELECT city FROM t",
        ),
        (
            "SELECT name FROM t WHERE age = 3 OR city = 'x'",
            "SELECT name FROM t WHERE age = 3 OR city = 'x' AND age IS NOT NULL",
        ),
        ("SELECT COUNT(*) FROM t WHERE age > 3", "SELECT COUNT(name) FROM t WHERE age > 3"),
        (
            "SELECT a.name FROM t AS a JOIN t AS b ON a.age = b.age",
            "SELECT a.name FROM t AS a LEFT JOIN t AS b ON a.age = b.age",
        ),
    ],
)
def test_equivalence_rules_do_not_overreach(gold: str, mutant: str) -> None:
    assert equivalence_rule(gold, mutant) is None


def test_tokens_keep_identifiers_with_symbols_and_conditions_split_around_between() -> None:
    tokens = tokenize(
        'SELECT money___£__ FROM t WHERE £1_fraction = "1/240" AND x$y BETWEEN 1 AND 2 OR a = 1'
    )
    assert [t.text for t in tokens[:4]] == ["SELECT", "money___£__", "FROM", "t"]
    assert "£1_fraction" in [t.text for t in tokens]
    (cond,) = conditions(tokens)
    assert len(cond.terms) == 3  # the AND of BETWEEN is not a connector
    # `a + x = 1`: x is not a whole operand, so it is not a comparison to swap.
    assert comparisons(tokenize("SELECT 1 FROM t WHERE a + x = 1")) == []
