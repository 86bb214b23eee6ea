"""SQL text as tokens, and the few clause shapes that mutants, rewrites and data hints need.

Not a parser: it knows tokens, parenthesis depth, where a WHERE/HAVING/ON condition starts and ends,
its AND/OR terms (the AND of BETWEEN is not a connector), and simple comparisons `column op literal`.
Anything it does not recognise is left alone, so a rewrite or mutant is produced only where the
shape is certain.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

_TOKEN_RE = re.compile(
    r"""
    (?P<string>'(?:[^']|'')*')
  | (?P<dquoted>"(?:[^"]|"")*")
  | (?P<bracketed>\[[^\]]*\]|`[^`]*`)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<word>(?:[^\W\d]|[^\x00-\x7f])(?:[\w$]|[^\x00-\x7f])*)
  | (?P<op><=|>=|<>|!=|==|\|\||<<|>>|[-+*/%<>=&|~])
  | (?P<other>\S)
    """,
    re.VERBOSE,
)

COMPARISONS = ("=", "==", "!=", "<>", "<", "<=", ">", ">=")
# `a < b` is `b > a`: the operator seen from the other side.
MIRRORED = {"=": "=", "==": "==", "!=": "!=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# Keywords that end a condition at its own depth.
_CLAUSE_END = frozenset(
    {
        "group",
        "order",
        "limit",
        "having",
        "union",
        "intersect",
        "except",
        "window",
        "join",
        "inner",
        "left",
        "right",
        "full",
        "cross",
        "natural",
        "where",
        "on",
        "using",
        "offset",
    }
)
# Tokens after which an operand starts a fresh boolean term (so `x` in `a + x = 1` is not one).
_TERM_START = frozenset({"where", "and", "or", "on", "having", "not", "when", "(", "then", "else"})
KEYWORDS = frozenset(
    {
        "select",
        "from",
        "where",
        "and",
        "or",
        "not",
        "in",
        "like",
        "glob",
        "between",
        "is",
        "null",
        "group",
        "by",
        "order",
        "asc",
        "desc",
        "limit",
        "offset",
        "having",
        "distinct",
        "as",
        "join",
        "inner",
        "left",
        "right",
        "outer",
        "cross",
        "on",
        "union",
        "all",
        "intersect",
        "except",
        "count",
        "sum",
        "avg",
        "min",
        "max",
        "case",
        "when",
        "then",
        "else",
        "end",
        "exists",
        "using",
        "natural",
    }
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # string, dquoted, bracketed, number, word, op, other
    text: str
    low: str = field(init=False, compare=False, repr=False)  # lower-cased text, read very often

    def __post_init__(self) -> None:
        object.__setattr__(self, "low", self.text.lower())


@lru_cache(maxsize=4096)
def _tokens(sql: str) -> tuple[Token, ...]:
    return tuple(Token(m.lastgroup or "other", m.group()) for m in _TOKEN_RE.finditer(sql))


def tokenize(sql: str) -> list[Token]:
    """The tokens of `sql` (cached: the same gold is tokenized for every mutant and database)."""
    return list(_tokens(sql))


def render(tokens: Sequence[Token]) -> str:
    """Tokens back to text, one space between tokens except around `.` and inside parentheses."""
    out: list[str] = []
    previous = ""
    for token in tokens:
        if out and previous not in ("(", ".") and token.text not in (")", ",", ".", ";"):
            out.append(" ")
        out.append(token.text)
        previous = token.text
    return "".join(out)


def depths(tokens: Sequence[Token]) -> list[int]:
    """Parenthesis depth of every token (a `(` has the depth outside it)."""
    level, result = 0, []
    for token in tokens:
        if token.text == ")":
            level -= 1
        result.append(level)
        if token.text == "(":
            level += 1
    return result


@dataclass(frozen=True)
class Condition:
    """A WHERE, HAVING or ON condition: tokens[start:end], its terms as (start, end) spans and the
    connector token index before each term after the first."""

    keyword: int
    start: int
    end: int
    terms: tuple[tuple[int, int], ...]
    connectors: tuple[int, ...]
    is_simple: bool  # no CASE at its own depth, so every AND/OR found is a real connector


def conditions(tokens: Sequence[Token]) -> list[Condition]:
    """Every WHERE/HAVING/ON condition at any depth, split into its top-level AND/OR terms."""
    level = depths(tokens)
    found = []
    for k, token in enumerate(tokens):
        if token.low not in ("where", "having", "on") or token.kind != "word":
            continue
        d, i = level[k], k + 1
        terms, connectors, term_start, in_between, is_simple = [], [], i, False, True
        while i < len(tokens):
            t = tokens[i]
            # A `)` at depth d closes a parenthesis opened inside the condition; one below d ends it.
            if level[i] < d or (
                level[i] == d and (t.text == ";" or (t.low in _CLAUSE_END and t.kind == "word"))
            ):
                break
            if level[i] == d and t.kind == "word":
                if t.low == "case":
                    is_simple = False
                elif t.low == "between":
                    in_between = True
                elif t.low in ("and", "or"):
                    if t.low == "and" and in_between:
                        in_between = False
                    else:
                        terms.append((term_start, i))
                        connectors.append(i)
                        term_start = i + 1
            i += 1
        if i > k + 1:
            terms.append((term_start, i))
            found.append(Condition(k, k + 1, i, tuple(terms), tuple(connectors), is_simple))
    return found


def is_operand(token: Token) -> bool:
    """A one-token value or column: a literal, a name, or the last part of `t.col` (checked by caller)."""
    return token.kind in ("string", "dquoted", "bracketed", "number", "word") and token.low not in KEYWORDS


def operand_span(tokens: Sequence[Token], i: int, direction: int) -> tuple[int, int] | None:
    """The simple operand ending (direction -1) or starting (+1) next to index i: `col`, `t.col`,
    a literal, or a negative number. None when the neighbour is anything else."""
    if direction < 0:
        j = i - 1
        if j < 0 or not is_operand(tokens[j]):
            return None
        if j >= 2 and tokens[j - 1].text == "." and tokens[j - 2].kind in ("word", "dquoted", "bracketed"):
            return (j - 2, j + 1)
        return (j, j + 1)
    j = i + 1
    if j < len(tokens) and tokens[j].text == "-" and j + 1 < len(tokens) and tokens[j + 1].kind == "number":
        return (j, j + 2)
    if j >= len(tokens) or not is_operand(tokens[j]):
        return None
    if j + 2 < len(tokens) and tokens[j + 1].text == "." and is_operand(tokens[j + 2]):
        return (j, j + 3)
    return (j, j + 1)


@dataclass(frozen=True)
class Comparison:
    """`left op right` where both sides are simple operands and the comparison is a whole boolean
    term (nothing binds to either side), so its operands may be swapped or its operator replaced."""

    left: tuple[int, int]
    op: int
    right: tuple[int, int]


_TERM_END = frozenset({"and", "or", ")", ";", "then", "else", "end", "when"}) | _CLAUSE_END


def comparisons(tokens: Sequence[Token]) -> list[Comparison]:
    found = []
    for i, token in enumerate(tokens):
        if token.kind != "op" or token.text not in COMPARISONS:
            continue
        left, right = operand_span(tokens, i, -1), operand_span(tokens, i, +1)
        if left is None or right is None:
            continue
        before = tokens[left[0] - 1].low if left[0] > 0 else "where"
        after = tokens[right[1]].low if right[1] < len(tokens) else ";"
        if before in _TERM_START and after in _TERM_END:
            found.append(Comparison(left, i, right))
    return found


def top_level_order_by(tokens: Sequence[Token]) -> bool:
    """True when the outermost statement has ORDER BY (a sorted subquery does not order the result)."""
    level = depths(tokens)
    return any(
        level[i] == 0 and t.low == "order" and i + 1 < len(tokens) and tokens[i + 1].low == "by"
        for i, t in enumerate(tokens)
    )
