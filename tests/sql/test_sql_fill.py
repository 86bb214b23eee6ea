"""The data drawing: literals aimed at their columns; NULLs, negatives and mixed types actually drawn."""

from __future__ import annotations

import random
from collections import Counter

from harness.tasks.sql.fill import collect_hints, fill, perturb, profile
from harness.tasks.sql.sandbox import parse_schema

CONTEXT = "CREATE TABLE player (player_id INTEGER, name VARCHAR, age INTEGER, score REAL); CREATE TABLE team (player_id INTEGER, team VARCHAR)"
IDS = frozenset({"player", "player_id", "name", "age", "score", "team"})
GOLD = "select p.name from player as p join team as t on p.player_id = t.player_id where p.age > 30 and t.team = 'rams' and p.name like '%an%'"


def _draw(n: int, gold: str = GOLD) -> list[dict[str, list[tuple[object, ...]]]]:
    schema = parse_schema(CONTEXT.lower())
    hints = collect_hints([gold], IDS)
    out = []
    for i in range(n):
        rng = random.Random(f"test|{i}")
        out.append(fill(schema, hints, rng, profile(i, rng)))
    return out


def test_hints_aim_literals_and_their_neighbours_at_their_columns() -> None:
    hints = collect_hints([GOLD, "select name from player where score < -2.5 and age in (select age from team) and 7 <= age"], IDS)
    assert hints.by_column["age"][:3] == [30, 29, 31]
    assert hints.exact["team"] == ["rams"]
    assert {"an", "xanx"} <= set(hints.by_column["name"])
    assert -3.0 in hints.by_column["score"] and -2.0 in hints.by_column["score"]
    assert 31 in hints.meets["age"] and "rams" in hints.meets["team"] and "xanx" in hints.meets["name"]
    assert 7 in hints.meets["age"]  # `7 <= age` read from the right
    assert {"player_id", "age"} <= hints.joined


def test_drawing_is_deterministic() -> None:
    assert _draw(6) == _draw(6)


def test_the_first_forty_databases_hold_nulls_negatives_mixed_types_duplicates_and_hits() -> None:
    values = [(table, row) for db in _draw(40) for table, rows in db.items() for row in rows]
    player = [row for table, row in values if table == "player"]
    assert any(None in row for _, row in values)
    assert any(isinstance(v, int | float) and v < 0 for _, row in values for v in row)
    assert any(isinstance(row[2], str) for row in player)  # text in the INTEGER column age
    assert any(isinstance(row[1], str) and row[1].lstrip("-").isdigit() for row in player)  # a number in VARCHAR name
    assert any(isinstance(row[3], float) and not row[3].is_integer() for row in player)
    # Rows that meet the whole WHERE exist: age above 30, the team, a name around 'an'.
    assert any(isinstance(row[2], int) and row[2] > 30 and row[1] in ("an", "xanx", "xan", "anx") for row in player)
    assert any(rows.count(row) > 1 for db in _draw(8) for rows in db.values() for row in rows)


def test_key_like_columns_are_unique_in_their_own_table_and_meet_their_joins() -> None:
    drawn = _draw(10)
    unique = [db for db in drawn if len({r[0] for r in db["player"]}) == len(db["player"])]
    assert len(unique) >= 8  # the profile keeps keys unique in four databases of five
    # The team side is not a key there: it repeats, and joins find partners.
    assert any(len({r[0] for r in db["team"]}) < len(db["team"]) for db in drawn)
    assert sum(bool({r[0] for r in db["player"]} & {r[0] for r in db["team"]}) for db in drawn) >= 8


def test_perturb_makes_small_edits_only() -> None:
    schema = parse_schema(CONTEXT.lower())
    hints = collect_hints([GOLD], IDS)
    base = _draw(1)[0]
    changes = []
    for seed in range(20):
        edited = perturb(base, schema, hints, random.Random(seed))
        # Each of at most three edits removes and/or adds one row.
        diff = sum(((Counter(base[t]) - Counter(edited[t])) + (Counter(edited[t]) - Counter(base[t]))).total() for t in base)
        assert diff <= 6
        changes.append(diff)
    assert max(changes) > 0
    assert base == _draw(1)[0]  # the original is not modified
