"""Near-miss variants of a query (mutants) and provably equivalent rewrites of it.

Mutants are the wrong answers a model tends to give: a comparison operator changed or negated, a
literal off by one, a condition dropped, added or joined by OR instead of AND, LIMIT added or removed,
DISTINCT added or removed, ORDER BY direction flipped, an aggregate or column swapped, a GROUP BY key
swapped for another column of its table, COUNT(*) vs COUNT(col), JOIN vs LEFT JOIN. The semantic matcher distils its databases to tell the gold from its
mutants (the test-suite idea of Zhong, Yu and Klein 2020); the benchmark measures how many it tells
apart. A mutant may happen to be equivalent to its query (`LIMIT 1` on a one-row aggregate): generating
one is fine, counting it as a miss of the matcher is not (see `dev/bench_semantic.py`).

Rewrites change only the spelling, never the meaning, under SQLite's rules: keyword case, `!=`/`<>`,
`=`/`==`, `a = 1` as `1 = a` (affinity and the comparison are symmetric), redundant parentheses, AND
terms in another order, result columns aliased, whitespace and a trailing `;`, a double-quoted string
as single-quoted, COUNT(*) as COUNT(1). A matcher must match every one of them.

Both work on tokens (`sqltext`); a variant that does not execute is the caller's to discard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from harness.tasks.sql.sqltext import (
    COMPARISONS,
    KEYWORDS,
    MIRRORED,
    Token,
    comparisons,
    conditions,
    depths,
    render,
    tokenize,
)

DEFAULT_MAX_MUTANTS = 48
_OPS = ("=", "!=", "<", "<=", ">", ">=")
_SAME_OP = {"==": "=", "<>": "!="}
_AGG_SWAP = {"max": "min", "min": "max", "sum": "avg", "avg": "sum"}


@dataclass(frozen=True)
class Variant:
    kind: str
    sql: str


Tokens = list[Token]


@lru_cache(maxsize=256)
def _tok(text: str) -> Token:
    return tokenize(text)[0]


@lru_cache(maxsize=64)
def _words(text: str) -> tuple[Token, ...]:
    return tuple(tokenize(text))


def _splice(tokens: Sequence[Token], start: int, end: int, new: Iterable[Token]) -> Tokens:
    return [*tokens[:start], *new, *tokens[end:]]


def _is_string_literal(token: Token, identifiers: frozenset[str]) -> bool:
    return token.kind == "string" or (token.kind == "dquoted" and token.text[1:-1].lower() not in identifiers)


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _shift_number(text: str, delta: int) -> str | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if "." in text or "e" in text.lower():
        return repr(value + delta)
    return _number_text(value + delta)


def _end_of_statement(tokens: Sequence[Token]) -> int:
    return len(tokens) - 1 if tokens and tokens[-1].text == ";" else len(tokens)


def _clause_end(tokens: Sequence[Token], start: int, stops: frozenset[str]) -> int:
    """First index at or after `start`, at the depth of `start`, holding a stop word, `)` or `;`."""
    level = depths(tokens)
    d = level[start] if start < len(tokens) else 0
    for i in range(start, len(tokens)):
        if level[i] < d or (level[i] == d and (tokens[i].text == ";" or tokens[i].low in stops)):
            return i
    return len(tokens)


# --- mutants ---------------------------------------------------------------------------------------


def _op_mutants(tokens: Tokens) -> Iterable[tuple[str, Tokens]]:
    for i, t in enumerate(tokens):
        if t.kind == "op" and t.text in COMPARISONS:
            current = _SAME_OP.get(t.text, t.text)
            for alt in _OPS:
                if alt != current:
                    yield "operator", _splice(tokens, i, i + 1, [_tok(alt)])


def _literal_mutants(tokens: Tokens, identifiers: frozenset[str]) -> Iterable[tuple[str, Tokens]]:
    for i, t in enumerate(tokens):
        if t.kind == "number" and not (i and tokens[i - 1].text == "."):
            for delta in (1, -1):
                shifted = _shift_number(t.text, delta)
                if shifted is not None and not shifted.startswith("-"):
                    yield "literal±1", _splice(tokens, i, i + 1, [Token("number", shifted)])
                elif shifted is not None:  # `5 - 6`: keep it one negative literal
                    yield "literal±1", _splice(tokens, i, i + 1, [_tok("-"), Token("number", shifted[1:])])
        elif _is_string_literal(t, identifiers):
            quote, value = t.text[0], t.text[1:-1]
            shifted = _shift_number(value.strip(), 1) if value.strip() else None
            if shifted is not None:
                for delta in (1, -1):
                    moved = _shift_number(value.strip(), delta)
                    yield "literal±1", _splice(tokens, i, i + 1, [Token(t.kind, f"{quote}{moved}{quote}")])
            else:
                core = value.rstrip("%_")
                edited = f"{core}x{value[len(core) :]}"
                yield "string", _splice(tokens, i, i + 1, [Token(t.kind, f"{quote}{edited}{quote}")])
            if value.strip("%") != value and value.strip("%"):
                yield (
                    "string",
                    _splice(tokens, i, i + 1, [Token(t.kind, f"{quote}{value.strip('%')}{quote}")]),
                )


def _condition_mutants(
    tokens: Tokens, identifiers: frozenset[str], siblings: Mapping[str, Sequence[str]]
) -> Iterable[tuple[str, Tokens]]:
    for cond in conditions(tokens):
        if len(cond.terms) >= 2:
            for k, (start, end) in enumerate(cond.terms):
                # Drop the term with the connector on its left (or, for the first term, on its right).
                cut = (cond.connectors[k - 1], end) if k else (start, cond.connectors[0] + 1)
                yield "drop condition", _splice(tokens, *cut, [])
            for c in cond.connectors:
                flipped = "or" if tokens[c].low == "and" else "and"
                yield "and/or", _splice(tokens, c, c + 1, [_tok(flipped)])
        else:
            yield "drop condition", _splice(tokens, cond.keyword, cond.end, [])
        if tokens[cond.keyword].low != "where":
            continue
        # Added conditions: the model's extra filter, on a column of a table the query names.
        for comp in comparisons(tokens[cond.start : cond.end]):
            left = tokens[cond.start + comp.left[0] : cond.start + comp.left[1]]
            right = tokens[cond.start + comp.right[0] : cond.start + comp.right[1]]
            other = siblings.get(left[-1].low) if left[-1].kind == "word" else None
            if (
                other
                and len(right) <= 2
                and any(_is_string_literal(t, identifiers) or t.kind == "number" for t in right)
            ):
                column = [*left[:-1], Token("word", other[0])]
                extra = [_tok("and"), *column, _tok("="), *right]
                yield "add condition", _splice(tokens, cond.end, cond.end, extra)
            break
        selected = _first_selected_column(tokens)
        if selected is not None:
            extra = [_tok("and"), *selected, _tok("is"), _tok("not"), _tok("null")]
            yield "add condition", _splice(tokens, cond.end, cond.end, extra)


def _first_selected_column(tokens: Tokens) -> Tokens | None:
    for i, t in enumerate(tokens):
        if t.low == "select":
            j = i + 1 + (i + 1 < len(tokens) and tokens[i + 1].low == "distinct")
            if j >= len(tokens) or tokens[j].kind not in ("word", "bracketed") or tokens[j].low in KEYWORDS:
                return None
            if j + 2 < len(tokens) and tokens[j + 1].text == "." and tokens[j + 2].text != "*":
                return tokens[j : j + 3]
            if j + 1 < len(tokens) and (tokens[j + 1].text == "," or tokens[j + 1].low == "from"):
                return tokens[j : j + 1]
            return None
    return None


def _limit_mutants(tokens: Tokens) -> Iterable[tuple[str, Tokens]]:
    level = depths(tokens)
    limits = [i for i, t in enumerate(tokens) if t.low == "limit" and level[i] == 0]
    if limits:
        i = limits[-1]
        yield "limit", _splice(tokens, i, _end_of_statement(tokens), [])
    else:
        end = _end_of_statement(tokens)
        yield "limit", _splice(tokens, end, end, _words("limit 1"))


def _distinct_mutants(tokens: Tokens) -> Iterable[tuple[str, Tokens]]:
    level = depths(tokens)
    for i, t in enumerate(tokens):
        if t.low == "select" and level[i] == 0:
            if i + 1 < len(tokens) and tokens[i + 1].low == "distinct":
                yield "distinct", _splice(tokens, i + 1, i + 2, [])
            else:
                yield "distinct", _splice(tokens, i + 1, i + 1, [_tok("distinct")])
            break
    for i, t in enumerate(tokens[:-2]):
        if t.low == "count" and tokens[i + 1].text == "(":
            if tokens[i + 2].low == "distinct":
                yield "distinct", _splice(tokens, i + 2, i + 3, [])
            elif tokens[i + 2].text != "*":
                yield "distinct", _splice(tokens, i + 2, i + 2, [_tok("distinct")])


def _order_mutants(tokens: Tokens) -> Iterable[tuple[str, Tokens]]:
    level = depths(tokens)
    for i, t in enumerate(tokens[:-1]):
        if t.low != "order" or tokens[i + 1].low != "by" or level[i] != 0:
            continue
        end = _clause_end(tokens, i + 2, frozenset({"limit"}))
        yield "drop order by", _splice(tokens, i, end, [])
        # Each sort term: flip its direction.
        term_ends = [j for j in range(i + 2, end) if tokens[j].text == "," and level[j] == 0] + [end]
        for term_end in term_ends:
            last = tokens[term_end - 1]
            if last.low == "desc":
                yield "order direction", _splice(tokens, term_end - 1, term_end, [_tok("asc")])
            elif last.low == "asc":
                yield "order direction", _splice(tokens, term_end - 1, term_end, [_tok("desc")])
            else:
                yield "order direction", _splice(tokens, term_end, term_end, [_tok("desc")])


def _negation_mutants(tokens: Tokens) -> Iterable[tuple[str, Tokens]]:
    for i, t in enumerate(tokens):
        nxt = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if t.low in ("like", "glob", "between") or (t.low == "in" and nxt == "("):
            if i and tokens[i - 1].low == "not":
                yield "negation", _splice(tokens, i - 1, i, [])
            else:
                yield "negation", _splice(tokens, i, i, [_tok("not")])
        elif t.low == "exists" and not (i and tokens[i - 1].low == "not"):
            yield "negation", _splice(tokens, i, i, [_tok("not")])
        elif t.low == "is":
            if nxt.lower() == "not":
                yield "negation", _splice(tokens, i + 1, i + 2, [])
            else:
                yield "negation", _splice(tokens, i + 1, i + 1, [_tok("not")])


def _aggregate_mutants(
    tokens: Tokens, siblings: Mapping[str, Sequence[str]], tables: Mapping[str, Sequence[str]]
) -> Iterable[tuple[str, Tokens]]:
    for i, t in enumerate(tokens[:-1]):
        if tokens[i + 1].text != "(":
            continue
        if t.low in _AGG_SWAP:
            yield "aggregate", _splice(tokens, i, i + 1, [Token("word", _AGG_SWAP[t.low])])
        elif t.low == "count" and i + 3 < len(tokens):
            if tokens[i + 2].text == "*":
                column = _countable_column(tokens, siblings)
                columns = [column] if column is not None else []
                # Columns of the tables the query names, none of them compared: COUNT(any of them)
                # is a different answer wherever a NULL sits in it.
                compared = {tokens[c.left[1] - 1].low for c in comparisons(tokens)} | {
                    tokens[c.right[1] - 1].low for c in comparisons(tokens)
                }
                named = [tk.low for tk in tokens if tk.kind == "word" and tk.low in tables]
                for name in dict.fromkeys(c for table in named for c in tables[table]):
                    if len(columns) >= 3:
                        break
                    if name not in compared and all(name != c.low for c in columns) and name.isidentifier():
                        columns.append(Token("word", name))
                for col in columns:
                    yield "count(*)/count(col)", _splice(tokens, i + 2, i + 3, [col])
            elif tokens[i + 3].text == ")" and tokens[i + 2].kind in ("word", "dquoted", "bracketed"):
                yield "count(*)/count(col)", _splice(tokens, i + 2, i + 3, [_tok("*")])


def _countable_column(tokens: Tokens, siblings: Mapping[str, Sequence[str]]) -> Token | None:
    """A column in scope that the WHERE does not already compare (COUNT of one that it does is
    COUNT(*) again): a sibling of a compared column, or a compared column as a last resort."""
    compared = [tokens[c.left[1] - 1] for c in comparisons(tokens) if tokens[c.left[1] - 1].kind == "word"]
    named = {t.low for t in compared}
    for column in compared:
        others = [o for o in siblings.get(column.low, ()) if o not in named]
        if others:
            return Token("word", others[0])
    return compared[0] if compared else None


def _column_mutants(tokens: Tokens, siblings: Mapping[str, Sequence[str]]) -> Iterable[tuple[str, Tokens]]:
    seen: set[str] = set()
    for i, t in enumerate(tokens):
        if t.kind != "word" or t.low in seen or t.low not in siblings or (i and tokens[i - 1].low == "as"):
            continue
        if i + 1 < len(tokens) and tokens[i + 1].text in ("(", "."):
            continue  # a function or a table qualifier
        seen.add(t.low)
        yield "column", _splice(tokens, i, i + 1, [Token("word", siblings[t.low][0])])
        if len(seen) >= 3:
            return


def _group_key_mutants(tokens: Tokens, siblings: Mapping[str, Sequence[str]]) -> Iterable[tuple[str, Tokens]]:
    """GROUP BY another column of the key's table (`GROUP BY id` as `GROUP BY name`: equal until two
    rows share a name), the query's own columns first (issue #38: 3.9% of such swaps matched)."""
    named = {t.low for t in tokens if t.kind == "word"}
    for i, t in enumerate(tokens[:-2]):
        if t.low != "group" or tokens[i + 1].low != "by":
            continue
        k = i + 4 if i + 4 < len(tokens) and tokens[i + 3].text == "." else i + 2
        others = siblings.get(tokens[k].low, ()) if tokens[k].kind == "word" else ()
        for other in sorted(others, key=lambda o: o not in named)[:2]:
            yield "group by column", _splice(tokens, k, k + 1, [Token("word", other)])


def _setop_and_join_mutants(tokens: Tokens) -> Iterable[tuple[str, Tokens]]:
    for i, t in enumerate(tokens):
        nxt = tokens[i + 1].low if i + 1 < len(tokens) else ""
        if t.low == "union":
            yield (
                "set operation",
                (
                    _splice(tokens, i + 1, i + 2, [])
                    if nxt == "all"
                    else _splice(tokens, i + 1, i + 1, [_tok("all")])
                ),
            )
        elif t.low in ("intersect", "except"):
            yield (
                "set operation",
                _splice(tokens, i, i + 1, [_tok("except" if t.low == "intersect" else "intersect")]),
            )
        elif t.low == "join" and not (i and tokens[i - 1].low in ("left", "outer", "cross", "natural")):
            start = i - 1 if i and tokens[i - 1].low == "inner" else i
            yield "left join", _splice(tokens, start, i + 1, _words("left join"))
        elif t.low == "group" and nxt == "by":
            end = _clause_end(
                tokens, i + 2, frozenset({"having", "order", "limit", "union", "intersect", "except"})
            )
            yield "drop group by", _splice(tokens, i, end, [])


def _null_and_fraction_mutants(tokens: Tokens) -> Iterable[tuple[str, Tokens]]:
    """Mistakes that only NULLs, fractions or rows past a LIMIT show: `OR col IS NULL` added to a
    WHERE, AVG(x) as SUM(x) / COUNT(*), a whole-number literal plus 0.5, OFFSET 1 added to a LIMIT.
    They make the distillation keep databases with a NULL in a row the rest lets through, a
    fraction beside each literal and more rows than the LIMIT (issue #27)."""
    level = depths(tokens)
    for cond in conditions(tokens):
        if tokens[cond.keyword].low != "where":
            continue
        for comp in comparisons(tokens[cond.start : cond.end])[:2]:
            left = tokens[cond.start + comp.left[0] : cond.start + comp.left[1]]
            if all(t.kind in ("word", "dquoted", "bracketed") or t.text == "." for t in left):
                extra = [_tok("or"), *left, _tok("is"), _tok("null")]
                yield "or is null", _splice(tokens, cond.end, cond.end, extra)
    for i, t in enumerate(tokens[:-2]):
        if t.low == "avg" and tokens[i + 1].text == "(" and tokens[i + 2].low != "distinct":
            close = next(
                (j for j in range(i + 2, len(tokens)) if level[j] == level[i] and tokens[j].text == ")"), None
            )
            if close is not None:
                new = [_tok("sum"), *tokens[i + 1 : close + 1], _tok("/"), *_words("count(*)")]
                yield "avg/sum", _splice(tokens, i, close + 1, new)
    clause = ""
    for i, t in enumerate(tokens):
        if t.kind == "word" and t.low in (
            "select",
            "where",
            "having",
            "on",
            "limit",
            "offset",
            "order",
            "group",
        ):
            clause = t.low
        if t.kind != "number" or clause in ("limit", "offset") or (i and tokens[i - 1].text == "."):
            continue
        if "." in t.text or "e" in t.text.lower() or _compares_count(tokens, i):
            continue  # a fraction already has its half steps; a count is whole, so `> 5.5` is `> 5`
        yield "literal±0.5", _splice(tokens, i, i + 1, [Token("number", f"{t.text}.5")])
    limits = [i for i, t in enumerate(tokens) if t.low == "limit" and level[i] == 0]
    if limits and not any(t.low == "offset" or t.text == "," for t in tokens[limits[-1] :]):
        end = _end_of_statement(tokens)
        yield "offset", _splice(tokens, end, end, _words("offset 1"))


def _compares_count(tokens: Tokens, i: int) -> bool:
    """tokens[i] is the right side of `COUNT(...) op`."""
    if i < 2 or tokens[i - 1].text not in COMPARISONS or tokens[i - 2].text != ")":
        return False
    j = i - 2
    while j > 0 and tokens[j].text != "(":
        j -= 1
    return j > 0 and tokens[j - 1].low == "count"


def _round_robin(groups: Sequence[Sequence[Variant]], limit: int) -> list[Variant]:
    """Up to `limit` variants, taking one of each kind in turn so that every kind is represented."""
    chosen: list[Variant] = []
    depth = 0
    while len(chosen) < limit and any(depth < len(g) for g in groups):
        for g in groups:
            if depth < len(g) and len(chosen) < limit:
                chosen.append(g[depth])
        depth += 1
    return chosen


def mutants(
    sql: str,
    identifiers: frozenset[str] = frozenset(),
    siblings: Mapping[str, Sequence[str]] | None = None,
    *,
    limit: int = DEFAULT_MAX_MUTANTS,
    tables: Mapping[str, Sequence[str]] | None = None,
) -> list[Variant]:
    """Distinct near-miss variants of `sql`, different in text from it, at most `limit`, every kind
    represented. `identifiers`: lower-case table and column names (a double-quoted word naming one is
    not a string literal); `siblings`: lower-case column name -> other columns of its table; `tables`:
    lower-case table name -> its columns."""
    tokens = tokenize(sql.strip())
    original = render(tokens).lower()
    generators: list[Iterable[tuple[str, Tokens]]] = [
        _op_mutants(tokens),
        _literal_mutants(tokens, identifiers),
        _condition_mutants(tokens, identifiers, siblings or {}),
        _limit_mutants(tokens),
        _distinct_mutants(tokens),
        _order_mutants(tokens),
        _negation_mutants(tokens),
        _aggregate_mutants(tokens, siblings or {}, tables or {}),
        _column_mutants(tokens, siblings or {}),
        _setop_and_join_mutants(tokens),
        _null_and_fraction_mutants(tokens),
        _group_key_mutants(tokens, siblings or {}),
    ]
    by_kind: dict[str, list[Variant]] = {}
    seen = {original}
    for generator in generators:
        for kind, new in generator:
            text = render(new)
            if text.lower() not in seen:
                seen.add(text.lower())
                by_kind.setdefault(kind, []).append(Variant(kind, text))
    return _round_robin(list(by_kind.values()), limit)


# --- equivalent rewrites ---------------------------------------------------------------------------

Rewrite = Callable[[Tokens, frozenset[str]], Tokens | None]


def _keyword_case(tokens: Tokens, _ids: frozenset[str]) -> Tokens | None:
    return [Token(t.kind, t.text.swapcase()) if t.kind == "word" and t.low in KEYWORDS else t for t in tokens]


def _operator_spelling(tokens: Tokens, _ids: frozenset[str]) -> Tokens | None:
    spelling = {"!=": "<>", "<>": "!=", "=": "==", "==": "="}
    if not any(t.kind == "op" and t.text in spelling for t in tokens):
        return None
    return [Token("op", spelling[t.text]) if t.kind == "op" and t.text in spelling else t for t in tokens]


def _swap_operands(tokens: Tokens, _ids: frozenset[str]) -> Tokens | None:
    found = comparisons(tokens)
    if not found:
        return None
    out = list(tokens)
    for comp in reversed(found):  # from the right, so earlier spans keep their indices
        left, right = tokens[comp.left[0] : comp.left[1]], tokens[comp.right[0] : comp.right[1]]
        out[comp.left[0] : comp.right[1]] = [*right, Token("op", MIRRORED[tokens[comp.op].text]), *left]
    return out


def _parenthesise(tokens: Tokens, _ids: frozenset[str]) -> Tokens | None:
    """Each term of a condition in parentheses, and the whole condition: both redundant. Only
    insertions, at original positions, so nested conditions (a WHERE in a subquery) compose."""
    found = [c for c in conditions(tokens) if c.is_simple]
    if not found:
        return None
    opens, closes = [0] * (len(tokens) + 1), [0] * (len(tokens) + 1)
    for cond in found:
        opens[cond.start] += 1
        closes[cond.end] += 1
        for start, end in cond.terms:
            opens[start] += 1
            closes[end] += 1
    out: Tokens = []
    for i in range(len(tokens) + 1):
        out += [_tok(")")] * closes[i] + [_tok("(")] * opens[i]
        if i < len(tokens):
            out.append(tokens[i])
    return out


def _reorder_and(tokens: Tokens, _ids: frozenset[str]) -> Tokens | None:
    """The terms of a pure-AND condition in reverse order. Only the innermost such conditions are
    reordered when they nest, so every edit keeps the other spans' positions."""
    found = [
        c
        for c in conditions(tokens)
        if c.is_simple and len(c.terms) >= 2 and all(tokens[k].low == "and" for k in c.connectors)
    ]
    disjoint = [c for c in found if not any(o is not c and c.start <= o.start < c.end for o in found)]
    if not disjoint:
        return None
    out = list(tokens)
    for cond in disjoint:  # reversing terms keeps the condition's length, so indices stay valid
        terms = [tokens[s:e] for s, e in reversed(cond.terms)]
        joined: Tokens = []
        for k, term in enumerate(terms):
            joined += ([_tok("and")] if k else []) + term
        out[cond.start : cond.end] = joined
    return out


def _alias_columns(tokens: Tokens, _ids: frozenset[str]) -> Tokens | None:
    level = depths(tokens)
    compound = any(level[i] == 0 and t.low in ("union", "intersect", "except") for i, t in enumerate(tokens))
    if compound or not tokens or tokens[0].low != "select":
        return None
    start = 2 if len(tokens) > 1 and tokens[1].low == "distinct" else 1
    end = next((i for i in range(start, len(tokens)) if level[i] == 0 and tokens[i].low == "from"), None)
    if end is None:
        return None
    items, item_start = [], start
    for i in range(start, end + 1):
        if i == end or (tokens[i].text == "," and level[i] == 0):
            items.append((item_start, i))
            item_start = i + 1
    out = list(tokens)
    for k, (s, e) in reversed(list(enumerate(items))):
        item = tokens[s:e]
        if not item or item[-1].text == "*" or any(t.low == "as" for t in item) or _has_bare_alias(item):
            continue
        out[e:e] = [_tok("as"), Token("word", f"zz_alias_{k}")]
    return out if out != tokens else None


def _has_bare_alias(item: Tokens) -> bool:
    """`count(*) c`, `name n`: an alias without AS (the last token names, the one before ends a value)."""
    if len(item) < 2 or item[-1].kind not in ("word", "dquoted", "bracketed") or item[-1].low in KEYWORDS:
        return False
    return item[-2].kind != "op" and item[-2].text not in (".", "(", ",")


def _quote_style(tokens: Tokens, ids: frozenset[str]) -> Tokens | None:
    changed = False
    out = []
    for t in tokens:
        if t.kind == "dquoted" and t.text[1:-1].lower() not in ids:
            value = t.text[1:-1].replace('""', '"').replace("'", "''")
            out.append(Token("string", f"'{value}'"))
            changed = True
        else:
            out.append(t)
    return out if changed else None


def _count_one(tokens: Tokens, _ids: frozenset[str]) -> Tokens | None:
    out = list(tokens)
    changed = False
    for i in range(len(out) - 3):
        if (
            out[i].low == "count"
            and out[i + 1].text == "("
            and out[i + 2].text == "*"
            and out[i + 3].text == ")"
        ):
            out[i + 2] = Token("number", "1")
            changed = True
    return out if changed else None


_REWRITES: dict[str, Rewrite] = {
    "keyword case": _keyword_case,
    "operator spelling": _operator_spelling,
    "swap operands": _swap_operands,
    "parentheses": _parenthesise,
    "reorder AND": _reorder_and,
    "alias columns": _alias_columns,
    "quote style": _quote_style,
    "count(1)": _count_one,
}


def rewrites(sql: str, identifiers: frozenset[str] = frozenset()) -> list[Variant]:
    """Provably equivalent spellings of `sql` (see the module docstring): each rewrite alone, one with
    all of them applied in turn, and one with other whitespace and a trailing `;`."""
    tokens = tokenize(sql.strip().rstrip(";"))
    found: list[Variant] = []
    combined = tokens
    for kind, rewrite in _REWRITES.items():
        new = rewrite(tokens, identifiers)
        if new is not None:
            found.append(Variant(kind, render(new)))
        again = rewrite(combined, identifiers)
        combined = again if again is not None else combined
    found.append(Variant("all of them", render(combined)))
    found.append(Variant("whitespace", "\n  ".join(t.text for t in tokens) + " ;"))
    return found


# --- mutants that are equivalent by a rule ---------------------------------------------------------

_AGGREGATES = frozenset({"count", "sum", "avg", "min", "max", "total", "group_concat"})
_NULL_REJECTING = frozenset({*COMPARISONS, "like", "glob", "in", "between", "not"})


def _top_level(tokens: Tokens, word: str) -> list[int]:
    level = depths(tokens)
    return [i for i, t in enumerate(tokens) if level[i] == 0 and t.low == word and t.kind == "word"]


def _is_one_row(tokens: Tokens) -> bool:
    """An aggregate query without GROUP BY: exactly one row (at most one with HAVING)."""
    level = depths(tokens)
    if any(t.low in ("union", "intersect", "except", "over") for t in tokens) or _top_level(tokens, "group"):
        return False
    froms = _top_level(tokens, "from")
    end = froms[0] if froms else len(tokens)
    return any(
        level[i] == 0 and tokens[i].low in _AGGREGATES and i + 1 < end and tokens[i + 1].text == "("
        for i in range(end)
    )


def _without_row_shape(tokens: Tokens) -> Tokens | None:
    """`tokens` less its top-level DISTINCT, ORDER BY and a LIMIT of at least 1: the parts that cannot
    change a result of at most one row. None when a LIMIT could (0, an expression, an OFFSET)."""
    out = [t for t in tokens if t.text != ";"]
    if len(out) > 1 and out[0].low == "select" and out[1].low == "distinct":
        out = [out[0], *out[2:]]
    limits = _top_level(out, "limit")
    if limits:
        tail = out[limits[-1] + 1 :]
        if len(tail) != 1 or tail[0].kind != "number" or float(tail[0].text) < 1:
            return None
        out = out[: limits[-1]]
    orders = _top_level(out, "order")
    if orders:
        out = out[: orders[0]]
    return out


def _null_rejected(tokens: Tokens, column: Tokens, condition_end: int | None = None) -> bool:
    """Some AND term of a simple condition compares `column` (so a NULL there already fails it).
    `condition_end`: the condition that ends there; otherwise the top-level WHERE."""
    wanted = [t.low for t in column]
    level = depths(tokens)
    for cond in conditions(tokens):
        if tokens[cond.keyword].low != "where" or not cond.is_simple:
            continue
        if (cond.end != condition_end) if condition_end is not None else level[cond.keyword] != 0:
            continue
        if any(tokens[k].low != "and" for k in cond.connectors):
            return False
        for start, end in cond.terms:
            term = [t.low for t in tokens[start:end]]
            if (
                term[: len(wanted)] == wanted
                and len(term) > len(wanted)
                and term[len(wanted)] in _NULL_REJECTING
            ):
                return True
        return False
    return False


@lru_cache(maxsize=256)
def _gold_facts(gold: str) -> tuple[Tokens, bool, list[str] | None]:
    tokens = tokenize(gold.strip().rstrip(";"))
    one_row = _is_one_row(tokens)
    shape = _without_row_shape(tokens) if one_row else None
    return tokens, one_row, None if shape is None else [t.low for t in shape]


# Kinds of mutant that some rule below can prove equivalent; the others are never tried.
RULE_KINDS = frozenset(
    {
        "limit",
        "distinct",
        "order direction",
        "drop order by",
        "literal±1",
        "add condition",
        "count(*)/count(col)",
        "left join",
    }
)


def equivalence_rule(gold: str, mutant: str) -> str | None:
    """The rule that proves `mutant` equivalent to `gold`, or None when none of them applies:
    - "one-row aggregate": an aggregate query without GROUP BY returns one row, so DISTINCT, ORDER BY
      and LIMIT n >= 1 change nothing;
    - "groups are distinct": DISTINCT on a query whose GROUP BY columns are all selected;
    - "column already non-NULL": `AND col IS NOT NULL`, or COUNT(col) for COUNT(*), where the same
      WHERE already compares col (NULL fails that comparison)."""
    g, one_row, g_shape = _gold_facts(gold)
    m = tokenize(mutant.strip().rstrip(";"))
    if one_row and g_shape is not None:
        m_shape = _without_row_shape(m)
        if m_shape is not None and g_shape == [t.low for t in m_shape]:
            return "one-row aggregate"
    a = 0
    while a < min(len(g), len(m)) and g[a].low == m[a].low:
        a += 1
    b = 0
    while b < min(len(g), len(m)) - a and g[-1 - b].low == m[-1 - b].low:
        b += 1
    g_seg, m_seg = g[a : len(g) - b], m[a : len(m) - b]
    low_g, low_m = [t.low for t in g_seg], [t.low for t in m_seg]
    if {tuple(low_g), tuple(low_m)} == {(), ("distinct",)} and a >= 1 and g[a - 1].low == "select":
        if a == 1 and _groups_selected(g):
            return "groups are distinct"
        if _is_distinct_set_operation(g):
            return "set operation rows are distinct"
    join = a + len(m_seg)
    if (
        low_m == ["left"]
        and low_g in ([], ["inner"])
        and join < len(m)
        and m[join].low == "join"
        and _outer_rows_rejected(m, join)
    ):
        return "outer rows rejected"
    is_not_null = not low_g and low_m[:1] == ["and"] and low_m[-3:] == ["is", "not", "null"]
    if is_not_null and _null_rejected(g, m_seg[1:-3], condition_end=a):
        return "column already non-NULL"
    if (
        a >= 2
        and g[a - 2].low == "count"
        and g[a - 1].text == "("
        and not any(t.low == "select" for t in g[1:])
    ):
        star, column = (g_seg, m_seg) if low_g == ["*"] else (m_seg, g_seg)
        if [t.text for t in star] == ["*"] and column and _null_rejected(g, column):
            return "column already non-NULL"
    return None


def _groups_selected(tokens: Tokens) -> bool:
    level = depths(tokens)
    groups, froms = _top_level(tokens, "group"), _top_level(tokens, "from")
    if not groups or not froms or any(t.low in ("union", "intersect", "except") for t in tokens):
        return False
    end = _clause_end(tokens, groups[0] + 2, frozenset({"having", "order", "limit"}))
    items = _split_items(tokens, groups[0] + 2, end, level)
    start = 2 if tokens[1].low == "distinct" else 1
    selected = {tuple(t.low for t in item) for item in _split_items(tokens, start, froms[0], level)}
    return all(tuple(t.low for t in item) in selected for item in items)


def _split_items(tokens: Tokens, start: int, end: int, level: Sequence[int]) -> list[Tokens]:
    items, item_start = [], start
    for i in range(start, end + 1):
        if i == end or (tokens[i].text == "," and level[i] == level[start]):
            items.append(tokens[item_start:i])
            item_start = i + 1
    return items


def _is_distinct_set_operation(tokens: Tokens) -> bool:
    """UNION, INTERSECT and EXCEPT (not UNION ALL) return distinct rows whatever their arms do."""
    ops = [i for w in ("union", "intersect", "except") for i in _top_level(tokens, w)]
    return bool(ops) and not any(i + 1 < len(tokens) and tokens[i + 1].low == "all" for i in ops)


def _outer_rows_rejected(tokens: Tokens, join: int) -> bool:
    """The LEFT JOIN at `join` keeps unmatched rows with NULLs in the joined table's columns; a
    comparison on one of those columns in the same SELECT's WHERE (pure AND), or in a later inner
    JOIN's ON, drops them again: then LEFT JOIN is JOIN."""
    level = depths(tokens)
    if level[join] != 0 or join + 1 >= len(tokens):
        return False
    k = join + 2
    alias = tokens[join + 1].low
    if k < len(tokens) and tokens[k].low == "as" and k + 1 < len(tokens):
        alias = tokens[k + 1].low
    elif k < len(tokens) and tokens[k].kind == "word" and tokens[k].low not in KEYWORDS:
        alias = tokens[k].low
    bounds = [i for w in ("union", "intersect", "except") for i in _top_level(tokens, w)]
    start = max([i for i in bounds if i < join], default=0)
    end = min([i for i in bounds if i > join], default=len(tokens))
    for cond in conditions(tokens):
        keyword = tokens[cond.keyword].low
        if not (start <= cond.keyword < end) or level[cond.keyword] != 0 or not cond.is_simple:
            continue
        if keyword == "on" and (cond.keyword < join or _join_before(tokens, cond.keyword) in ("left", None)):
            continue
        if keyword == "having" or any(tokens[c].low != "and" for c in cond.connectors):
            continue
        for comp in comparisons(tokens):
            if cond.start <= comp.op < cond.end:
                for s, e in (comp.left, comp.right):
                    if e - s == 3 and tokens[s].low == alias and tokens[s + 1].text == ".":
                        return True
    return False


def _join_before(tokens: Tokens, on: int) -> str | None:
    """The kind of the JOIN an ON belongs to: "left", "inner" (plain JOIN), or None."""
    for i in range(on - 1, -1, -1):
        if tokens[i].low == "join":
            return "left" if i and tokens[i - 1].low in ("left", "outer") else "inner"
    return None
