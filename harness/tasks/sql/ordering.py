"""What a sorted gold really fixes: the order of rows with different sort keys, not of ties.

`... GROUP BY city ORDER BY COUNT(*) DESC LIMIT 1` names one of the tied cities, chosen by the query plan;
an equally right answer with another plan may name another. So the gold is run once more with its sort
keys as extra columns (the "keyed" query, no LIMIT), and its answer becomes blocks of rows with equal keys:
an answer must give each block's rows, in any order within the block; where LIMIT or OFFSET cuts through a
block, any of its rows will do. Only for a plain sorted SELECT (else `keyed_query` returns None and the
plain result is compared as a list); on a database where the gold's own result does not fit its blocks,
the plain list is used too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from harness.tasks.sql.sqltext import Token, depths, render, tokenize

Row = tuple[object, ...]


@dataclass(frozen=True)
class KeyedQuery:
    sql: str
    n_keys: int
    limit: int | None
    offset: int


@dataclass(frozen=True)
class Blocks:
    """A sorted answer: per block of equal sort keys, the rows inside the LIMIT window, and all the
    block's rows when the window cuts through it (else None)."""

    blocks: tuple[tuple[tuple[Row, ...], tuple[Row, ...] | None], ...]
    n_rows: int

    def fits(self, rows: tuple[Row, ...] | list[Row]) -> bool:
        if len(rows) != self.n_rows:
            return False
        at = 0
        for window, whole in self.blocks:
            segment = Counter(rows[at : at + len(window)])
            at += len(window)
            if whole is None:
                if segment != Counter(window):
                    return False
            elif segment - Counter(whole):  # some row is not one of the tied rows
                return False
        return True


def _split(tokens: list[Token], level: list[int], start: int, end: int) -> list[list[Token]]:
    items, item_start = [], start
    for i in range(start, end + 1):
        if i == end or (tokens[i].text == "," and level[i] == 0):
            items.append(tokens[item_start:i])
            item_start = i + 1
    return items


def _literal_int(tokens: list[Token]) -> int | None:
    if len(tokens) == 1 and tokens[0].kind == "number" and tokens[0].text.isdigit():
        return int(tokens[0].text)
    return None


def _item_expression(item: list[Token]) -> list[Token]:
    """A select item less its alias (`expr AS a`, `expr a`)."""
    if len(item) > 2 and item[-2].low == "as":
        return item[:-2]
    if (
        len(item) > 1
        and item[-1].kind in ("word", "dquoted", "bracketed")
        and item[-2].kind != "op"
        and item[-2].text not in (".", "(", ",")
    ):
        return item[:-1]
    return item


def _aliases(items: list[list[Token]]) -> dict[str, list[Token]]:
    found = {}
    for item in items:
        expression = _item_expression(item)
        if len(expression) < len(item):
            found[item[-1].low.strip('"`[]')] = expression
    return found


@lru_cache(maxsize=1024)
def keyed_query(gold: str) -> KeyedQuery | None:
    """The gold with its sort keys added as columns and its LIMIT dropped (see the module docstring),
    or None when the gold is not a plain sorted SELECT."""
    tokens = tokenize(gold.strip().rstrip(";"))
    level = depths(tokens)
    top = [(i, t.low) for i, t in enumerate(tokens) if level[i] == 0 and t.kind == "word"]
    words = [w for _, w in top]
    if not tokens or tokens[0].low != "select" or any(w in words for w in ("union", "intersect", "except")):
        return None
    if len(tokens) > 1 and tokens[1].low in ("distinct", "all"):
        return None
    froms = [i for i, w in top if w == "from"]
    orders = [i for i, w in top if w == "order" and i + 1 < len(tokens) and tokens[i + 1].low == "by"]
    if not froms or not orders:
        return None
    limits = [i for i, w in top if w == "limit" and i > orders[0]]
    order_end = limits[0] if limits else len(tokens)
    items = _split(tokens, level, 1, froms[0])
    aliases = _aliases(items)
    keys: list[list[Token]] = []
    for term in _split(tokens, level, orders[0] + 2, order_end):
        while term and term[-1].low in ("asc", "desc", "first", "last", "nulls"):
            term = term[:-1]
        if not term or any(t.low == "collate" for t in term):
            return None
        position = _literal_int(term)
        if position is not None:
            if not 1 <= position <= len(items) or any(t.text == "*" for t in items[position - 1]):
                return None
            term = _item_expression(items[position - 1])
        elif len(term) == 1 and term[0].low.strip('"`[]') in aliases:
            term = aliases[term[0].low.strip('"`[]')]
        keys.append(term)
    limit, offset = None, 0
    if limits:
        clause = tokens[limits[0] + 1 :]
        parts = _split(clause, [0] * len(clause), 0, len(clause))
        if len(parts) == 2:  # LIMIT offset, count
            offset_value, limit = _literal_int(parts[0]), _literal_int(parts[1])
        else:
            offset_at = [i for i, t in enumerate(clause) if t.low == "offset"]
            limit = _literal_int(clause[: offset_at[0]] if offset_at else clause)
            offset_value = _literal_int(clause[offset_at[0] + 1 :]) if offset_at else 0
        if limit is None or offset_value is None:
            return None
        offset = offset_value
    key_tokens: list[Token] = []
    for key in keys:
        key_tokens += [Token("other", ","), *key]
    sql = render([*tokens[: froms[0]], *key_tokens, *tokens[froms[0] : order_end]])
    return KeyedQuery(sql, len(keys), limit, offset)


def blocks_of(keyed_rows: tuple[Row, ...], query: KeyedQuery) -> Blocks:
    """The keyed query's canonical rows (answer columns, then key columns) as `Blocks`."""
    n = query.n_keys
    end = len(keyed_rows) if query.limit is None else min(len(keyed_rows), query.offset + query.limit)
    start = min(query.offset, end)
    blocks: list[tuple[tuple[Row, ...], tuple[Row, ...] | None]] = []
    i = 0
    while i < len(keyed_rows):
        j = i
        while j < len(keyed_rows) and keyed_rows[j][-n:] == keyed_rows[i][-n:]:
            j += 1
        lo, hi = max(i, start), min(j, end)
        if lo < hi:
            whole = tuple(r[:-n] for r in keyed_rows[i:j])
            window = tuple(r[:-n] for r in keyed_rows[lo:hi])
            blocks.append((window, whole if (lo, hi) != (i, j) else None))
        i = j
    return Blocks(tuple(blocks), end - start)
