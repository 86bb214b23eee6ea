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
    hints = collect_hints(
        [GOLD, "select name from player where score < -2.5 and age in (select age from team) and 7 <= age"],
        IDS,
    )
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
    assert any(
        isinstance(row[1], str) and row[1].lstrip("-").isdigit() for row in player
    )  # a number in VARCHAR name
    assert any(isinstance(row[3], float) and not row[3].is_integer() for row in player)
    # Rows that meet the whole WHERE exist: age above 30, the team, a name around 'an'.
    assert any(
        isinstance(row[2], int) and row[2] > 30 and row[1] in ("an", "xanx", "xan", "anx") for row in player
    )
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
        diff = sum(
            ((Counter(base[t]) - Counter(edited[t])) + (Counter(edited[t]) - Counter(base[t]))).total()
            for t in base
        )
        assert diff <= 6
        changes.append(diff)
    assert max(changes) > 0
    assert base == _draw(1)[0]  # the original is not modified


# --- issue #27: the data that NULL-sensitive, fractional and OFFSET near misses need ---------------


def test_null_copies_put_a_null_in_every_column() -> None:
    schema = parse_schema(CONTEXT.lower())
    hints = collect_hints([GOLD], IDS)
    with_copies = 0
    for i in range(12):
        rng = random.Random(f"nulls|{i}")
        prof = profile(i, rng)
        drawn = fill(schema, hints, rng, prof)
        if not prof.null_copies:
            continue
        with_copies += 1
        for table in schema.tables:
            rows = drawn[table.name]
            if rows:
                assert all(any(row[j] is None for row in rows) for j in range(len(table.columns))), (
                    i,
                    table.name,
                )
    assert with_copies >= 6  # most databases: three of the first four shapes, half of the later ones
    clean = profile(0, random.Random("nulls|0"))
    assert not clean.null_copies and not clean.p_null  # the first database stays NULL-free


def test_fractions_sit_beside_whole_number_literals_and_just_inside_their_bounds() -> None:
    hints = collect_hints(["select name from player where age > 30 and score < 5"], IDS)
    assert {30.25, 29.75, 30.5, 29.5} <= set(hints.by_column["age"])
    assert 30.25 in hints.meets["age"] and 4.75 in hints.meets["score"]  # `> 30.5` misses 30.25
    text = collect_hints(["select name from player where name > '1850'"], IDS)
    assert "1850.25" in text.meets["name"]  # between '1850' and '1850.5' in text order too


def test_tables_reach_past_limit_offset_and_having_count_thresholds() -> None:
    assert collect_hints(["select name from player order by age limit 5 offset 2"], IDS).min_rows == 9
    assert collect_hints(["select team from team group by team having count(*) > 6"], IDS).min_rows == 8
    assert (
        collect_hints(["select name from player limit 1000"], IDS).min_rows == 24
    )  # capped: tables stay small
    assert collect_hints(["select name from player"], IDS).min_rows == 0
    for odd in ("limit 0x10", "limit 1e999", "limit -3"):  # model output: read, never raised on
        assert collect_hints([f"select name from player {odd}"], IDS).min_rows == 0
    schema = parse_schema(CONTEXT.lower())
    hints = collect_hints(["select name from player order by age limit 5 offset 2"], IDS)
    sizes = []
    for i in range(8):
        rng = random.Random(f"rows|{i}")
        prof = profile(i, rng)
        if prof.templates or prof.p_fresh:
            drawn = fill(schema, hints, rng, prof)["player"]
            sizes += [len(drawn)] if drawn else []  # an empty table is drawn on purpose (p_empty_table)
    assert sizes and min(sizes) >= 9


def test_twin_rows_join_in_two_groups_alike_in_everything_else() -> None:
    """Issue #38: `SELECT name ... GROUP BY player_id` and its DISTINCT differ only where two joined
    rows share a name in different groups; a twin is such a row (second, so it gets a join id too)."""
    schema = parse_schema(CONTEXT.lower())
    hints = collect_hints([GOLD], IDS)
    twins = alike = 0
    for i in range(16):
        rng = random.Random(f"twins|{i}")
        prof = profile(i, rng)
        drawn = fill(schema, hints, rng, prof)
        players, joined = drawn["player"], {row[0] for row in drawn["team"]}
        if not prof.twins or len(players) < 2:
            continue
        twins += 1
        first, second = players[0], players[1]
        assert first[0] != second[0]  # the key: a group of its own
        alike += first[1:] == second[1:] and {first[0], second[0]} <= joined
    assert twins >= 6 and alike >= twins // 2, (twins, alike)
