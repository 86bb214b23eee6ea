"""Random rows for a schema, aimed at the queries being compared.

A random table rarely holds the row that tells `year < 1958` from `year < 1959`; these rows are drawn
so that it often does: each column is filled mostly from the literals its queries compare it with
(`hints`: the value and its neighbours, a LIKE pattern's core with text around it), the rest from a
small per-database vocabulary shared by all columns (so joins find partners and GROUP BY finds
groups). Profiles vary from one database to the next: how many rows, NULLs, negative numbers, text in
numeric columns, numbers in text columns, duplicated rows, near-miss copies of a row (one column
changed). Same schema, hints, seed and index: same rows.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from harness.tasks.sql.sandbox import Schema
from harness.tasks.sql.sqltext import COMPARISONS, MIRRORED, Token, depths, tokenize

Rows = dict[str, list[tuple[object, ...]]]
_NUMBER_KINDS = ("integer", "real", "numeric")


def affinity(decl_type: str) -> str:
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


def _as_number(text: str) -> int | float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _neighbours(value: int | float) -> list[int | float]:
    # The value and one step either side tell `<` from `<=` and `= 5` from `= 6`; half steps tell
    # apart comparisons with a fraction, and for a whole number they tell `x > 5` from `x > 5.5`
    # (real data holds fractions in INTEGER columns too: SQLite keeps 5.5 there as a REAL).
    # Quarter steps too: in a text column `x > 1850` compares text, and only '1850.25' lies between
    # '1850' and '1850.5'.
    if isinstance(value, int):
        return [value, value - 1, value + 1, value + 0.25, value - 0.25, value + 0.5, value - 0.5]
    return [value, value - 0.5, value + 0.5, value + 0.25, value - 0.25]


@dataclass
class Hints:
    """Values worth trying: per column (lower-case name, unqualified) and for any column. `exact`
    holds the literals themselves, `by_column` also their neighbours."""

    by_column: dict[str, list[object]] = field(default_factory=dict)
    exact: dict[str, list[object]] = field(default_factory=dict)
    anywhere: list[object] = field(default_factory=list)
    joined: set[str] = field(default_factory=set)  # columns equated with another column
    # Values that meet a condition on the column (`x > 5` -> 6): template rows use them, so that rows
    # meeting every condition of a long AND exist, and their near copies miss exactly one.
    meets: dict[str, list[object]] = field(default_factory=dict)
    # Rows a table needs so that some fall past the queries' LIMIT + OFFSET, or a group reaches a
    # HAVING COUNT threshold and one more: a result cut short or a group one row shy differs.
    min_rows: int = 0
    mentioned: set[str] = field(default_factory=set)  # every column name the queries use

    def add_meets(self, column: str, value: object) -> None:
        bucket = self.meets.setdefault(column, [])
        if value not in bucket:
            bucket.append(value)

    def add(self, column: str | None, values: Sequence[object]) -> None:
        for k, value in enumerate(values):
            if column is not None:
                for bucket in (
                    self.by_column.setdefault(column, []),
                    *([self.exact.setdefault(column, [])] if k == 0 else []),
                ):
                    if value not in bucket:
                        bucket.append(value)
            if value not in self.anywhere:
                self.anywhere.append(value)


def _literal(tokens: Sequence[Token], i: int, identifiers: frozenset[str]) -> tuple[object, int] | None:
    """The literal at tokens[i] (a leading minus included) and the index after it."""
    t = tokens[i] if i < len(tokens) else None
    if t is None:
        return None
    if t.text == "-" and i + 1 < len(tokens) and tokens[i + 1].kind == "number":
        number = _as_number(tokens[i + 1].text)
        return (-number, i + 2) if number is not None else None
    if t.kind == "number":
        number = _as_number(t.text)
        return (number, i + 1) if number is not None else None
    if t.kind == "string" or (t.kind == "dquoted" and t.text[1:-1].lower() not in identifiers):
        return t.text[1:-1].replace(t.text[0] * 2, t.text[0]), i + 1
    return None


def _column_at(tokens: Sequence[Token], i: int, identifiers: frozenset[str]) -> str | None:
    t = tokens[i] if 0 <= i < len(tokens) else None
    if t is None:
        return None
    name = t.text[1:-1] if t.kind in ("dquoted", "bracketed") else t.text
    if t.kind in ("word", "bracketed") or (t.kind == "dquoted" and name.lower() in identifiers):
        return name.lower() if name.lower() in identifiers else None
    return None


_AGGREGATES = frozenset({"avg", "sum", "min", "max", "total"})


def _left_column(tokens: Sequence[Token], i: int, identifiers: frozenset[str]) -> str | None:
    """The column ending at tokens[i]: `col`, `t.col`, or the one inside `AVG(col)` / `MAX(t.col)`
    (so `HAVING AVG(x) > 60` aims 60 and its neighbours at x)."""
    if 0 <= i < len(tokens) and tokens[i].text == ")":
        j = i - 1
        while j >= 0 and tokens[j].text != "(":
            j -= 1
        if j >= 1 and tokens[j - 1].low in _AGGREGATES and i - j in (2, 4):
            return _column_at(tokens, i - 1, identifiers)
        return None
    return _column_at(tokens, i, identifiers)


def _expand(value: object, is_pattern: bool) -> list[object]:
    """The literal first, then values next to it."""
    if isinstance(value, int | float):
        return list(_neighbours(value))
    text = str(value)
    values: list[object] = [text]
    if is_pattern:
        core = text.replace("%", "").replace("_", "")
        if core:  # the core first: it is what the pattern is after
            values = [core, text, f"x{core}", f"{core}x", f"x{core}x"]
    else:
        # Just below and just above in text order: tell `<` from `<=` and `>` from `!=` on text.
        values += [text[:-1] or " ", f"{text}~"]
    number = _as_number(text.strip())
    if number is not None:
        values += [str(n) for n in _neighbours(number)[1:]] + _neighbours(number)
    return values


def _barely_meeting(op: str, value: object) -> object | None:
    """For `>` and `<` with a number: a value meeting the condition by a quarter, which the same
    condition off by a half (`x > 144.5` for `x > 144`) no longer meets; None otherwise."""
    if op not in (">", "<"):
        return None
    number = value if isinstance(value, int | float) else _as_number(str(value).strip())
    if number is None or isinstance(value, bool):
        return None
    moved = number + 0.25 if op == ">" else number - 0.25
    return moved if isinstance(value, int | float) else str(moved)


def _meeting(op: str, value: object, negated: bool) -> object:
    """A value for which `column op value` holds (or, `negated`, NOT LIKE holds)."""
    if op in ("like", "glob"):
        core = str(value).replace("%", "").replace("_", "").replace("*", "").replace("?", "")
        return "~" if negated else (core if str(value) == core else f"x{core}x" if core else "x")
    number = value if isinstance(value, int | float) else _as_number(str(value).strip())
    step = 1 if isinstance(number, int) else 0.5
    if op in ("=", "==", ">=", "<="):
        return value
    if number is None:  # text order: just above or below
        return f"{value}~" if op in (">", "!=", "<>") else str(value)[:-1] or " "
    moved = number + step if op in (">", "!=", "<>") else number - step
    return moved if isinstance(value, int | float) else str(moved)


def _right_column(tokens: Sequence[Token], i: int, identifiers: frozenset[str]) -> str | None:
    """The column starting at tokens[i]: `col` or `t.col`."""
    if i + 2 < len(tokens) and tokens[i + 1].text == ".":
        return _column_at(tokens, i + 2, identifiers)
    return _column_at(tokens, i, identifiers)


def collect_hints(queries: Iterable[str], identifiers: frozenset[str]) -> Hints:
    """Literals of `queries` (lower-cased SQL) and the columns they are compared with. Cached: do
    not change the result."""
    return _collect_hints(tuple(queries), identifiers)


def _comparison_hints(
    tokens: Sequence[Token], i: int, negated: bool, identifiers: frozenset[str], hints: Hints
) -> None:
    """At a comparison or LIKE/GLOB (tokens[i]): `col op literal` gives the column values that meet it
    and values near it; `col = col` joins two columns; `literal op col` is read mirrored."""
    t = tokens[i]
    is_pattern = t.kind == "word"
    left = _left_column(tokens, i - 1 - (is_pattern and negated), identifiers)
    right = _literal(tokens, i + 1, identifiers)
    if left and right:
        hints.add(left, _expand(right[0], is_pattern))
        hints.add_meets(left, _meeting(t.low, right[0], negated))
        if (barely := _barely_meeting(t.low, right[0])) is not None:
            hints.add_meets(left, barely)
        return
    right_column = _right_column(tokens, i + 1, identifiers)
    if left and right_column and t.text in ("=", "=="):
        hints.joined.update((left, right_column))
    left_literal = _literal(tokens, i - 1, identifiers)
    if left_literal and right_column:  # `5 < col`
        hints.add(right_column, _expand(left_literal[0], False))
        hints.add_meets(right_column, _meeting(MIRRORED[t.text], left_literal[0], False))
        if (barely := _barely_meeting(MIRRORED[t.text], left_literal[0])) is not None:
            hints.add_meets(right_column, barely)


def _is_subquery_in(tokens: Sequence[Token], i: int) -> bool:
    """tokens[i] starts `IN (SELECT`."""
    return (
        tokens[i].low == "in"
        and i + 2 < len(tokens)
        and tokens[i + 1].text == "("
        and tokens[i + 2].low == "select"
    )


def _subquery_join(
    tokens: Sequence[Token], i: int, negated: bool, identifiers: frozenset[str], hints: Hints
) -> None:
    """`x IN (SELECT y ...)` joins x and y as surely as `x = y` does."""
    column = _column_at(tokens, i - 1 - negated, identifiers)
    inner = _right_column(
        tokens,
        i + 3 + (tokens[i + 3].low == "distinct" if i + 3 < len(tokens) else 0),
        identifiers,
    )
    if column and inner:
        hints.joined.update((column, inner))


def _list_hints(
    tokens: Sequence[Token], i: int, negated: bool, identifiers: frozenset[str], hints: Hints
) -> None:
    """`col IN (a, b, ...)` or `col BETWEEN a AND b` at tokens[i]: the listed values are the column's;
    the first one meets the condition (unless negated)."""
    t = tokens[i]
    column = _column_at(tokens, i - 1 - negated, identifiers)
    j, found = i + 1, 0
    while j < min(len(tokens), i + 60) and tokens[j].low not in ("select", ")"):
        item = _literal(tokens, j, identifiers)
        if item is None:
            j += 1
            continue
        hints.add(column, _expand(item[0], False))
        if column and not negated and found == 0:
            hints.add_meets(column, item[0])
        j, found = item[1], found + 1
        if t.low == "between" and found == 2:
            break


@lru_cache(maxsize=1024)
def _collect_hints(queries: tuple[str, ...], identifiers: frozenset[str]) -> Hints:
    """`collect_hints`, cached on hashable arguments; each query's tokens are read one by one."""
    hints = Hints()
    for sql in queries:
        tokens = tokenize(sql)
        for i, t in enumerate(tokens):
            lit = _literal(tokens, i, identifiers) if t.kind in ("number", "string", "dquoted") else None
            if lit:
                hints.add(None, _expand(lit[0], False))
            if i == 0:
                continue
            negated = i > 1 and tokens[i - 1].low == "not"
            if (t.kind == "op" and t.text in COMPARISONS) or t.low in ("like", "glob"):
                _comparison_hints(tokens, i, negated, identifiers, hints)
            elif _is_subquery_in(tokens, i):
                _subquery_join(tokens, i, negated, identifiers, hints)
            elif t.low in ("in", "between"):
                _list_hints(tokens, i, negated, identifiers, hints)
        hints.joined.update(_set_operation_columns(tokens, identifiers))
        hints.min_rows = max(hints.min_rows, _rows_wanted(tokens))
        hints.mentioned.update(filter(None, (_column_at(tokens, i, identifiers) for i in range(len(tokens)))))
    return hints


_MAX_MIN_ROWS = 24  # a LIMIT 100 gets no 102 rows: tables stay small, scoring stays fast


def _rows_wanted(tokens: Sequence[Token]) -> int:
    """LIMIT n (+ OFFSET m) plus 2, or a HAVING COUNT threshold plus 2, at most _MAX_MIN_ROWS."""

    def count_at(k: int) -> int:
        # Untrusted text: a hex literal, 1e999 or a negative count reads as "no rows wanted".
        number = _as_number(tokens[k].text) if k < len(tokens) and tokens[k].kind == "number" else None
        return 0 if number is None or number < 0 else int(min(number, _MAX_MIN_ROWS))

    wanted = 0
    for i, t in enumerate(tokens):
        if t.low in ("limit", "offset"):
            wanted += count_at(i + 1)
        elif t.low == "count" and i + 1 < len(tokens) and tokens[i + 1].text == "(":
            j = i + 1
            while j < len(tokens) and tokens[j].text != ")":
                j += 1
            if j + 2 < len(tokens) and tokens[j + 1].text in COMPARISONS:
                wanted = max(wanted, count_at(j + 2))
    return min(_MAX_MIN_ROWS, wanted + 2) if wanted else 0


def _set_operation_columns(tokens: Sequence[Token], identifiers: frozenset[str]) -> set[str]:
    """Columns that UNION/INTERSECT/EXCEPT compare: the first plain column of each arm (`SELECT id
    FROM a INTERSECT SELECT a_id FROM b` meets only where the two share values)."""
    level = depths(tokens)
    arms = [i + 1 for i, t in enumerate(tokens) if t.low == "select" and level[i] == 0]
    if len(arms) < 2:
        return set()
    found = set()
    for start in arms:
        start += start < len(tokens) and tokens[start].low == "distinct"
        column = _right_column(tokens, start, identifiers)
        if column:
            found.add(column)
    return found if len(found) >= 2 else set()


@dataclass(frozen=True)
class Profile:
    """How one database is drawn."""

    max_rows: int
    templates: int  # 0: independent rows; else rows are near copies of this many template rows
    p_hint: float
    p_null: float
    p_mixed: float  # text in a numeric column, a number in a text column
    p_negative: float
    p_duplicate: float
    p_near_miss: float
    p_empty_table: float
    unique_keys: bool  # key-like columns (`id`, `<table>_id`) unique in their own table, as in Spider
    # A copy of a row with one column set to NULL, for every column: COUNT(col) vs COUNT(*), AVG vs
    # SUM/COUNT(*), `OR col IS NULL` differ only where a NULL sits in a row the rest lets through.
    null_copies: bool = False
    p_fresh: float = 0.0  # a value from a counter (seldom drawn twice): few ties, so a row past LIMIT/OFFSET is another row
    # A twin of a table's first row that differs only in its join and key columns: two rows that both
    # join, alike in what is selected, in different groups. DISTINCT then changes the result (`SELECT
    # name ... GROUP BY id`, or a bare column under ORDER BY ... LIMIT).
    twins: bool = False


def profile(index: int, rng: random.Random) -> Profile:
    """Database `index`'s profile. The first four cover the main shapes in turn (plain; templates
    with NULLs; everything odd; plain templates), so a short suite has each; later ones mix at random."""
    shape = index % 4 if index < 8 else rng.randrange(4)
    odd = shape in (1, 2) or (index >= 8 and rng.random() < 0.5)
    # Distinct values and no copies: rows past a LIMIT/OFFSET and groups of different sizes are
    # then told apart, not tied (under ties the gold accepts any of the tied rows).
    p_fresh = rng.choice((0.0, 0.5)) if shape == 0 else 0.0
    return Profile(
        max_rows=rng.choice((2, 4, 8, 12)) if index % 3 else rng.choice((6, 10)),
        templates=rng.choice((1, 2)) if shape in (1, 3) else 0,
        p_hint=rng.choice((0.5, 0.7, 0.85)),
        p_null=rng.choice((0.15, 0.3)) if odd else 0.0,
        p_mixed=rng.choice((0.15, 0.3)) if shape == 2 or (odd and index >= 8) else 0.0,
        p_negative=0.25 if odd else 0.0,
        p_duplicate=rng.choice((0.0, 0.3)) if not p_fresh else 0.0,
        p_near_miss=rng.choice((0.0, 0.5, 0.8)) if not p_fresh else 0.0,
        # An empty table: aggregates over nothing, `x NOT IN (SELECT ...)` true even for a NULL x.
        p_empty_table=(0.3 if index % 4 == 3 else 0.0) if index < 8 else 0.1,
        unique_keys=index % 5 != 4,
        null_copies=shape != 0 or (index >= 8 and rng.random() < 0.5),
        p_fresh=p_fresh,
        twins=index % 2 == 1 or (index >= 8 and rng.random() < 0.5),
    )


def _key_columns(table_name: str, names: Sequence[str]) -> list[int]:
    """Columns that name their own table's rows (`id`, `city_id` in `city`, `student_id` in
    `students`): a primary key in the real database, so a bare column next to GROUP BY on it has
    one value per group. A guess from names: the contexts declare no keys."""
    table = table_name.lower()
    own = {f"{t}{sep}id" for t in (table, table.removesuffix("s")) for sep in ("_", "")} | {"id"}
    return [j for j, name in enumerate(names) if name in own]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 5)))


Row = tuple[object, ...]
Column = tuple[str, str]  # (lower-cased name, affinity)


class _Cells:
    """The draws one database's rows share: its small numbers, words and join ids, and how a cell is
    drawn from them and from the hints. Every draw goes through `self.r` in one order: same seed, same rows."""

    def __init__(self, hints: Hints, rng: random.Random, prof: Profile) -> None:
        self.rng, self.hints, self.prof = rng, hints, prof
        self.r = rng.random  # `seq[int(r() * len(seq))]` draws like rng.choice, at a third of its cost
        self.small_ints = rng.sample(range(-3 if prof.p_negative else 0, 12), rng.randint(3, 8))
        self.vocabulary = [_word(rng) for _ in range(rng.randint(2, 4))]
        # Ids shared by every joined column, so that joins find partners.
        self.join_pool: list[object] = rng.sample(
            self.small_ints, min(rng.choice((1, 2, 3)), len(self.small_ints))
        )
        if prof.p_fresh:  # more ids, each met by fewer rows: a join's rows and groups differ in size
            self.join_pool = rng.sample(range(20, 40), rng.choice((4, 6, 8)))
        elif prof.twins and len(self.join_pool) < 3:  # the twins, and a third row to rank them against
            self.join_pool = rng.sample(range(12, 20), 3)
        self.numbers = [v for v in hints.anywhere if isinstance(v, int | float)]
        self.fresh = iter(range(1000, 10**9))

    def pick(self, seq: Sequence[object]) -> object:
        return seq[int(self.r() * len(seq))]

    def random_value(self, kind: str) -> object:
        r, prof, pick = self.r, self.prof, self.pick
        if prof.p_fresh and r() < prof.p_fresh:
            n = next(self.fresh) + int(r() * 7)
            return n if kind in _NUMBER_KINDS else f"{_word(self.rng)}{n}"
        if kind in _NUMBER_KINDS:
            if self.numbers and r() < 0.15:  # the queries' numbers, wherever they were compared
                return pick(self.numbers)
            value: int | float = pick(self.small_ints)  # type: ignore[assignment]
            if prof.p_negative and r() < prof.p_negative:
                value = -abs(value) - 1
            if kind != "integer" and r() < 0.3:
                value += 0.5
            return value
        if kind == "blob" and r() < 0.5:
            return pick(self.small_ints)
        if self.hints.anywhere and r() < 0.15:
            return pick(self.hints.anywhere)
        return pick(self.vocabulary)

    def hinted(self, name: str) -> object | None:
        exact, near = self.hints.exact.get(name), self.hints.by_column.get(name)
        if exact and self.r() < 0.5:
            return self.pick(exact)
        return self.pick(near) if near else None

    def cell(self, name: str, kind: str) -> object:
        r, prof, hints = self.r, self.prof, self.hints
        if prof.p_null and r() < prof.p_null:
            return None
        if prof.p_mixed and r() < prof.p_mixed:  # a word in a numeric column, a number in a text one
            return self.pick(self.vocabulary) if kind in _NUMBER_KINDS else str(self.pick(self.small_ints))
        if name in hints.joined and r() < 0.8:
            return self.pick(self.join_pool)
        if name in hints.by_column and r() < prof.p_hint:
            return self.hinted(name)
        return self.random_value(kind)

    def template_cell(self, name: str, kind: str) -> object:
        if name in self.hints.joined:
            return self.pick(self.join_pool)
        meets = self.hints.meets.get(name)
        if meets and self.r() < 0.8:
            return self.pick(meets)
        value = self.hinted(name)
        return self.random_value(kind) if value is None else value


def fill(schema: Schema, hints: Hints, rng: random.Random, prof: Profile) -> Rows:
    """Rows for every table of one database (see the module docstring)."""
    cells = _Cells(hints, rng, prof)
    return {
        table.name: _table_rows(
            cells, table.name, [(c.name.lower(), affinity(c.decl_type)) for c in table.columns]
        )
        for table in schema.tables
    }


def _table_rows(cells: _Cells, table: str, columns: list[Column]) -> list[Row]:
    """One table's rows: drawn (around templates where the profile has them), near misses and duplicates
    added, then a NULL copy per column, then unique keys."""
    prof, r = cells.prof, cells.r
    if prof.p_empty_table and r() < prof.p_empty_table:
        return []
    n = 1 + int(r() * prof.max_rows)
    if cells.hints.min_rows and (prof.templates or prof.p_fresh):
        n = max(n, cells.hints.min_rows)
    rows = _drawn_rows(cells, columns, n)
    rows += _near_misses_and_duplicates(cells, columns, rows)
    keys = _key_columns(table, [name for name, _ in columns]) if prof.unique_keys else []
    if prof.twins:
        rows.insert(1, _twin(cells, columns, rows[0], keys))
    nulled = _add_null_copies(cells, columns, rows)
    return _with_keys(cells, columns, rows, keys, nulled) if keys else rows


def _drawn_rows(cells: _Cells, columns: list[Column], n: int) -> list[Row]:
    if not cells.prof.templates:
        return [tuple(cells.cell(*c) for c in columns) for _ in range(n)]
    # Rows that meet the queries' conditions, and copies that miss by one or two columns.
    r = cells.r
    templates = [tuple(cells.template_cell(*c) for c in columns) for _ in range(cells.prof.templates)]
    rows = list(templates)
    for _ in range(n):
        row = list(cells.pick(templates))  # type: ignore[call-overload]
        for _ in range(1 if r() < 0.7 else 2):
            j = int(r() * len(columns))
            row[j] = cells.cell(*columns[j])
        rows.append(tuple(row))
    return rows


def _twin(cells: _Cells, columns: list[Column], row: Row, keys: list[int]) -> Row:
    """`row` with its joined columns moved to another join id (its keys get their own in `_with_keys`,
    and it sits second, so it joins as the first row does)."""
    pool = cells.join_pool

    def moved(value: object) -> object:
        return pool[(pool.index(value) + 1) % len(pool)] if value in pool else cells.pick(pool)

    joined = cells.hints.joined
    return tuple(moved(v) if columns[j][0] in joined and j not in keys else v for j, v in enumerate(row))


def _near_misses_and_duplicates(cells: _Cells, columns: list[Column], rows: list[Row]) -> list[Row]:
    prof, r = cells.prof, cells.r
    extra: list[Row] = []
    for row in rows:
        if prof.p_near_miss and r() < prof.p_near_miss:
            j = int(r() * len(columns))
            extra.append((*row[:j], cells.cell(*columns[j]), *row[j + 1 :]))
        if prof.p_duplicate and r() < prof.p_duplicate:
            extra.append(row)
    return extra


def _add_null_copies(cells: _Cells, columns: list[Column], rows: list[Row]) -> dict[int, int]:
    """Where the profile wants them, a copy of a row per column with that column NULL (from a template row,
    one meeting the queries' conditions, where there are templates), appended; returns row index -> the
    column its NULL copy emptied."""
    nulled: dict[int, int] = {}
    if not (cells.prof.null_copies and rows):
        return nulled
    prof = cells.prof
    sources = rows[: prof.templates + prof.twins] if prof.templates else list(rows)
    for j in range(len(columns)):
        # A source that has a value there: a copy of a row already NULL in column j adds no NULL to it.
        valued = [row for row in sources if row[j] is not None] or [row for row in rows if row[j] is not None]
        if valued:
            nulled[len(rows)] = j
            row = valued[int(cells.r() * len(valued))]
            rows.append((*row[:j], None, *row[j + 1 :]))
    return nulled


def _with_keys(
    cells: _Cells, columns: list[Column], rows: list[Row], keys: list[int], nulled: dict[int, int]
) -> list[Row]:
    """Key columns get unique ids: join ids first (so joins find partners), then ids nothing else uses; a
    key's own NULL copy keeps its NULL."""
    ids = [*cells.join_pool, *(v for v in range(100, 100 + len(rows)))]
    for j in keys:
        rows = [
            (*row[:j], None if nulled.get(k) == j else ids[k], *row[j + 1 :]) for k, row in enumerate(rows)
        ]
    if nulled:
        # The NULL copies got ids of their own, so they join nothing: a NULL also goes into a row that
        # joins, in a column the queries name (COUNT(name) in a GROUP BY over a join counts it there).
        others = [j for j in range(len(columns)) if j not in keys]
        named = [j for j in others if columns[j][0] in cells.hints.mentioned] or others
        joined = min(len(cells.join_pool), len(rows) - len(nulled))
        if named and joined:
            k, j = int(cells.r() * joined), named[int(cells.r() * len(named))]
            rows[k] = (*rows[k][:j], None, *rows[k][j + 1 :])
    return rows


def identifiers_of(schema: Schema) -> frozenset[str]:
    return frozenset(n.lower() for t in schema.tables for n in (t.name, *(c.name for c in t.columns)))


def tables_of(schema: Schema) -> Mapping[str, Sequence[str]]:
    """Lower-case table name -> its lower-case column names."""
    return {t.name.lower(): [c.name.lower() for c in t.columns] for t in schema.tables}


def siblings_of(schema: Schema) -> Mapping[str, Sequence[str]]:
    """Lower-case column name -> the other columns of the first table that has it."""
    result: dict[str, list[str]] = {}
    for table in schema.tables:
        names = [c.name.lower() for c in table.columns]
        for name in names:
            others = [n for n in names if n != name]
            if others:
                result.setdefault(name, others)
    return result


def perturb(rows: Rows, schema: Schema, hints: Hints, rng: random.Random) -> Rows:
    """A near copy of a database: one to three small edits (a cell set to a value found elsewhere in
    the database, a hint, a neighbour or NULL; a row copied with an edit, or dropped). A local step
    from a database where the gold returns rows toward one that tells a stubborn mutant apart:
    copying a value across tables makes join partners, a neighbour moves a row across a boundary."""
    r = rng.random
    out = {name: list(table_rows) for name, table_rows in rows.items()}
    tables = [t for t in schema.tables if t.columns]
    seen = [v for table_rows in rows.values() for row in table_rows for v in row if v is not None]
    for _ in range(1 + int(r() * 3)):
        table = tables[int(r() * len(tables))]
        table_rows = out.setdefault(table.name, [])
        if not table_rows:
            table_rows.append(tuple(None for _ in table.columns))
        i, j = int(r() * len(table_rows)), int(r() * len(table.columns))
        name, current = table.columns[j].name.lower(), table_rows[i][j]
        choice = r()
        if choice < 0.35 and seen:
            value: object = seen[int(r() * len(seen))]
        elif choice < 0.6 and name in hints.by_column:
            pool = hints.by_column[name]
            value = pool[int(r() * len(pool))]
        elif choice < 0.75 and isinstance(current, int | float):
            value = current + (1 if r() < 0.5 else -1)
        elif choice < 0.85:
            value = None
        else:
            value = current
        edited = (*table_rows[i][:j], value, *table_rows[i][j + 1 :])
        action = r()
        if action < 0.7:
            table_rows[i] = edited
        elif action < 0.9:
            table_rows.append(edited)
        elif len(table_rows) > 1:
            del table_rows[i]
    return out
