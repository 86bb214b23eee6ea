"""Sorted golds: the order of rows with different keys counts, the order (and choice) among ties not."""

from __future__ import annotations

import pytest

from harness.tasks.sql.compare import canonical_rows
from harness.tasks.sql.ordering import blocks_of, keyed_query
from harness.tasks.sql.sandbox import run_sql
from harness.tasks.sql.semantic import compare_queries

CONTEXT = "CREATE TABLE t (name VARCHAR, age INTEGER, city VARCHAR)"


def test_keyed_query_adds_the_sort_keys_and_drops_the_limit() -> None:
    keyed = keyed_query("select name from t group by city order by count(*) desc, name limit 2 offset 1")
    assert keyed is not None
    assert keyed.sql == "select name, count (*), name from t group by city order by count (*) desc, name"
    assert (keyed.n_keys, keyed.limit, keyed.offset) == (2, 2, 1)
    assert (
        keyed_query("select name as n, age from t order by 2, n limit 3, 4").sql
        == "select name as n, age, age, name from t order by 2, n"
    )
    assert keyed_query("select name from t order by age limit 3, 4").offset == 3
    for not_plain in (
        "select distinct name from t order by age",
        "select name from t union select city from t order by 1",
        "select name from t",
    ):
        assert keyed_query(not_plain) is None


def _blocks(sql: str, rows: list[tuple[object, ...]]):
    keyed = keyed_query(sql)
    assert keyed is not None
    result = run_sql(keyed.sql, CONTEXT, {"t": rows})
    assert result.is_ok
    return blocks_of(canonical_rows(result), keyed)


def test_ties_may_come_in_any_order_and_a_cut_tie_in_any_choice() -> None:
    rows = [("ann", 30, "x"), ("bob", 40, "x"), ("cid", 40, "y"), ("dan", 20, "y")]
    ordered = _blocks("select name from t order by age desc", rows)
    assert ordered.fits([("bob",), ("cid",), ("ann",), ("dan",)])
    assert ordered.fits([("cid",), ("bob",), ("ann",), ("dan",)])
    assert not ordered.fits([("ann",), ("bob",), ("cid",), ("dan",)])
    top = _blocks("select name from t order by age desc limit 1", rows)
    assert top.fits([("bob",)]) and top.fits([("cid",)])
    assert not top.fits([("ann",)]) and not top.fits([("bob",), ("cid",)])


@pytest.mark.parametrize(
    ("pred", "gold", "match"),
    [
        # Another plan for the same question: right whichever tied row each picks.
        (
            "SELECT name FROM t WHERE age = (SELECT MAX(age) FROM t) LIMIT 1",
            "SELECT name FROM t ORDER BY age DESC LIMIT 1",
            True,
        ),
        (
            "SELECT name FROM t ORDER BY age DESC, city LIMIT 3",
            "SELECT name FROM t ORDER BY age DESC LIMIT 3",
            True,
        ),
        (
            "SELECT name FROM t ORDER BY age ASC LIMIT 1",
            "SELECT name FROM t ORDER BY age DESC LIMIT 1",
            False,
        ),
        ("SELECT name FROM t ORDER BY age LIMIT 3", "SELECT name FROM t ORDER BY age DESC LIMIT 3", False),
    ],
)
def test_semantic_match_forgives_ties_only(pred: str, gold: str, match: bool) -> None:
    verdict = compare_queries(pred, gold, CONTEXT)
    assert verdict.match is match, verdict.detail
